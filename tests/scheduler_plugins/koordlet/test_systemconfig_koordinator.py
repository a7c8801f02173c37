"""SystemConfig as Koordinator's `pkg/koordlet/qosmanager/plugins/sysreconcile/system_config.go`,
on fake /proc and /sys trees in the kernel's file formats: `Test_systemConfig_reconcile` transcribed
(its cases by name), plus the sched_features reading of `GetSchedFeatures` and what a node without
the group identity, page cache limit or sched_features files is told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet import node_round
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.host import HostFiles, HostRoots, HostView
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from scheduler_plugins.koordlet.states import KOORDLET_KINDS, NodeState
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.systemconfig import (
    SchedFeaturesError,
    SystemConfig,
    parse_sched_features,
)
from scheduler_plugins.koordlet.usage import Usage
from tests.scheduler_plugins.koordlet.rounds import LAYOUT, round_input
from tests.support.builders import make_node

MEMORY = 512 * 1024**3  # nodeValidMemory
NODE = make_node("n1", capacity={"cpu": "80", "memory": str(MEMORY)}, allocatable={"cpu": "80", "memory": str(MEMORY)})
OPTIONS = StrategyOptions(koordlet_gates("SystemConfig=true"))
MIN_FREE = "sys/vm/min_free_kbytes"
WATERMARK = "sys/vm/watermark_scale_factor"
REAP = "kernel/mm/memcg_reaper/reap_background"
GROUP_IDENTITY = "sys/kernel/sched_group_identity_enabled"
IDLE_SAVER = "sys/kernel/sched_idle_saver_wmark"
PAGE_CACHE = "kernel/mm/pagecache_limit/enabled"
SCHED_FEATURES = "kernel/debug/sched_features"
#: getTestDefaultStrategy: what the files hold before the round (prepareFiles)
DEFAULT = {MIN_FREE: str(MEMORY // 1024 * 100 // 10000), WATERMARK: "150", REAP: "0"}


def host(tmp_path: Path, sched_features: str = "") -> HostRoots:
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    contents = {
        proc / MIN_FREE: DEFAULT[MIN_FREE],
        proc / WATERMARK: DEFAULT[WATERMARK],
        sys / REAP: DEFAULT[REAP],
        proc / GROUP_IDENTITY: "1",
        proc / IDLE_SAVER: "0",
        sys / PAGE_CACHE: "0",
        sys / SCHED_FEATURES: sched_features,
    }
    for path, text in contents.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return HostRoots(proc, sys)


def strategy_input(roots: HostRoots, strategy: dict[str, Any], node: dict[str, Any] = NODE) -> RoundInput:
    """A round whose NodeSLO carries `strategy` as it is: Koordinator's test feeds values that the
    NodeSLO's validation would refuse, to show the strategy's own range checks hold them off."""
    state = NodeState(node, NodeSLO(spec={"systemStrategy": strategy}), None, ())
    return node_round.round_input(state, Usage(), LAYOUT, 0.0, processors=(), host=HostView(roots))


def reconcile(roots: HostRoots, strategy: dict[str, Any], node: dict[str, Any] = NODE) -> StrategyResult:
    result = SystemConfig(OPTIONS).round(strategy_input(roots, strategy, node))
    stats = HostFiles(roots, lambda: 0.0).apply(result.host_writes)
    assert stats.failed == 0, stats.errors
    return result


def read(roots: HostRoots, path: str) -> str:
    return (roots.proc / path if path.startswith("sys/") else roots.sys / path).read_text()


@pytest.mark.parametrize(
    "name,strategy,expect",
    [
        ("testNil", {}, DEFAULT),
        (
            "testInvalid",
            {"minFreeKbytesFactor": -1, "watermarkScaleFactor": -1, "memcgReapBackGround": -1},
            DEFAULT,
        ),
        (
            "testTooSmall",
            {"minFreeKbytesFactor": 0, "watermarkScaleFactor": 5, "memcgReapBackGround": -1},
            DEFAULT,
        ),
        (
            "testValid",
            {"minFreeKbytesFactor": 88, "watermarkScaleFactor": 99, "memcgReapBackGround": 1},
            {MIN_FREE: str(MEMORY // 1024 * 88 // 10000), WATERMARK: "99", REAP: "1"},
        ),
        (
            "testToolarge",
            {"minFreeKbytesFactor": 400, "watermarkScaleFactor": 500, "memcgReapBackGround": 2},
            DEFAULT,
        ),
        (
            "set part of parameters",
            {"minFreeKbytesFactor": 88, "schedIdleSaverWmark": 5000000, "schedFeatures": {"ID_ABSOLUTE_EXPEL": True}},
            {MIN_FREE: str(MEMORY // 1024 * 88 // 10000), IDLE_SAVER: "5000000", SCHED_FEATURES: "ID_ABSOLUTE_EXPEL\n"},
        ),
        (
            "set part of parameters 1",
            {
                "schedGroupIdentityEnabled": 0,
                "schedIdleSaverWmark": 5000000,
                "schedFeatures": {"ID_EXPELLER_SHARE_CORE": False},
            },
            {GROUP_IDENTITY: "0", IDLE_SAVER: "5000000", SCHED_FEATURES: "NO_ID_EXPELLER_SHARE_CORE\n"},
        ),
    ],
)
def test_system_config_reconcile(tmp_path: Path, name: str, strategy: dict[str, Any], expect: dict[str, str]) -> None:
    """Test_systemConfig_reconcile: out-of-range values leave the files as they were."""
    roots = host(tmp_path)
    result = reconcile(roots, strategy)
    assert not result.unavailable
    for path, want in expect.items():
        assert read(roots, path) == want, (name, path)


def test_a_node_without_valid_memory_gets_nothing(tmp_path: Path) -> None:
    """testNodeMemoryInvalid: the whole round is skipped, sched_features too."""
    roots = host(tmp_path)
    zero = make_node("n1", capacity={"cpu": "80", "memory": "0"})
    result = reconcile(roots, {"minFreeKbytesFactor": 88, "schedFeatures": {"X": True}}, zero)
    assert result.host_writes == [] and read(roots, MIN_FREE) == DEFAULT[MIN_FREE]


def test_page_cache_limit_and_group_identity_switches_are_zero_or_one(tmp_path: Path) -> None:
    roots = host(tmp_path)
    reconcile(roots, {"pageCacheLimitEnabled": 1, "schedGroupIdentityEnabled": 2})
    assert read(roots, PAGE_CACHE) == "1"
    assert read(roots, GROUP_IDENTITY) == "1"  # 2 is outside [0, 1]: untouched


def test_sched_features_only_the_features_that_differ_are_written(tmp_path: Path) -> None:
    """SetSchedFeatures skips a feature already in the wanted state; each other one is its own write."""
    roots = host(tmp_path, "GENTLE_FAIR_SLEEPERS START_DEBIT NO_ID_ABSOLUTE_EXPEL ID_EXPELLER_SHARE_CORE\n")
    slo = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}}
    slo["spec"] = {"systemStrategy": {"schedFeatures": {"START_DEBIT": True, "ID_ABSOLUTE_EXPEL": True, "B": False}}}
    result = SystemConfig(OPTIONS).round(round_input(NODE, slo, [], host=HostView(roots)))
    assert [w.value for w in result.host_writes] == ["NO_B\n", "ID_ABSOLUTE_EXPEL\n"]
    assert all(not w.cached for w in result.host_writes)


def test_conflicting_sched_features_are_read_as_an_error() -> None:
    """GetSchedFeatures: a feature listed on and off."""
    assert parse_sched_features("A NO_B C\n") == {"A": True, "B": False, "C": True}
    with pytest.raises(SchedFeaturesError):
        parse_sched_features("A NO_A")


def test_a_kernel_without_the_files_is_told_per_interface(tmp_path: Path) -> None:
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys")
    (roots.proc / "sys/vm").mkdir(parents=True)
    (roots.proc / MIN_FREE).write_text("67584\n")
    strategy = {
        "minFreeKbytesFactor": 100,
        "schedGroupIdentityEnabled": 1,
        "pageCacheLimitEnabled": 1,
        "schedFeatures": {"ID_ABSOLUTE_EXPEL": True},
    }
    result = reconcile(roots, strategy)
    assert set(result.unavailable) == {"procSysKernel", "pageCacheLimit", "schedFeatures"}
    assert [w.path for w in result.host_writes] == [MIN_FREE]


def test_run_exports_each_missing_system_interface_as_a_metric(tmp_path: Path) -> None:
    """`run`: the agent's round over these roots sets koordlet_interface_unavailable per interface."""
    cgroup = tmp_path / "cgroup"
    (cgroup / "cpu/kubepods/besteffort").mkdir(parents=True)
    roots = host(tmp_path)
    (roots.proc / GROUP_IDENTITY).unlink()
    (roots.sys / SCHED_FEATURES).unlink()
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace("Node", [NODE])
    slo = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}}
    slo["spec"] = {
        "systemStrategy": {"schedGroupIdentityEnabled": 1, "pageCacheLimitEnabled": 1, "schedFeatures": {"A": True}}
    }
    store.replace("NodeSLO", [slo])
    settings = AgentSettings("n1", cgroup, proc=roots.proc, sys_root=roots.sys, resctrl_root=tmp_path / "none")
    agent = Agent(settings, OPTIONS, store, processors=())
    agent.apply(agent.compute(["SystemConfig"]))
    value = agent.registry.get_sample_value
    for interface, missing in (("procSysKernel", 1), ("schedFeatures", 1), ("pageCacheLimit", 0)):
        assert value("koordlet_interface_unavailable", {"strategy": "SystemConfig", "interface": interface}) == missing
    assert read(roots, PAGE_CACHE) == "1"


