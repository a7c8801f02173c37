"""The `colocate` program: the composition root that puts the components' command groups together."""
