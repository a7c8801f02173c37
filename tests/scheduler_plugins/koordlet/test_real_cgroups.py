"""The agent on this machine's real cgroup v1 hierarchies: a busy-loop process in a BE pod's cgroup
is held to the CPU that CPUSuppress (cfsQuota policy) leaves to BE.

The test builds its own subtree (`colocate-test-<id>`) under the cpu, cpuacct, cpuset and memory
hierarchies, points the agent's cgroup root at it (a directory of symlinks, so the agent's
`kubepods/besteffort/...` paths land inside the subtree), and removes everything afterwards. It
skips, saying why, where the hierarchies are missing or not writable (not root, cgroup v2 only).

Tolerance: the process's CPU, measured from its cgroup's `cpuacct.usage` over 3 s once the quota is
written, is at most the suppressed amount + 0.05 cores (CFS enforces the quota per 100 ms period;
the slack covers the period straddling the measurement edges).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.command import directory_source
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod
from tests.support.wait import wait_for

HOST = Path("/sys/fs/cgroup")
SUBSYSTEMS = ("cpu", "cpuacct", "cpuset", "memory")
UID = "0f0e0d0c-0000-4000-8000-00000000c0de"
CONTAINER = "busyloop"
CONTAINER_ID = container_hash(CONTAINER)
POD_DIR = f"kubepods/besteffort/pod{UID}"
SUPPRESS_CORES = 0.2
TOLERANCE_CORES = 0.05


def _writable_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    for sub in SUBSYSTEMS:
        if not (HOST / sub / "cgroup.procs").is_file():
            return f"no cgroup v1 {sub} hierarchy at {HOST / sub}"
    probe = HOST / "cpu" / f"colocate-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cgroups not writable here: {exc}"
    return None


REASON = _writable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def _rmtree_cgroup(path: Path) -> None:
    """Remove a cgroup subtree bottom-up (cgroup dirs hold only kernel files: rmdir, not unlink)."""
    if not path.is_dir():
        return
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()


@pytest.fixture
def cgroup_root(tmp_path: Path) -> Iterator[Path]:
    """A root whose `cpu/`, `cpuacct/`, `cpuset/`, `memory/` are this test's own subtrees."""
    name = f"colocate-test-{uuid.uuid4().hex[:8]}"
    root = tmp_path / "cgroup-root"
    root.mkdir()
    created = []
    try:
        for sub in SUBSYSTEMS:
            top = HOST / sub / name
            top.mkdir()
            created.append(top)
            (root / sub).symlink_to(top)
            for relative in ("", "kubepods", "kubepods/besteffort", POD_DIR, f"{POD_DIR}/{CONTAINER_ID}"):
                d = top / relative
                d.mkdir(exist_ok=True)
                if sub == "cpuset":  # a v1 cpuset cgroup needs cpus and mems before it takes a task
                    (d / "cpuset.cpus").write_text((d.parent / "cpuset.cpus").read_text())
                    (d / "cpuset.mems").write_text((d.parent / "cpuset.mems").read_text())
        yield root
    finally:
        for top in created:
            _rmtree_cgroup(top)


def _cpu_seconds(root: Path) -> float:
    return int((root / "cpuacct" / POD_DIR / "cpuacct.usage").read_text()) / 1e9


def _measure(root: Path, seconds: float) -> float:
    start_cpu, start = _cpu_seconds(root), time.monotonic()
    time.sleep(seconds)  # measuring a rate: time has to pass
    return (_cpu_seconds(root) - start_cpu) / (time.monotonic() - start)


def _node_dir(path: Path) -> Path:
    path.mkdir()
    cores = os.cpu_count() or 1
    node = make_node(
        "real-node", capacity={"cpu": str(cores), "memory": "8Gi"}, allocatable={"cpu": str(cores), "memory": "8Gi"}
    )
    percent = int(SUPPRESS_CORES * 100 / cores)
    slo = make_node_slo(
        "real-node",
        threshold={
            "enable": True,
            "cpuSuppressPolicy": "cfsQuota",
            "cpuSuppressThresholdPercent": percent,
            "cpuSuppressMinPercent": percent,
        },
    )
    pod = make_pod("busy", node="real-node", qos="BE", requests={"kubernetes.io/batch-cpu": "100"})
    pod["metadata"]["uid"] = UID
    pod["spec"]["containers"][0]["name"] = CONTAINER
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": CONTAINER, "containerID": f"containerd://{CONTAINER_ID}"}],
    }
    (path / "node.yaml").write_text(yaml.safe_dump_all([node, slo, pod]))
    return path


async def test_cfs_quota_suppress_holds_a_busy_be_process_to_the_suppressed_cpu(
    cgroup_root: Path, tmp_path: Path
) -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for sub in SUBSYSTEMS:
            (cgroup_root / sub / POD_DIR / CONTAINER_ID / "cgroup.procs").write_text(str(busy.pid))
        before = await asyncio.to_thread(_measure, cgroup_root, 1.0)
        store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
        agent = Agent(AgentSettings("real-node", cgroup_root), StrategyOptions(koordlet_gates("")), store)
        node_dir = _node_dir(tmp_path / "node")
        task = asyncio.create_task(agent.run(directory_source(node_dir, store, 1.0)))
        try:
            quota_file = cgroup_root / "cpu" / "kubepods/besteffort" / "cpu.cfs_quota_us"
            expected = int(SUPPRESS_CORES * 100_000)
            await wait_for(
                lambda: int(quota_file.read_text()),
                until=lambda q: q == expected,
                timeout=20,
                message="the suppressed quota to be written to the BE QoS cgroup",
            )
            after = await asyncio.to_thread(_measure, cgroup_root, 3.0)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        # the BE cgroups got the full BE cpuset back (cfsQuota policy recovers the cpuset policy)
        cpus = (cgroup_root / "cpuset" / POD_DIR / "cpuset.cpus").read_text().strip()
        assert cpus == (HOST / "cpuset" / "cpuset.cpus").read_text().strip()
        print(
            json.dumps(
                {"before_cores": round(before, 3), "after_cores": round(after, 3), "suppressed_cores": SUPPRESS_CORES}
            )
        )
        assert after <= SUPPRESS_CORES + TOLERANCE_CORES, (before, after)
        assert before > after  # on a loaded machine `before` may be below one core, but not below the quota
    finally:
        busy.kill()
        busy.wait()
