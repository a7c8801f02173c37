"""The agent runs as root and builds cgroup paths from pod fields anyone with `pods/status` may
write. A UID that is not a UUID, a container ID that is not `<runtime>://<64 hex>` and any path that
resolves outside the cgroup root are refused before a write or a kill, counted in
`koordlet_cgroup_path_refusals_total{reason}` and told in a Warning Event on the pod.

The eviction test runs on this machine's real cgroup v1 `cpu` hierarchy (it skips, saying why,
where that is not writable): a process in a cgroup outside the agent's root survives an eviction of
a pod whose UID walks up to it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite, ResourceExecutor
from scheduler_plugins.koordlet.cgroups.ids import Refusal, RefusedPath, checked_pod_uid, parse_container_id
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import Eviction, StrategyOptions
from scheduler_plugins.koordlet.strategies.cpusuppress import CPUSuppress
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod

HOST_CPU = Path("/sys/fs/cgroup/cpu")
HOSTILE_CONTAINER = "containerd://../../../../../outside/victim"


def fake_v1_root(tmp_path: Path) -> Path:
    root = tmp_path / "cg"
    for sub in ("cpu", "cpuset", "cpuacct", "memory"):
        (root / sub / "kubepods" / "besteffort").mkdir(parents=True)
    return root


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def agent_on(root: Path, registry: CollectorRegistry) -> Agent:
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    return Agent(AgentSettings("n1", root), StrategyOptions(koordlet_gates("")), store, registry=registry)


def refusals(registry: CollectorRegistry, reason: Refusal) -> float:
    return registry.get_sample_value("koordlet_cgroup_path_refusals_total", {"reason": reason}) or 0.0


@pytest.mark.parametrize(
    "raw",
    [
        HOSTILE_CONTAINER,
        "containerd://abc",
        "rkt://" + "a" * 64,
        "containerd://" + "A" * 64,
        "containerd://" + "a" * 63 + "/",
        "docker:/" + "a" * 64,
    ],
)
def test_container_ids_that_are_not_their_runtimes_format_are_refused(raw: str) -> None:
    with pytest.raises(RefusedPath) as refused:
        parse_container_id(raw)
    assert refused.value.reason is Refusal.CONTAINER_ID


def test_the_runtimes_koordinator_knows_parse() -> None:
    for runtime in ("containerd", "docker", "cri-o", "pouch"):
        assert parse_container_id(f"{runtime}://{'0a' * 32}") == (runtime, "0a" * 32)


@pytest.mark.parametrize("uid", ["", None, 7, "not-a-uuid", f"{uuid.uuid4()}/../../../victimcg", f"{uuid.uuid4()}\n"])
def test_pod_uids_that_are_not_uuids_are_refused(uid: object) -> None:
    with pytest.raises(RefusedPath) as refused:
        checked_pod_uid(uid)
    assert refused.value.reason is Refusal.POD_UID


def test_a_hostile_container_id_writes_no_cpuset_outside_the_root(tmp_path: Path) -> None:
    root = fake_v1_root(tmp_path)
    victim = tmp_path / "outside" / "victim" / "cpuset.cpus"
    victim.parent.mkdir(parents=True)
    victim.write_text("0-63\n")
    pod = make_pod("batch", node="n1", qos="BE", requests={"kubernetes.io/batch-cpu": "2000"}, uid=True)
    pod_dir = f"kubepods/besteffort/pod{pod['metadata']['uid']}"
    for d in ("kubepods/besteffort", pod_dir):
        (root / "cpuset" / d).mkdir(parents=True, exist_ok=True)
        (root / "cpuset" / d / "cpuset.cpus").write_text("0-19\n")
    agent = agent_on(root, CollectorRegistry())
    node = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
    pod["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "containerID": HOSTILE_CONTAINER}]}
    inp = round_input(
        node,
        make_node_slo("n1", threshold={"enable": True, "cpuSuppressThresholdPercent": 70}),
        [pod],
        usage(12, pods={"default/batch": (2, 0)}),
        layout=agent.layout,
    )
    writes = CPUSuppress(agent.options).round(inp).writes
    agent.executor.apply(writes)

    assert victim.read_text() == "0-63\n"
    assert all(".." not in w.cgroup for w in writes)
    assert (root / "cpuset" / pod_dir / "cpuset.cpus").read_text() == "0-3"  # the pod itself is suppressed


def test_the_agents_rounds_count_each_refused_pod_once_and_send_one_event(tmp_path: Path) -> None:
    root = fake_v1_root(tmp_path)
    registry = CollectorRegistry()
    agent = agent_on(root, registry)
    recorded = Recorded()
    agent.events.recorder = recorded
    pod = make_pod("batch", node="n1", qos="BE", uid=True)
    pod["metadata"]["uid"] = f"{uuid.uuid4()}/../../../victimcg"
    pod["status"] = {"phase": "Running"}
    sneaky = make_pod("sneaky", node="n1", qos="BE", uid=True)
    sneaky["status"] = {"phase": "Running", "containerStatuses": [{"name": "main", "containerID": HOSTILE_CONTAINER}]}
    agent.store.replace_sourced("Node", [("t", make_node("n1"))])
    agent.store.replace_sourced("Pod", [("t", pod), ("t", sneaky)])
    for _ in range(3):
        views = agent.round_input().pods
    agent.events.flush()

    assert [v.name for v in views] == ["sneaky"]  # the pod with the bad UID is left out
    assert views[0].containers[0].dir is None  # the bad container gets no cgroup
    assert refusals(registry, Refusal.POD_UID) == 1
    assert refusals(registry, Refusal.CONTAINER_ID) == 1
    assert [(t, reason) for t, reason, _ in recorded.events] == [("Warning", "CgroupPathRefused")] * 2
    assert "is not a UUID" in recorded.events[0][2]


def test_the_executor_never_writes_through_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    root = fake_v1_root(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "cpu.shares").write_text("1024\n")
    (root / "cpu" / "kubepods" / "besteffort" / "podx").symlink_to(outside)
    refused: list[str] = []
    executor = ResourceExecutor(CgroupLayout(root, CgroupVersion.V1), lambda: 0.0, on_outside=refused.append)
    stats = executor.apply([CgroupWrite("t", "kubepods/besteffort/podx", r.CPU_SHARES, 2)])
    stats2 = executor.apply([CgroupWrite("t", "kubepods/../../../elsewhere", r.CPU_SHARES, 2)])

    assert (outside / "cpu.shares").read_text() == "1024\n"
    assert (stats.written, stats.failed, stats2.written, stats2.failed) == (0, 1, 0, 1)
    assert len(refused) == 2


# --- the eviction, on a real cgroup v1 hierarchy -------------------------------------------------------


def _real_cpu_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not (HOST_CPU / "cgroup.procs").is_file():
        return f"no cgroup v1 cpu hierarchy at {HOST_CPU}"
    probe = HOST_CPU / f"colocate-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cgroups not writable here: {exc}"
    return None


@pytest.fixture
def real_cpu_tree(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(agent root, victim cgroup): the root's `cpu/` is a test subtree; the victim is its sibling."""
    reason = _real_cpu_reason()
    if reason is not None:
        pytest.skip(reason)
    name = f"colocate-test-{uuid.uuid4().hex[:8]}"
    top, victim = HOST_CPU / name, HOST_CPU / f"{name}-victimcg"
    root = tmp_path / "cgroup-root"
    root.mkdir()
    try:
        for d in (top, top / "kubepods", top / "kubepods" / "besteffort", victim):
            d.mkdir()
        (root / "cpu").symlink_to(top)
        yield root, victim
    finally:
        for d in (top / "kubepods" / "besteffort", top / "kubepods", top, victim):
            with contextlib.suppress(OSError):
                d.rmdir()


