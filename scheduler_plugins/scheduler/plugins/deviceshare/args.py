"""DeviceShareArgs (Koordinator's `pkg/scheduler/apis/config/types.go`, `v1/defaults.go`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import GPU_MEMORY, GPU_MEMORY_RATIO
from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.scheduler.plugins.nodenumaresource.args import (
    LEAST_ALLOCATED,
    ScoringStrategy,
    parse_scoring_strategy,
)

RDMA: Final = "koordinator.sh/rdma"
FPGA: Final = "koordinator.sh/fpga"
DEFAULT_SCORING: Final = ScoringStrategy(
    LEAST_ALLOCATED, ((GPU_MEMORY_RATIO, 1), (GPU_MEMORY, 1), (RDMA, 1), (FPGA, 1))
)


@dataclass(frozen=True)
class DeviceShareArgs:
    scoring_strategy: ScoringStrategy = DEFAULT_SCORING
    disable_device_numa_topology_alignment: bool = False


def parse_args(raw: Mapping[str, Any] | None, path: str) -> DeviceShareArgs:
    fields = Fields(raw, path)
    if fields.raw.get("gpuShareUnsupportedModels"):
        raise ConfigError(fields.at("gpuShareUnsupportedModels"), "GPU models without sharing are not supported")
    fields.sub("gpuSharedResourceTemplatesConfig")  # NPU templates: a mapping, unused (no NPU support)
    return DeviceShareArgs(
        parse_scoring_strategy(fields.sub("scoringStrategy"), DEFAULT_SCORING),
        fields.bool("disableDeviceNUMATopologyAlignment", False),
    )
