"""Scheduler plugins (`colocate.scheduler.plugins`): the kube-scheduler framework's extension points.

A plugin implements only the points it uses (one small Protocol each), reports outcomes as
`Status` values, and is listed in a profile of the KubeSchedulerConfiguration like an in-tree one;
its `pluginConfig` args go to its own parser (`PluginSpec.parse_args(raw, path)`, raising
`ConfigError(path, message)`). An exception that escapes it makes its Status `Error` for that pod.
"""

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.scheduler.framework.cycle_state import CycleState, StateData
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    NodeScore,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.registry import ArgsParser, Factory, PluginSpec, no_args
from scheduler_plugins.scheduler.framework.status import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    Status,
    error,
    unresolvable,
    unschedulable,
)
from scheduler_plugins.scheduler.podinfo import PodInfo

__all__ = [
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "SKIP",
    "SUCCESS",
    "ArgsParser",
    "BindPlugin",
    "Code",
    "ConfigError",
    "CycleState",
    "Factory",
    "Fields",
    "FilterPlugin",
    "Handle",
    "NodeInfo",
    "NodeScore",
    "PermitPlugin",
    "PluginSpec",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "ReservePlugin",
    "ScoreExtensions",
    "ScorePlugin",
    "StateData",
    "Status",
    "error",
    "no_args",
    "unresolvable",
    "unschedulable",
]
