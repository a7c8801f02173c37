"""The test kit for plugin authors: builders, a scheduler framework, and the real commands.

Stable, like `colocate.api` (docs/plugins.md): `colocate.testing.builders` makes pods, nodes,
NodeMetrics and the other objects as the API server sends them; `colocate.testing.commands` runs a
plugin through `scheduler simulate`, `scheduler explain`, `koordlet plan`, `descheduler run
--dry-run` and `apply` in-process, from objects a test builds; `colocate.testing.scheduler` gives a
framework (and its handle) over a cluster of objects, with the installed plugins.
"""
