"""ResctrlReconcile moves the pods' tasks into their QoS class's resctrl group, as Koordinator's
`reconcileResctrlGroups` (`pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile.go`).

Transcribed: `TestResctrlReconcile_reconcileResctrlGroups` (a BE pod and an LSE pod, BE and LSR
enabled; a second round appends only the ids the group lacks), `Test_getPodCgroupNewTaskIds` (known
ids left out, a container without a status contributes nothing, v2's `cgroup.threads`) and
`TestResctrlReconcile_calculateAndApplyRDTL3GroupTasks` (the ids written sorted, nothing written for
none). The resctrl side is a fake tree in the kernel's format (this machine has no resctrl); the
cgroup side is also this machine's real cgroup v1 `cpu` hierarchy, with a real multi-threaded
process, and a real `tasks` file shows the one-id-a-write contract that resctrl's `tasks` shares.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.store import ClusterStore
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import Agent, AgentSettings
from scheduler_plugins.koordlet.cgroups.executor import ResourceExecutor
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.host import RESCTRL, HostFiles, HostRoots, HostView, HostWrite
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.resctrl import ResctrlReconcile
from tests.scheduler_plugins.koordlet.rounds import round_input
from tests.support.builders import make_node, make_pod

NODE = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
OPTIONS = StrategyOptions(koordlet_gates("RdtResctrl=true"))
FULL = {"catRangeStartPercent": 0, "catRangeEndPercent": 100}
CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme cat_l3 cdp_l3 mba\n"
#: the pods' UIDs and container IDs in the formats the API server and the runtimes give them
P0, P1, P2 = (f"0f0e0d0c-0000-4000-8000-00000000000{i}" for i in range(3))
C0, C1, SANDBOX, OTHER = ("c0" * 32, "c1" * 32, "ab" * 32, "de" * 32)
SYSTEMD_POD_DIR = f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{P0.replace('-', '_')}.slice"


def qos_strategy(*enabled: str) -> dict[str, Any]:
    """sloconfig.DefaultResourceQOSStrategy's resctrl part, `enable: true` for the classes named."""
    return {key: {"resctrlQOS": {**FULL, "enable": key in enabled}} for key in ("lsrClass", "lsClass", "beClass")}


def node_slo(strategy: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeSLO",
        "metadata": {"name": "n1"},
        "spec": {"resourceQOSStrategy": strategy},
    }


