"""The framework (Koordinator's `pkg/koordlet/qosmanager/`): the strategy table, extension plugins,
and the callbacks' coalescing."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest

from policies.apis.field_errors import ConfigError
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.framework import ExtensionRegistry, FeatureSpec, QOSManager, builtin_strategies
from scheduler_plugins.koordlet.states import Callbacks, CallbackTarget, CallbackType, NodeState
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from tests.support.builders import make_node


def test_the_strategy_table_names_each_strategy_once_with_its_gates_and_interval_flag() -> None:
    table = {e.name: (e.koordinator_name, e.gates, e.interval_flag) for e in builtin_strategies()}
    assert table["CPUSuppress"] == ("CPUSuppresss", ("BECPUSuppress",), "cpu-suppress-interval-seconds")
    assert table["MemoryEvict"][1] == ("BEMemoryEvict", "MemoryEvict", "MemoryAllocatableEvict")
    assert list(table) == [
        "CPUSuppress",
        "CPUEvict",
        "MemoryEvict",
        "CgroupReconcile",
        "CPUBurst",
        "BlkIOReconcile",
        "SystemConfig",
        "ResctrlReconcile",
    ]
    assert table["ResctrlReconcile"][1] == ("RdtResctrl",)  # on by default


@pytest.mark.parametrize(
    "gates, enabled",
    [
        ("", {"CPUSuppress", "CPUBurst", "ResctrlReconcile"}),
        (
            "BECPUSuppress=false,CPUEvict=true,CgroupReconcile=true,RdtResctrl=false,BlkIOReconcile=true",
            {"CPUEvict", "CgroupReconcile", "CPUBurst", "BlkIOReconcile"},
        ),
    ],
)
def test_a_strategy_runs_when_its_gate_is_on(gates: str, enabled: set[str]) -> None:
    manager = QOSManager(StrategyOptions(koordlet_gates(gates)))
    assert {s.name for s in manager.enabled()} == enabled


def test_an_interval_of_zero_disables_a_strategy() -> None:
    manager = QOSManager(StrategyOptions(koordlet_gates(""), cpu_suppress_interval=0))
    assert "CPUSuppress" not in {s.name for s in manager.enabled()}


class Plugin:
    def __init__(self, flag: str = "") -> None:
        self.calls: list[str] = []
        self.flag = flag

    def init_flags(self, parser: argparse.ArgumentParser) -> None:
        if self.flag:
            parser.add_argument(self.flag, default="1")
        self.calls.append("init_flags")

    def setup(self, kube_client: Any, metric_cache: Any, states: Any) -> None:
        self.calls.append("setup")

    async def run(self) -> None:
        self.calls.append("run")


def test_extension_plugins_register_once_and_follow_their_gates() -> None:
    registry = ExtensionRegistry()
    on, off = Plugin("--plugin-knob"), Plugin()
    registry.register("On", FeatureSpec(default=True), on)
    registry.register("Off", FeatureSpec(default=False), off)
    with pytest.raises(ValueError, match="already registered"):
        registry.register("On", FeatureSpec(default=True), Plugin())
    parser = argparse.ArgumentParser()
    registry.init_flags(parser)
    assert parser.parse_args([]).plugin_knob == "1"
    assert [name for name, _ in registry.enabled(registry.gates(""))] == ["On"]
    assert [name for name, _ in registry.enabled(registry.gates("On=false,Off=true"))] == ["Off"]
    with pytest.raises(ConfigError, match="--qos-extension-plugins: unrecognized feature gate: Nope"):
        registry.gates("Nope=true")


def _state() -> NodeState:
    return NodeState(make_node("n1"), None, None, ())


async def test_callbacks_coalesce_a_burst_of_signals_into_one_pending_run() -> None:
    callbacks = Callbacks(_state)
    seen: list[tuple[CallbackType, Any, CallbackTarget]] = []
    release = asyncio.Event()

    async def slow(kind: CallbackType, obj: Any, target: CallbackTarget) -> None:
        seen.append((kind, obj, target))
        await release.wait()

    callbacks.register(CallbackType.NODE_METADATA, "slow", "", slow)
    worker = asyncio.create_task(callbacks.worker(CallbackType.NODE_METADATA))
    assert callbacks.send(CallbackType.NODE_METADATA)
    while not seen:  # the worker took the signal and is running
        await asyncio.sleep(0)
    assert callbacks.send(CallbackType.NODE_METADATA)  # one pending
    assert not callbacks.send(CallbackType.NODE_METADATA)  # dropped: a run is already pending
    release.set()
    while (
        callbacks.runs.get(CallbackType.NODE_METADATA, 0) < 2 or not callbacks._slot(CallbackType.NODE_METADATA).empty()
    ):
        await asyncio.sleep(0)
    worker.cancel()
    assert callbacks.runs[CallbackType.NODE_METADATA] == 2
    assert seen[0][1]["metadata"]["name"] == "n1"


async def test_a_missing_object_skips_the_run() -> None:
    callbacks = Callbacks(_state)
    called: list[Any] = []
    callbacks.register(CallbackType.NODE_SLO_SPEC, "x", "", lambda kind, obj, target: called.append(obj))
    await callbacks.run_once(CallbackType.NODE_SLO_SPEC)  # the state has no NodeSLO
    assert not called


def test_registering_twice_or_an_unknown_type_is_an_error() -> None:
    callbacks = Callbacks(_state)
    callbacks.register("AllPods", "x", "", lambda kind, obj, target: None)
    with pytest.raises(ValueError, match="already registered"):
        callbacks.register("AllPods", "x", "", lambda kind, obj, target: None)
    with pytest.raises(ValueError, match="unknown callback type"):
        callbacks.register("Nope", "y", "", lambda kind, obj, target: None)
