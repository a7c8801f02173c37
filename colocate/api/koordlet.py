"""koordlet QoS strategies (`colocate.koordlet.strategies`).

A strategy's `round(inp)` reads one `RoundInput` and returns a `StrategyResult`: the cgroup writes
and evictions as values, which the runner applies (`koordlet run`) or prints (`koordlet plan`). An
installed strategy is enabled by its name in `--qos-extension-plugins Name=true` and runs after the
built-in ones; one that raises is skipped for the round and counted
(`koordlet_strategy_failures_total{strategy}`).
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler_plugins.koordlet.cgroups import resources
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.framework import StrategyEntry
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import Eviction, RoundInput, Strategy, StrategyOptions, StrategyResult


def strategy_entry(name: str, factory: Callable[[StrategyOptions], Strategy]) -> StrategyEntry:
    """The entry an installed strategy's entry point names: its gate is its name."""
    return StrategyEntry(name, name, (name,), "", factory)


__all__ = [
    "CgroupWrite",
    "Eviction",
    "Level",
    "PodView",
    "RoundInput",
    "Strategy",
    "StrategyEntry",
    "StrategyOptions",
    "StrategyResult",
    "resources",
    "strategy_entry",
]
