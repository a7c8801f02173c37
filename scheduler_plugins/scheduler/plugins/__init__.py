"""In-tree plugins; `scheduler_plugins.scheduler.registry.in_tree_registry()` lists them."""
