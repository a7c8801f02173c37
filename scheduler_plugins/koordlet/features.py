"""koordlet's feature gates (`pkg/features/koordlet_features.go`): their names and defaults.

The flag is parsed and the gates are read by `policies.apis.feature_gates`, the one parser every
component's `--feature-gates` uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from policies.apis.feature_gates import FeatureGates, parse_feature_gates

BE_CPU_SUPPRESS: Final = "BECPUSuppress"
BE_CPU_EVICT: Final = "BECPUEvict"
CPU_EVICT: Final = "CPUEvict"
CPU_ALLOCATABLE_EVICT: Final = "CPUAllocatableEvict"
BE_MEMORY_EVICT: Final = "BEMemoryEvict"
MEMORY_EVICT: Final = "MemoryEvict"
MEMORY_ALLOCATABLE_EVICT: Final = "MemoryAllocatableEvict"
CGROUP_RECONCILE: Final = "CgroupReconcile"
BLKIO_RECONCILE: Final = "BlkIOReconcile"
RDT_RESCTRL: Final = "RdtResctrl"
CPU_BURST: Final = "CPUBurst"
SYSTEM_CONFIG: Final = "SystemConfig"
BE_CPU_MANAGER: Final = "BECPUManager"

#: every koordlet gate with its default (Beta gates on, Alpha off), as `pkg/features/koordlet_features.go`
DEFAULT_GATES: Final[Mapping[str, bool]] = MappingProxyType(
    {
        BE_CPU_SUPPRESS: True,
        BE_CPU_EVICT: False,
        CPU_EVICT: False,
        CPU_ALLOCATABLE_EVICT: False,
        BE_MEMORY_EVICT: False,
        MEMORY_EVICT: False,
        MEMORY_ALLOCATABLE_EVICT: False,
        CGROUP_RECONCILE: False,
        BLKIO_RECONCILE: False,
        RDT_RESCTRL: True,
        CPU_BURST: True,
        SYSTEM_CONFIG: False,
        BE_CPU_MANAGER: False,
        "NodeTopologyReport": True,
        "AuditEvents": False,
        "Accelerators": False,
        "RDMADevices": False,
        "CPICollector": False,
        "PSICollector": False,
        "ColdPageCollector": False,
        "ResctrlCollector": False,
    }
)


def koordlet_gates(text: str | None = "") -> FeatureGates:
    """The koordlet's gates with `--feature-gates` `text` applied (ConfigError naming the flag)."""
    return parse_feature_gates(text, DEFAULT_GATES)