def test_a_uid_that_walks_out_of_the_pod_kills_nothing_on_a_real_hierarchy(real_cpu_tree: tuple[Path, Path]) -> None:
    root, victim = real_cpu_tree
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (victim / "cgroup.procs").write_text(str(sleeper.pid))
        registry = CollectorRegistry()
        agent = agent_on(root, registry)
        pod = make_pod("batch", node="n1", qos="BE", uid=True)
        real_pod = root / "cpu" / "kubepods" / "besteffort" / f"pod{pod['metadata']['uid']}"
        real_pod.mkdir()  # the attacker's own pod cgroup, from which `..` walks up
        pod["metadata"]["uid"] += f"/../../../../{victim.name}"
        outcome = agent.evictor.evict(Eviction("MemoryEvict", pod, "default/batch", "memory usage above 70%"))

        assert sleeper.poll() is None, "the process outside the pod's cgroup was killed"
        assert outcome.outcome == "failed"
        assert refusals(registry, Refusal.POD_UID) == 1
    finally:
        sleeper.kill()
        sleeper.wait()
        for d in (root / "cpu" / "kubepods" / "besteffort").iterdir():
            with contextlib.suppress(OSError):
                d.rmdir()


def test_a_pod_of_a_valid_uid_is_still_killed_inside_the_root(real_cpu_tree: tuple[Path, Path]) -> None:
    root, _ = real_cpu_tree
    pod = make_pod("batch", node="n1", qos="BE", uid=True)
    pod_dir = root / "cpu" / "kubepods" / "besteffort" / f"pod{pod['metadata']['uid']}"
    container = pod_dir / container_hash("main")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        container.mkdir(parents=True)
        (container / "cgroup.procs").write_text(str(sleeper.pid))
        agent = agent_on(root, CollectorRegistry())
        outcome = agent.evictor.evict(Eviction("MemoryEvict", pod, "default/batch", "memory usage above 70%"))
        assert sleeper.wait(timeout=10) == -9 and outcome.outcome == "killed"
    finally:
        sleeper.kill()
        sleeper.wait()
        for d in (container, pod_dir):
            with contextlib.suppress(OSError):
                d.rmdir()