def test_this_machines_kernel_is_read_as_it_is() -> None:
    """The real /proc and /sys (read only, nothing applied): each interface is reported missing
    exactly when this kernel lacks its file."""
    roots = HostRoots(Path("/proc"), Path("/sys"))
    strategy = {
        "watermarkScaleFactor": 150,
        "schedGroupIdentityEnabled": 1,
        "pageCacheLimitEnabled": 1,
        "schedFeatures": {"ID_ABSOLUTE_EXPEL": True},
    }
    slo = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "n1"}}
    slo["spec"] = {"systemStrategy": strategy}
    result = SystemConfig(OPTIONS).round(round_input(NODE, slo, [], host=HostView(roots)))
    expected = {
        "procSysVm": not Path("/proc", WATERMARK).is_file(),
        "procSysKernel": not Path("/proc", GROUP_IDENTITY).is_file(),
        "pageCacheLimit": not Path("/sys", PAGE_CACHE).is_file(),
        "schedFeatures": not Path("/sys", SCHED_FEATURES).is_file(),
    }
    assert {k for k, missing in expected.items() if missing} == set(result.unavailable)
    assert ([w.path for w in result.host_writes if w.path == WATERMARK] == [WATERMARK]) is not expected["procSysVm"]


# --- each key alone: a bad key is skipped, the rest of the NodeSLO applies -------------------------
BAD_KEYS = [
    ("testInvalid", {"minFreeKbytesFactor": -1, "watermarkScaleFactor": -1, "memcgReapBackGround": -1}),
    ("testTooSmall", {"minFreeKbytesFactor": 0, "watermarkScaleFactor": 5, "memcgReapBackGround": -1}),
    ("testToolarge", {"minFreeKbytesFactor": 400, "watermarkScaleFactor": 500, "memcgReapBackGround": 2}),
]


