"""The stable surface for plugin authors: one module per surface, and `colocate.testing`.

Import from these modules only (docs/plugins.md lists them); every other module of colocate is
internal and may change in any release. Each entry point group names one kind of object:

* `colocate.scheduler.plugins`   → `colocate.api.scheduler.PluginSpec`
* `colocate.koordlet.strategies` → `colocate.api.koordlet.StrategyEntry` (see `strategy_entry`)
* `colocate.descheduler.plugins` → `colocate.api.descheduler.PluginSpec`
* `colocate.webhook.plugins`     → `colocate.api.webhook.AdmissionPluginSpec`
"""

from colocate.cluster.plugins import GROUPS, IN_TREE

__all__ = ["GROUPS", "IN_TREE"]
