"""The plugin table is the one place a resource policy is added: a plugin registered here, and
nowhere else, watches its kind, has its resource written, compared and removed, and its result kept
while what it reads holds (the worked example of CONTRIBUTING.md, a trimmed `gpudeviceresource`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pytest

from colocate.cluster.store import ClusterStore
from policies.apis.constants import DEVICE_KIND, GPU_CORE
from policies.apis.slo_config.colocation import ColocationStrategy
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.manager.cluster import ManagerView, manager_kinds
from scheduler_plugins.manager.noderesource.framework import (
    NODE_LABELS,
    PluginTable,
    PreparedNode,
    Reading,
    SetupOptions,
    Sources,
    UndeclaredRead,
    calculate,
    result_of,
    watched,
)
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE, default_plugins
from scheduler_plugins.manager.noderesource.update import resource_differences
from scheduler_plugins.manager.reconciler import Reconciler, StatusWrite
from scheduler_plugins.manager.writer import StoreWriter
from tests.scheduler_plugins.manager.helpers import cluster
from tests.support.builders import NOW

DEVICE: Final = watched(DEVICE_KIND)


class GPUDeviceResource:
    """koordinator.sh/gpu-core on the node: the sum over its healthy GPUs (its Device object)."""

    name = "GPUDeviceResource"
    reads = (DEVICE,)
    resources = (GPU_CORE,)

    def __init__(self) -> None:
        self.calculated = 0

    def setup(self, options: SetupOptions) -> None:
        options.watch(DEVICE_KIND)

    def calculate(self, reading: Reading) -> int | None:
        self.calculated += 1
        device = reading(DEVICE)
        healthy = [d for d in ((device or {}).get("spec") or {}).get("devices") or [] if d.get("health")]
        if not healthy:
            return None  # no Device, or no healthy GPU: the resource is removed
        return sum(int((d.get("resources") or {}).get(GPU_CORE, 0)) for d in healthy)

    def prepare(self, result: object, node: PreparedNode) -> None:
        if result is None:
            node.remove(GPU_CORE)
        else:
            assert isinstance(result, int)
            node.set(GPU_CORE, str(result), result * 1000)

    def needs_sync(self, strategy: ColocationStrategy, old: Mapping[str, int], new: Mapping[str, int]) -> Sequence[str]:
        return resource_differences(self.resources, strategy.resource_diff_threshold, old, new)


def device(*cores: int, healthy: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": DEVICE_KIND,
        "metadata": {"name": "node-1"},
        "spec": {
            "devices": [
                {"type": "gpu", "minor": i, "health": healthy, "resources": {GPU_CORE: str(c)}}
                for i, c in enumerate(cores)
            ]
        },
    }


class Manager:
    """A reconciler with the GPU plugin in its table, over a store and the view the table asks for."""

    def __init__(self) -> None:
        self.gpu = GPUDeviceResource()
        self.table = PluginTable((*default_plugins(), self.gpu))
        self.store = ClusterStore(manager_kinds(self.table.watched_kinds))
        self.view = ManagerView(self.store, self.table.watched_kinds)
        for obj in cluster():
            self.store.put(obj["kind"], obj)
        self.reconciler = Reconciler(fixed_clock(parse_time(NOW) or 0.0), self.table)

    def round(self) -> list[Any]:
        result = self.reconciler.reconcile(self.view.snapshot(), self.view.take_changes().nodes or None)
        writer = StoreWriter(self.store)
        for action in result.actions:
            writer.apply(action)
            if isinstance(action, StatusWrite):
                self.reconciler.written(action.node, self.reconciler.clock())
        return result.actions

    def gpu_core(self) -> str | None:
        node = self.store.get("Node", ("", "node-1")) or {}
        value = node["status"]["allocatable"].get(GPU_CORE)
        assert node["status"]["capacity"].get(GPU_CORE) == value
        return value


def status_writes(actions: list[Any]) -> list[Mapping[str, str | None]]:
    return [a.resources for a in actions if isinstance(a, StatusWrite)]


def test_a_plugin_added_to_the_table_watches_its_kind_and_writes_its_resource() -> None:
    manager = Manager()
    assert manager.table.watched_kinds == (DEVICE_KIND,) and GPU_CORE in manager.table.resources
    manager.store.put(DEVICE_KIND, device(100, 100))
    first = status_writes(manager.round())
    assert first and first[0][GPU_CORE] == "200" and manager.gpu_core() == "200"
    assert "kubernetes.io/batch-cpu" in first[0]  # the in-tree plugins work as before beside it
    assert status_writes(manager.round()) == []  # unchanged: nothing written, and the result was kept
    assert manager.gpu.calculated == 1
    manager.store.put(DEVICE_KIND, device(100, 100, 100))  # moved by 50 % (threshold 10 %): written
    assert status_writes(manager.round())[0][GPU_CORE] == "300" and manager.gpu.calculated == 2
    manager.store.delete(DEVICE_KIND, device())  # the Device went: the resource is removed
    assert status_writes(manager.round())[0][GPU_CORE] is None and manager.gpu_core() is None


def test_a_plugin_reads_only_what_it_declares() -> None:
    class Sneaky(GPUDeviceResource):
        def calculate(self, reading: Reading) -> int | None:
            reading(NODE_LABELS)  # not among its reads: a kept result would miss a label change
            return None

    unread: Any = None  # what the sneaky plugin never gets to: the round's other sources
    sources = Sources(unread, unread, unread, unread, unread, unread, {}, {DEVICE_KIND: None})
    with pytest.raises(UndeclaredRead, match="node labels"):
        calculate(Sneaky(), sources)


def test_the_table_refuses_a_duplicate_name_and_a_read_of_a_missing_plugins_result() -> None:
    with pytest.raises(ValueError, match="unique"):
        PluginTable((*default_plugins(), GPUDeviceResource(), GPUDeviceResource()))

    class Dependent(GPUDeviceResource):
        reads = (DEVICE, result_of("NoSuchPlugin"))

    with pytest.raises(ValueError, match="NoSuchPlugin"):
        PluginTable((*default_plugins(), Dependent()))


def test_the_default_table_runs_koordinators_order() -> None:
    """`plugins_profile.go`: mid, batch, cpunormalization, amplification; batch reads the CPU
    normalization ratio, so it is calculated after it."""
    assert [p.name for p in DEFAULT_TABLE.preparers] == [
        "MidResource",
        "BatchResource",
        "CPUNormalization",
        "ResourceAmplification",
    ]
    assert [p.name for p in DEFAULT_TABLE.status_checks] == ["MidResource", "BatchResource"]
    assert [p.name for p in DEFAULT_TABLE.meta_checks] == ["CPUNormalization", "ResourceAmplification"]
    order = [p.name for p in DEFAULT_TABLE.calculators]
    assert order.index("CPUNormalization") < order.index("BatchResource")
    assert DEFAULT_TABLE.metric_readers == {"MidResource", "BatchResource"}
