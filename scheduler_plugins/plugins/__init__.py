"""In-tree plugins; `scheduler_plugins.registry.in_tree_registry()` lists them."""
