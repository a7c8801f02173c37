"""The batch resource plugin (`noderesource/plugins/batchresource/plugin.go`): calculates
batch-cpu and batch-memory for the node (`batch.node_batch`) and, with a NodeResourceTopology, per
NUMA zone (`numa.zone_batch`); writes the zones into the NRT before the node is updated (PreUpdate),
the node's amounts into its status (`prepare.prepare_batch`), and asks for a status write when they
move beyond the diff threshold. Batch cpu is scaled by the CPU normalization ratio when it is above 1,
so it reads that plugin's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, cast

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, RESOURCE_MEMORY
from policies.apis.quantity import Quantity, QuantityError, QuantityFormat
from policies.apis.slo_config.colocation import ColocationStrategy
from scheduler_plugins.manager.noderesource.framework import (
    METRIC,
    NODE_INPUT,
    NRT,
    STRATEGY,
    PreparedNode,
    Read,
    Reading,
    result_of,
)
from scheduler_plugins.manager.noderesource.inputs import Res, multiply_milli, zones_of
from scheduler_plugins.manager.noderesource.plugins.batchresource.batch import node_batch
from scheduler_plugins.manager.noderesource.plugins.batchresource.numa import zone_batch
from scheduler_plugins.manager.noderesource.plugins.batchresource.prepare import BATCH_RESOURCES, prepare_batch
from scheduler_plugins.manager.noderesource.plugins.cpunormalization.plugin import NAME as CPU_NORMALIZATION
from scheduler_plugins.manager.noderesource.prepare import cpu_text, memory_text
from scheduler_plugins.manager.noderesource.update import resource_differences

NAME: Final = "BatchResource"
NORMALIZATION_RATIO: Final = result_of(CPU_NORMALIZATION)


class BatchResult(NamedTuple):
    """The node's batch amounts and what writing them needs: the node's memory format, the CPU
    normalization ratio, and the NRT zones' texts (empty without an NRT). A tuple rather than a
    frozen dataclass: one is made per node and round, and compiled a frozen dataclass costs several
    times as much to make (see `plan.NodePlan`)."""

    batch: Res
    memory_format: QuantityFormat
    normalization_ratio: str | None
    zones: Mapping[str, Mapping[str, str]]


def _zone_formats(nrt: Mapping[str, Any] | None) -> dict[str, QuantityFormat]:
    formats: dict[str, QuantityFormat] = {}
    for zone in (nrt or {}).get("zones") or []:
        for info in zone.get("resources") or []:
            if info.get("name") == RESOURCE_MEMORY:
                try:
                    formats[str(zone.get("name") or "")] = Quantity.parse(info.get("allocatable", "0")).format
                except QuantityError:
                    pass
    return formats


def _zone_cpu_text(milli_cores: int, ratio: str | None) -> str:
    try:
        factor = float(ratio) if ratio is not None else -1.0
    except ValueError:
        factor = -1.0
    if factor <= 1.0:
        return cpu_text(milli_cores)
    scaled = multiply_milli(milli_cores * 1000, factor)  # milli of the milli-core count, not rounded
    return cpu_text(scaled // 1000) if scaled % 1000 == 0 else Quantity(scaled * 10**6).canonical()


def zone_texts(
    zones: Mapping[str, Res], formats: Mapping[str, QuantityFormat], ratio: str | None
) -> dict[str, dict[str, str]]:
    return {
        name: {
            BATCH_CPU: _zone_cpu_text(value[0], ratio),
            BATCH_MEMORY: memory_text(value[1], formats.get(name, QuantityFormat.BINARY_SI)),
        }
        for name, value in zones.items()
    }


class BatchResource:
    name: Final = NAME
    reads: Final[tuple[Read[Any], ...]] = (STRATEGY, NODE_INPUT, METRIC, NRT, NORMALIZATION_RATIO)
    resources: Final = BATCH_RESOURCES

    def calculate(self, reading: Reading) -> BatchResult:
        strategy, node, metric, nrt = reading(STRATEGY), reading(NODE_INPUT), reading(METRIC), reading(NRT)
        ratio = cast("str | None", reading(NORMALIZATION_RATIO))
        zones: dict[str, dict[str, str]] = {}
        if nrt is not None:
            zones = zone_texts(zone_batch(strategy, node, metric, zones_of(nrt)), _zone_formats(nrt), ratio)
        return BatchResult(node_batch(strategy, node, metric), node.memory_format, ratio, zones)

    def pre_update(self, result: object) -> Mapping[str, Mapping[str, str]]:
        return cast(BatchResult, result).zones if result is not None else {}

    def prepare(self, result: object, node: PreparedNode) -> None:
        if result is None:
            prepare_batch(node, None, QuantityFormat.BINARY_SI, None)
            return
        calculated = cast(BatchResult, result)
        prepare_batch(node, calculated.batch, calculated.memory_format, calculated.normalization_ratio)

    def needs_sync(self, strategy: ColocationStrategy, old: Mapping[str, int], new: Mapping[str, int]) -> Sequence[str]:
        return resource_differences(BATCH_RESOURCES, strategy.resource_diff_threshold, old, new)