def node_slo_with(system: dict[str, Any]) -> dict[str, Any]:
    """A NodeSLO carrying `system` next to a good key and a threshold of its own."""
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeSLO",
        "metadata": {"name": "n1", "resourceVersion": "7"},
        "spec": {
            "systemStrategy": {**system, "schedIdleSaverWmark": 5000000},
            "resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressThresholdPercent": 60},
        },
    }


@pytest.mark.parametrize("name,system", BAD_KEYS, ids=[c[0] for c in BAD_KEYS])
def test_a_bad_key_is_skipped_and_the_node_slo_applies(tmp_path: Path, name: str, system: dict[str, Any]) -> None:
    """TestSystemConfig's testInvalid, testTooSmall, testToolarge through the agent's own reading
    of the NodeSLO (the slo-controller-config rules): Koordinator skips each out-of-range key and
    applies the rest. Before, one bad key refused the whole NodeSLO — its other keys and its
    other strategies with it."""
    slo = NodeSLO.parse(node_slo_with(system))  # not refused
    assert slo.threshold.cpu_suppress_threshold_percent == 60
    roots = host(tmp_path)
    state = NodeState(NODE, slo, None, ())
    inp = node_round.round_input(state, Usage(), LAYOUT, 0.0, processors=(), host=HostView(roots))
    result = SystemConfig(OPTIONS).round(inp)
    assert HostFiles(roots, lambda: 0.0).apply(result.host_writes).failed == 0
    for path in (MIN_FREE, WATERMARK, REAP):
        assert read(roots, path) == DEFAULT[path], (name, path)  # every bad key left as it was
    assert read(roots, IDLE_SAVER) == "5000000"  # the good key applied
    assert set(result.status["skipped"]) == set(system)


def test_each_skipped_key_is_told_once_with_an_event_and_the_metric(tmp_path: Path) -> None:
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace("Node", [NODE])
    store.replace("NodeSLO", [node_slo_with({"watermarkScaleFactor": 500, "minFreeKbytesFactor": 88})])
    (tmp_path / "cgroup" / "cpu").mkdir(parents=True)
    settings = AgentSettings("n1", tmp_path / "cgroup", proc=tmp_path / "proc", sys_root=tmp_path / "sys")
    agent = Agent(settings, OPTIONS, store, processors=())
    events: list[tuple[str, str]] = []

    class Recorder:
        def record(self, involved: Any, type_: str, reason: str, message: str) -> None:
            events.append((reason, message))

    agent.events.recorder = Recorder()
    for _ in range(3):
        state = agent.state()
    agent.events.flush()
    assert state.node_slo is not None and state.node_slo_error is None
    value = agent.registry.get_sample_value
    assert value("koordlet_node_slo_skipped_keys_total", {"key": "watermarkScaleFactor"}) == 1
    assert value("koordlet_node_slo_rejected_total") == 0
    assert [reason for reason, _ in events] == ["NodeSLOKeySkipped"]
    assert "spec.systemStrategy.watermarkScaleFactor" in events[0][1]
