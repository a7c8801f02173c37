"""Feature gates with Koordinator's defaults (`pkg/features/koordlet_features.go`), and the NodeSLO
parsed with sloconfig's defaults."""

from __future__ import annotations

import pytest

from policies.apis.constants import QoSClass
from policies.apis.field_errors import ConfigError
from scheduler_plugins.koordlet.features import DEFAULT_GATES, koordlet_gates
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from tests.support.builders import make_node_slo


def test_gates_default_as_koordlet_ships_them() -> None:
    gates = koordlet_gates("")
    on = {name for name in DEFAULT_GATES if gates.enabled(name)}
    assert on == {"BECPUSuppress", "RdtResctrl", "CPUBurst", "NodeTopologyReport"}


def test_feature_gates_flag_overrides_the_defaults() -> None:
    gates = koordlet_gates("BECPUSuppress=false, CgroupReconcile=true")
    assert not gates.enabled("BECPUSuppress") and gates.enabled("CgroupReconcile")


@pytest.mark.parametrize(
    "text, message",
    [
        ("Nope=true", "--feature-gates: unrecognized feature gate: Nope"),
        ("CPUBurst", "--feature-gates: missing bool value for CPUBurst"),
        ("CPUBurst=maybe", "invalid value of CPUBurst=maybe"),
    ],
)
def test_a_bad_feature_gate_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        koordlet_gates(text)


def test_an_empty_node_slo_takes_the_documented_defaults() -> None:
    slo = NodeSLO.parse(make_node_slo(threshold={}))
    t = slo.threshold
    assert (
        t.enable,
        t.cpu_suppress_threshold_percent,
        t.cpu_suppress_policy,
        t.memory_evict_threshold_percent,
        t.cpu_evict_be_usage_threshold_percent,
        t.cpu_evict_policy,
    ) == (False, 65, "cpuset", 70, 90, "evictByRealLimit")
    assert slo.resource_qos is None
    assert (
        slo.cpu_burst.policy,
        slo.cpu_burst.cpu_burst_percent,
        slo.cpu_burst.cfs_quota_burst_percent,
        slo.cpu_burst.share_pool_threshold_percent,
    ) == ("none", 1000, 300, 50)


def test_class_defaults_follow_sloconfig() -> None:
    classes = NodeSLO.parse(make_node_slo(resource_qos={"beClass": {"memoryQOS": {"enable": True}}})).resource_qos
    assert classes is not None
    be, ls, system = classes[QoSClass.BE], classes[QoSClass.LS], classes[QoSClass.SYSTEM]
    assert (be.cpu.group_identity, be.memory.wmark_min_adj, be.memory.enable) == (-1, 50, True)
    assert (ls.cpu.group_identity, ls.cpu.core_expeller, ls.memory.wmark_min_adj, ls.memory.enable) == (
        2,
        True,
        -25,
        False,
    )
    assert (system.memory.wmark_ratio, system.memory.wmark_scale_permill) == (0, 50)


@pytest.mark.parametrize(
    "threshold, path",
    [
        ({"cpuSuppressThresholdPercent": "65"}, "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"),
        ({"cpuSuppressPolicy": "quota"}, "spec.resourceUsedThresholdWithBE.cpuSuppressPolicy"),
        ({"enable": "yes"}, "spec.resourceUsedThresholdWithBE.enable"),
    ],
)
def test_a_wrong_field_is_named(threshold: dict[str, object], path: str) -> None:
    with pytest.raises(ConfigError, match=path):
        NodeSLO.parse(make_node_slo(threshold=threshold))
