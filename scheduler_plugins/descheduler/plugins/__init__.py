"""The in-tree descheduler plugins; `scheduler_plugins.descheduler.registry.in_tree_registry` lists them."""
