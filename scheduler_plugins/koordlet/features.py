"""koordlet's feature gates (`pkg/features/koordlet_features.go`): names, defaults, `--feature-gates`.

`--feature-gates A=true,B=false` overrides the defaults; an unknown gate or a value that is not a
boolean is a usage error naming it, as component-base's feature gate reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from policies.field_errors import ConfigError

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

#: every koordlet gate with its default (Beta gates on, Alpha off), spec §1
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

_TRUE, _FALSE = ("true", "1", "t"), ("false", "0", "f")


def parse_gate_map(text: str, known: Mapping[str, bool], flag: str) -> dict[str, bool]:
    """`k1=true,k2=false` over `known` gates: the overrides only; unknown names are errors."""
    overrides: dict[str, bool] = {}
    for term in filter(None, (t.strip() for t in text.split(","))):
        name, sep, value = term.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(flag, f"missing bool value for {name}")
        if name not in known:
            raise ConfigError(flag, f"unrecognized feature gate: {name}")
        lowered = value.strip().lower()
        if lowered not in _TRUE + _FALSE:
            raise ConfigError(
                flag, f"invalid value of {name}={value}, err: strconv.ParseBool: parsing {value!r}: invalid syntax"
            )
        overrides[name] = lowered in _TRUE
    return overrides


@dataclass(frozen=True)
class FeatureGates:
    """The gates in effect: the defaults with the `--feature-gates` overrides."""

    values: Mapping[str, bool]

    @classmethod
    def parse(cls, text: str = "") -> FeatureGates:
        return cls(MappingProxyType({**DEFAULT_GATES, **parse_gate_map(text, DEFAULT_GATES, "--feature-gates")}))

    def enabled(self, name: str) -> bool:
        return bool(self.values.get(name, False))

    def any_enabled(self, *names: str) -> bool:
        return any(self.enabled(n) for n in names)
