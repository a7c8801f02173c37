"""Driving the scheduler in-process: a parsed config, a framework over a cluster of objects, one
plugin's filter or score on one node."""

from __future__ import annotations

from typing import Any

from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.wiring import build_framework
from tests.support.builders import NOW

#: plugins the default profile does not enable: `plugin_of` enables them at score (and pre-score)
SCORE_ONLY = ("NodeResourcesFitPlus", "ScarceResourceAvoidance", "NetworkTraffic")


def make_config(
    plugin_config: dict[str, dict[str, Any]] | None = None, plugins: dict[str, Any] | None = None, **top: Any
) -> Any:
    """A parsed scheduler configuration: one `koord-scheduler` profile with these plugins and args."""
    profile: dict[str, Any] = {"schedulerName": "koord-scheduler"}
    if plugins:
        profile["plugins"] = plugins
    if plugin_config:
        profile["pluginConfig"] = [{"name": n, "args": a} for n, a in plugin_config.items()]
    return parse_config({"profiles": [profile], **top}, in_tree_registry())


def make_framework(objects: list[dict[str, Any]], config: Any = None, now: str = NOW) -> tuple[Any, ClusterState]:
    """A framework over a cluster holding `objects`, its clock stopped at `now`; and the cluster."""
    cluster = ClusterState.from_objects(objects)
    fwk = build_framework(config or make_config(), in_tree_registry(), cluster, fixed_clock(parse_time(now)))
    return fwk, cluster


def plugin_of(
    objects: list[dict[str, Any]], name: str, args: dict[str, Any] | None = None, now: str = NOW
) -> tuple[Any, ClusterState]:
    """The named plugin built inside a framework over `objects`, plus the cluster."""
    plugins = None
    if name in SCORE_ONLY:
        plugins = {"score": {"enabled": [{"name": name}]}}
        if name != "NetworkTraffic":
            plugins["preScore"] = {"enabled": [{"name": name}]}
    config = make_config({name: args} if args is not None else None, plugins)
    fwk, cluster = make_framework(objects, config, now)
    return fwk.plugins[name], cluster


def filter_node(plugin: Any, cluster: ClusterState, pod: dict[str, Any], node: str = "node-1") -> Any:
    state = CycleState()
    return plugin.filter(state, PodInfo(pod), cluster.nodes[node])


def score_node(plugin: Any, cluster: ClusterState, pod: dict[str, Any], node: str = "node-1") -> int:
    state = CycleState()
    info = PodInfo(pod)
    if hasattr(plugin, "pre_score"):
        plugin.pre_score(state, info, [cluster.nodes[node]])
    value, status = plugin.score(state, info, cluster.nodes[node])
    assert status.is_success, status
    return value  # type: ignore[no-any-return]