def write(root: Path, files: Mapping[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def resctrl_tree(root: Path, tasks: Mapping[str, str] | None = None) -> Path:
    """A resctrl mount (two L3 caches, 11 ways) whose LSR, LS and BE groups exist, their `tasks`
    as the kernel shows them: one id a line, empty for none; and, beside it, `proc/cpuinfo` of a CPU
    with the cat_l3 and mba flags."""
    write(root.parent / "proc", {"cpuinfo": CPUINFO})
    tree = {"schemata": "L3:0=7ff;1=7ff\n", "info/L3/cbm_mask": "7ff\n"}
    for group in ("LSR", "LS", "BE"):
        tree[f"{group}/schemata"] = "L3:0=7ff;1=7ff\n"
        tree[f"{group}/tasks"] = (tasks or {}).get(group, "")
    return write(root, tree)


def running(pod: dict[str, Any], uid: str, containers: Mapping[str, str]) -> dict[str, Any]:
    pod["metadata"]["uid"] = uid
    pod["status"] = {
        "phase": "Running",
        "containerStatuses": [{"name": n, "containerID": f"containerd://{cid}"} for n, cid in containers.items()],
    }
    return pod


def be_pod(uid: str = P0, container: str = C0) -> dict[str, Any]:
    pod = make_pod("pod0", qos="BE", requests={"kubernetes.io/batch-cpu": "1000"})
    pod["spec"]["containers"][0]["name"] = "container0"
    return running(pod, uid, {"container0": container})


def lse_pod(uid: str = P1, container: str = C1) -> dict[str, Any]:
    pod = make_pod("pod1", qos="LSE", requests={"cpu": "2", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"})
    pod["spec"]["containers"][0]["name"] = "container1"
    return running(pod, uid, {"container1": container})


BE_TASKS = "122450\n122454\n123111\n128912"
LSE_TASKS = "4321\n4322\n4323\n4400"


def cgroup_tree(root: Path) -> CgroupLayout:
    """v1 cgroupfs: the BE pod's container under besteffort, the LSE (Guaranteed) one under kubepods."""
    write(
        root,
        {
            f"cpu/kubepods/besteffort/pod{P0}/{C0}/tasks": BE_TASKS,
            f"cpu/kubepods/pod{P1}/{C1}/tasks": LSE_TASKS,
        },
    )
    return CgroupLayout(root, CgroupVersion.V1, CgroupDriver.CGROUPFS)


def one_round(tmp_path: Path, layout: CgroupLayout, pods: list[dict[str, Any]], strategy: Mapping[str, Any]) -> Any:
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", tmp_path / "resctrl")
    executor = ResourceExecutor(layout, lambda: 0.0)
    inp = round_input(
        NODE,
        node_slo(strategy),
        pods,
        layout=layout,
        host=HostView(roots),
        reader=executor.read,
        subdirs=executor.subdirs,
    )
    return ResctrlReconcile(OPTIONS).round(inp), roots


def lines(path: Path) -> list[str]:
    return path.read_text().split()


def test_reconcile_resctrl_groups_moves_be_and_lse_tasks_and_then_only_the_new_ones(tmp_path: Path) -> None:
    """TestResctrlReconcile_reconcileResctrlGroups."""
    resctrl = resctrl_tree(tmp_path / "resctrl")
    layout = cgroup_tree(tmp_path / "cgroup")
    pods = [be_pod(), lse_pod()]
    result, roots = one_round(tmp_path, layout, pods, qos_strategy("beClass", "lsrClass"))
    stats = HostFiles(roots, lambda: 0.0).apply(result.host_writes)
    assert stats.failed == 0 and stats.refused == 0, stats.errors
    assert lines(resctrl / "BE/tasks") == BE_TASKS.split()
    assert lines(resctrl / "LSR/tasks") == LSE_TASKS.split()  # LSE pods share the LSR group
    assert lines(resctrl / "LS/tasks") == []
    assert result.status["tasks"] == {"LSR": 4, "BE": 4}

    # the group holds one of the ids already: only the three others are appended
    (resctrl / "BE/tasks").write_text("122450\n")
    (resctrl / "LSR/tasks").write_text(LSE_TASKS + "\n")
    result, roots = one_round(tmp_path, layout, pods, qos_strategy("beClass", "lsrClass"))
    tasks = [w for w in result.host_writes if w.path.endswith("/tasks")]
    assert [(w.path, w.value) for w in tasks] == [("BE/tasks", "122454\n123111\n128912\n")]
    HostFiles(roots, lambda: 0.0).apply(result.host_writes)
    assert lines(resctrl / "BE/tasks") == BE_TASKS.split()


def test_only_classes_with_resctrl_enabled_get_their_tasks_moved(tmp_path: Path) -> None:
    """`podQoSCfg.ResctrlQOS.Enable` nil or false: the pod is skipped (the schemata are still written)."""
    resctrl_tree(tmp_path / "resctrl")
    layout = cgroup_tree(tmp_path / "cgroup")
    result, _ = one_round(tmp_path, layout, [be_pod(), lse_pod()], qos_strategy("lsrClass"))
    assert [w.path for w in result.host_writes if w.path.endswith("/tasks")] == ["LSR/tasks"]
    assert "BE/schemata" in [w.path for w in result.host_writes]
    result, _ = one_round(tmp_path, layout, [be_pod(), lse_pod()], qos_strategy())
    assert [w for w in result.host_writes if w.path.endswith("/tasks")] == []
    assert result.status["tasks"] == "no class has resctrlQOS.enable"


def test_pods_with_their_own_resctrl_config_inactive_pods_and_unstarted_containers_are_left_out(
    tmp_path: Path,
) -> None:
    """The `node.koordinator.sh/resctrl` annotation, util.IsPodInactive, and Test_getPodCgroupNewTaskIds's
    'missing container's status'."""
    resctrl_tree(tmp_path / "resctrl")
    layout = cgroup_tree(tmp_path / "cgroup")
    annotated = be_pod()
    annotated["metadata"]["annotations"] = {"node.koordinator.sh/resctrl": '{"llc": {"schemata": {"range": [0, 30]}}}'}
    done = lse_pod()
    done["status"]["phase"] = "Succeeded"
    unstarted = be_pod(uid=P2)
    unstarted["status"]["containerStatuses"] = []
    write(layout.root, {f"cpu/kubepods/besteffort/pod{P2}/{C0}/tasks": "777\n"})
    result, _ = one_round(tmp_path, layout, [annotated, done, unstarted], qos_strategy("beClass", "lsrClass"))
    assert [w for w in result.host_writes if w.path.endswith("/tasks")] == []


def test_cgroup_v2_reads_the_container_threads(tmp_path: Path) -> None:
    """Test_getPodCgroupNewTaskIds 'successfully get task ids on cgroups v2' (systemd driver)."""
    resctrl_tree(tmp_path / "resctrl", {"BE": "122450\n"})
    root = tmp_path / "cgroup2"
    scope = f"{SYSTEMD_POD_DIR}/cri-containerd-{C0}.scope"
    write(root, {"cgroup.controllers": "cpu io memory\n", f"{scope}/cgroup.threads": BE_TASKS})
    layout = CgroupLayout(root, CgroupVersion.V2, CgroupDriver.SYSTEMD)
    result, _ = one_round(tmp_path, layout, [be_pod()], qos_strategy("beClass"))
    tasks = [(w.path, w.value) for w in result.host_writes if w.path.endswith("/tasks")]
    assert tasks == [("BE/tasks", "122454\n123111\n128912\n")]


def test_the_sandbox_container_tasks_move_too(tmp_path: Path) -> None:
    """Test_getPodCgroupNewTaskIds 'successfully get task ids from the sandbox container': the pod's
    one cgroup child that is not a known container is its sandbox."""
    resctrl_tree(tmp_path / "resctrl", {"BE": "122450\n"})
    root = tmp_path / "cgroup2"
    pod_dir = SYSTEMD_POD_DIR
    write(
        root,
        {"cgroup.controllers": "cpu io memory\n", f"{pod_dir}/cri-containerd-{SANDBOX}.scope/cgroup.threads": BE_TASKS},
    )
    layout = CgroupLayout(root, CgroupVersion.V2, CgroupDriver.SYSTEMD)
    result, _ = one_round(tmp_path, layout, [be_pod()], qos_strategy("beClass"))
    tasks = [(w.path, w.value) for w in result.host_writes if w.path.endswith("/tasks")]
    assert tasks == [("BE/tasks", "122454\n123111\n128912\n")]
    # a second unknown child: the sandbox cannot be told (a container is not ready), nothing from it
    write(root, {f"{pod_dir}/cri-containerd-{OTHER}.scope/cgroup.threads": "9\n"})
    result, _ = one_round(tmp_path, layout, [be_pod()], qos_strategy("beClass"))
    assert [w for w in result.host_writes if w.path.endswith("/tasks")] == []


def test_the_running_agent_moves_the_tasks(tmp_path: Path) -> None:
    """`run`: the agent's round reads the container cgroups under --cgroup-root and appends to the
    groups under --resctrl-root."""
    resctrl = resctrl_tree(tmp_path / "resctrl")
    layout = cgroup_tree(tmp_path / "cgroup")
    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    store.replace("Node", [NODE])
    store.replace("NodeSLO", [node_slo(qos_strategy("beClass"))])
    pod = be_pod()
    pod["spec"]["nodeName"] = "n1"
    store.replace("Pod", [pod])
    settings = AgentSettings("n1", layout.root, proc=tmp_path / "proc", sys_root=tmp_path / "sys", resctrl_root=resctrl)
    agent = Agent(settings, OPTIONS, store, processors=())
    agent.apply(agent.compute(["ResctrlReconcile"]))
    assert lines(resctrl / "BE/tasks") == BE_TASKS.split()
    # three schemata and one tasks write
    assert agent.registry.get_sample_value("koordlet_host_writes_total", {"strategy": "ResctrlReconcile"}) == 4


def test_host_files_write_task_ids_every_round_never_from_the_cache(tmp_path: Path) -> None:
    """calculateAndApplyRDTL3GroupTasks: `executor.Update(false, ...)`, a tid may be reused, so the
    same ids are written again next round if the group lost them."""
    resctrl = resctrl_tree(tmp_path / "resctrl")
    roots = HostRoots(tmp_path / "proc", tmp_path / "sys", resctrl)
    files = HostFiles(roots, lambda: 0.0)
    move = HostWrite("ResctrlReconcile", RESCTRL, "BE/tasks", "5\n7\n", each_line=True, cached=False)
    assert files.apply([move]).written == 1
    (resctrl / "BE/tasks").write_text("")
    assert files.apply([move]).written == 1
    assert lines(resctrl / "BE/tasks") == ["5", "7"]


# --- this machine's real cgroup v1 cpu hierarchy --------------------------------------------------
HOST_CPU = Path("/sys/fs/cgroup/cpu")
THREADED = (
    "import threading, time\n"
    "for _ in range(2): threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "while True: pass\n"
)


def _real_cpu_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if not (HOST_CPU / "tasks").is_file():
        return f"no cgroup v1 cpu hierarchy at {HOST_CPU}"
    return None


@pytest.fixture
def real_container(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A busy three-thread process in `<root>/cpu/kubepods/besteffort/pod<P0>/<C0>` of a real v1 cpu
    hierarchy (this test's own subtree), the root a directory of symlinks."""
    reason = _real_cpu_reason()
    if reason:
        pytest.skip(reason)
    top = HOST_CPU / f"colocate-test-{uuid.uuid4().hex[:8]}"
    container = top / f"kubepods/besteffort/pod{P0}/{C0}"
    try:
        container.mkdir(parents=True)
    except OSError as exc:
        pytest.skip(f"cpu cgroups not writable here: {exc}")
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cpu").symlink_to(top)
    proc = subprocess.Popen([sys.executable, "-c", THREADED], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        (container / "cgroup.procs").write_text(str(proc.pid))
        yield root, proc
    finally:
        proc.kill()
        proc.wait()
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def test_every_thread_of_a_real_busy_process_goes_to_the_be_group(
    tmp_path: Path, real_container: tuple[Path, subprocess.Popen[str]]
) -> None:
    """The container's `tasks` lists threads, not processes: all three ids move."""
    root, proc = real_container
    resctrl = resctrl_tree(tmp_path / "resctrl")
    layout = CgroupLayout(root, CgroupVersion.V1, CgroupDriver.CGROUPFS)
    result, roots = one_round(tmp_path, layout, [be_pod()], qos_strategy("beClass"))
    HostFiles(roots, lambda: 0.0).apply(result.host_writes)
    threads = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task"))
    assert len(threads) == 3
    assert [int(t) for t in lines(resctrl / "BE/tasks")] == threads


def test_one_id_a_write_on_a_real_tasks_file_survives_an_exited_task(
    real_container: tuple[Path, subprocess.Popen[str]],
) -> None:
    """A real `tasks` file refuses an id without a task (ESRCH); the ids around it still move
    (UpdateResctrlTasksFunc writes them one by one for this)."""
    root, proc = real_container
    target = root / f"cpu/kubepods/besteffort/pod{P0}"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # an id that no task has now (a pid is not reused this soon)
    threads = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task"))
    roots = HostRoots(cgroup=root)
    value = "".join(f"{t}\n" for t in [threads[0], gone.pid, *threads[1:]])
    stats = HostFiles(roots, lambda: 0.0).apply(
        [HostWrite("test", "cgroup", f"cpu/kubepods/besteffort/pod{P0}/tasks", value, each_line=True, cached=False)]
    )
    assert stats.failed == 0 and stats.refused == 1, stats.errors
    assert sorted(int(t) for t in (target / "tasks").read_text().split()) == threads
