"""A NodeSLO is checked by the agent with the slo-controller-config rules the webhook applies to the
ConfigMap (`policies/apis/slo_config`): out-of-range values are refused, the last good NodeSLO stays in
force, and the agent says so once per rejected object (log, `koordlet_node_slo_rejected_total`, a
Warning Event on the NodeSLO)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from colocate.cluster.store import ClusterStore
from policies.apis.field_errors import ConfigError
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cpusuppress import CPUSuppress
from scheduler_plugins.koordlet.strategies.memoryevict import MemoryEvict
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import make_node, make_node_slo, make_pod

GI = 1024**3
NODE = make_node("n1", capacity={"cpu": "20", "memory": "100Gi"}, allocatable={"cpu": "20", "memory": "100Gi"})


def slo(**threshold: Any) -> dict[str, Any]:
    return make_node_slo("n1", threshold={"enable": True, **threshold})


@pytest.mark.parametrize(
    "threshold, field",
    [
        ({"cpuSuppressThresholdPercent": -50}, "cpuSuppressThresholdPercent"),
        ({"cpuSuppressThresholdPercent": 101}, "cpuSuppressThresholdPercent"),
        ({"cpuSuppressThresholdPercent": 1e23}, "cpuSuppressThresholdPercent"),
        ({"cpuEvictTimeWindowSeconds": 1e23}, "cpuEvictTimeWindowSeconds"),
        ({"memoryEvictThresholdPercent": 0}, "memoryEvictThresholdPercent"),
        ({"memoryEvictThresholdPercent": 60, "memoryEvictLowerPercent": 65}, "memoryEvictThresholdPercent"),
    ],
)
def test_values_the_configmap_rules_refuse_are_refused_in_a_node_slo(threshold: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        NodeSLO.parse(slo(**threshold))
    assert field in str(refused.value) and "resourceUsedThresholdWithBE" in refused.value.path


def test_koordinators_defaults_pass_a_threshold_alone_included() -> None:
    parsed = NodeSLO.parse(slo(cpuSuppressThresholdPercent=65, memoryEvictThresholdPercent=70))
    assert parsed.threshold.memory_evict_threshold_percent == 70


def test_resource_qos_and_burst_values_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="wmarkMinAdj"):
        NodeSLO.parse(make_node_slo("n1", resource_qos={"beClass": {"memoryQOS": {"wmarkMinAdj": 99}}}))
    with pytest.raises(ConfigError, match="cpuBurstPercent"):
        NodeSLO.parse(make_node_slo("n1", cpu_burst={"cpuBurstPercent": 0}))


def test_host_application_paths_cannot_climb_out() -> None:
    apps = [{"name": "a", "cgroupPath": {"base": "CgroupRoot", "relativePath": "../../etc"}}]
    with pytest.raises(ConfigError, match=r"hostApplications\[0\].cgroupPath.relativePath"):
        NodeSLO.parse(make_node_slo("n1", host_applications=apps))


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((str(involved.get("kind")), reason, message))


def agent_with(tmp_path: Path, registry: CollectorRegistry) -> Agent:
    for sub in ("cpu", "cpuset", "cpuacct", "memory"):
        (tmp_path / "cg" / sub).mkdir(parents=True)
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace_sourced("Node", [("t", NODE)])
    return Agent(AgentSettings("n1", tmp_path / "cg"), StrategyOptions(koordlet_gates("")), store, registry=registry)


def test_the_last_good_node_slo_stays_in_force_and_the_rejection_is_told_once(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    agent = agent_with(tmp_path, registry)
    recorded = Recorded()
    agent.events.recorder = recorded
    good = slo(cpuSuppressThresholdPercent=65, cpuSuppressPolicy="cfsQuota")
    agent.store.replace_sourced(NODE_SLO_KIND, [("t", good)])
    assert agent.state().node_slo is not None

    bad = slo(cpuSuppressThresholdPercent=1e23, cpuSuppressPolicy="cfsQuota")
    bad["metadata"]["resourceVersion"] = "7"
    agent.store.replace_sourced(NODE_SLO_KIND, [("t", bad)])
    states = [agent.state() for _ in range(5)]
    agent.events.flush()

    kept = states[-1]
    assert kept.node_slo is not None and kept.node_slo.threshold.cpu_suppress_threshold_percent == 65
    assert kept.node_slo_error is not None and "keeping the last good NodeSLO" in kept.node_slo_error
    assert registry.get_sample_value("koordlet_node_slo_rejected_total") == 1
    assert [(kind, reason) for kind, reason, _ in recorded.events] == [("NodeSLO", "NodeSLORejected")]
    assert "cpuSuppressThresholdPercent" in recorded.events[0][2]


def test_a_bad_first_node_slo_means_acting_as_without_one(tmp_path: Path) -> None:
    agent = agent_with(tmp_path, CollectorRegistry())
    agent.store.replace_sourced(NODE_SLO_KIND, [("t", slo(memoryEvictThresholdPercent=0))])
    state = agent.state()
    assert state.node_slo is None and "no good NodeSLO yet" in (state.node_slo_error or "")


def test_the_attacks_no_longer_reach_the_strategies() -> None:
    """Before: a quota of 1999999999999999999999980000 written, every BE pod evicted each round."""
    with pytest.raises(ConfigError):
        round_input(NODE, slo(cpuSuppressThresholdPercent=1e23, cpuSuppressPolicy="cfsQuota"), [], usage(2))
    pods = [make_pod(f"b{i}", node="n1", qos="BE", priority=5500) for i in range(5)]
    with pytest.raises(ConfigError):
        round_input(NODE, slo(memoryEvictThresholdPercent=0), pods, usage(node_memory=GI))
    # the same strategies on valid values: nothing absurd
    inp = round_input(NODE, slo(cpuSuppressThresholdPercent=65, cpuSuppressPolicy="cfsQuota"), [], usage(2))
    writes = CPUSuppress(StrategyOptions(koordlet_gates(""))).round(inp).writes
    quotas = [w.value for w in writes if w.resource.name == "cpu.cfs_quota_us"]
    assert quotas and all(isinstance(q, int) and q <= 20 * 100_000 for q in quotas)
    evict = MemoryEvict(StrategyOptions(koordlet_gates("BEMemoryEvict=true")))
    assert not evict.round(
        round_input(NODE, slo(memoryEvictThresholdPercent=70), pods, usage(node_memory=GI))
    ).evictions
