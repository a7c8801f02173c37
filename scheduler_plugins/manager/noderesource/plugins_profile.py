"""The manager's node resource plugins, in order (Koordinator's
`pkg/slo-controller/noderesource/plugins_profile.go`): the one table each extension point runs in.
Adding a resource policy is a folder under `plugins/` and a row here (CONTRIBUTING.md shows one).
"""

from __future__ import annotations

from typing import Final

from scheduler_plugins.manager.noderesource.framework import PluginTable
from scheduler_plugins.manager.noderesource.plugins.batchresource.plugin import BatchResource
from scheduler_plugins.manager.noderesource.plugins.cpunormalization.plugin import CPUNormalization
from scheduler_plugins.manager.noderesource.plugins.midresource.plugin import MidResource
from scheduler_plugins.manager.noderesource.plugins.resourceamplification.plugin import ResourceAmplification


def default_plugins() -> tuple[object, ...]:
    """The in-tree plugins, in Koordinator's order."""
    return (
        MidResource(),
        BatchResource(),
        CPUNormalization(),
        ResourceAmplification(),
    )


DEFAULT_TABLE: Final = PluginTable(default_plugins())
