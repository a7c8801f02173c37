"""The cgroup layer: version detection from files, the paths of both drivers, the v2 file formats,
and the executor (last-write cache, nothing written twice, the leveled order)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite, ResourceExecutor, leveled_order
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout, LayoutError, Level, detect_version
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion

UID = "6b1c2233-0000-4000-8000-00000000abcd"


def test_the_version_is_read_from_the_files_not_the_mounts(tmp_path: Path) -> None:
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "v1" / "cpu").mkdir(parents=True)
    assert detect_version(tmp_path / "v2") is CgroupVersion.V2
    assert detect_version(tmp_path / "v1") is CgroupVersion.V1
    with pytest.raises(LayoutError, match="not a cgroup root"):
        detect_version(tmp_path)


@pytest.mark.parametrize(
    "driver, qos, expected",
    [
        (CgroupDriver.CGROUPFS, "BestEffort", "kubepods/besteffort/pod6b1c2233-0000-4000-8000-00000000abcd"),
        (CgroupDriver.CGROUPFS, "Guaranteed", "kubepods/pod6b1c2233-0000-4000-8000-00000000abcd"),
        (
            CgroupDriver.SYSTEMD,
            "Burstable",
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b1c2233_0000_4000_8000_00000000abcd.slice",
        ),
        (CgroupDriver.SYSTEMD, "Guaranteed", "kubepods.slice/kubepods-pod6b1c2233_0000_4000_8000_00000000abcd.slice"),
    ],
)
def test_pod_dirs_of_both_drivers(driver: CgroupDriver, qos: str, expected: str) -> None:
    assert CgroupLayout(Path("/"), CgroupVersion.V1, driver).pod_dir(qos, UID) == expected


def test_container_dirs_of_both_drivers() -> None:
    systemd = CgroupLayout(Path("/"), CgroupVersion.V2, CgroupDriver.SYSTEMD)
    assert systemd.container_dir("p.slice", "containerd", "abc") == "p.slice/cri-containerd-abc.scope"
    assert systemd.container_dir("p.slice", "docker", "abc") == "p.slice/docker-abc.scope"
    assert CgroupLayout(Path("/"), CgroupVersion.V1).container_dir("pod1", "containerd", "abc") == "pod1/abc"


def test_v1_paths_have_a_subsystem_directory_v2_paths_do_not() -> None:
    v1 = CgroupLayout(Path("/cg"), CgroupVersion.V1)
    v2 = CgroupLayout(Path("/cg"), CgroupVersion.V2)
    assert v1.path("kubepods/besteffort", r.CPU_SHARES) == Path("/cg/cpu/kubepods/besteffort/cpu.shares")
    assert v2.path("kubepods/besteffort", r.CPU_SHARES) == Path("/cg/kubepods/besteffort/cpu.weight")


@pytest.mark.parametrize("shares, weight", [(2, 1), (1024, 39), (262144, 10000)])
def test_shares_become_weights_on_v2_and_back(shares: int, weight: int) -> None:
    assert r.CPU_SHARES.render(CgroupVersion.V2, shares) == str(weight)
    assert r.weight_to_shares(weight) <= shares + 27  # the conversion is lossy, within one weight step


def test_cfs_quota_is_cpu_max_on_v2() -> None:
    assert r.CPU_CFS_QUOTA.render(CgroupVersion.V2, 50000) == "50000 100000"
    assert r.CPU_CFS_QUOTA.render(CgroupVersion.V2, -1) == "max 100000"
    assert r.CPU_CFS_QUOTA.parse(CgroupVersion.V2, "max 100000\n") == -1
    assert r.CPU_CFS_QUOTA.parse(CgroupVersion.V2, "250000 100000\n") == 250000
    assert r.MEMORY_HIGH.render(CgroupVersion.V2, r.MAX_INT64) == "max"


def test_values_outside_the_validator_are_refused() -> None:
    with pytest.raises(r.InvalidValue):
        r.CPU_BVT_WARP_NS.render(CgroupVersion.V1, 3)
    with pytest.raises(r.InvalidValue):
        r.CPU_SHARES.render(CgroupVersion.V1, 1)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_executor_writes_once_and_skips_an_identical_second_round(tmp_path: Path) -> None:
    _tree(
        tmp_path, {"cpu/kubepods/besteffort/cpu.shares": "1024\n", "cpu/kubepods/besteffort/podx/cpu.shares": "1024\n"}
    )
    executor = ResourceExecutor(CgroupLayout(tmp_path, CgroupVersion.V1), clock=lambda: 0.0)
    writes = [
        CgroupWrite("t", "kubepods/besteffort", r.CPU_SHARES, 2, Level.QOS),
        CgroupWrite("t", "kubepods/besteffort/podx", r.CPU_SHARES, 2, Level.POD),
    ]
    first = executor.apply(writes)
    second = executor.apply(writes)
    assert (first.written, second.written, second.skipped) == (2, 0, 2)
    assert (tmp_path / "cpu/kubepods/besteffort/podx/cpu.shares").read_text() == "2"


def test_a_value_changed_behind_the_agents_back_is_restored_after_the_cache_expires(tmp_path: Path) -> None:
    _tree(tmp_path, {"cpu/kubepods/cpu.shares": "1024\n"})
    now = [0.0]
    executor = ResourceExecutor(CgroupLayout(tmp_path, CgroupVersion.V1), clock=lambda: now[0], cache_ttl=10)
    write = [CgroupWrite("t", "kubepods", r.CPU_SHARES, 2, Level.QOS)]
    executor.apply(write)
    (tmp_path / "cpu/kubepods/cpu.shares").write_text("1024")
    assert executor.apply(write).written == 0
    now[0] = 11.0
    assert executor.apply(write).written == 1
    assert (tmp_path / "cpu/kubepods/cpu.shares").read_text() == "2"


def test_a_vanished_cgroup_is_a_counted_failure_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    stats = ResourceExecutor(CgroupLayout(tmp_path, CgroupVersion.V1), clock=lambda: 0.0).apply(
        [CgroupWrite("t", "kubepods/gone", r.CPU_SHARES, 2, Level.POD)]
    )
    assert (stats.written, stats.failed) == (0, 1)


def test_cpusets_widen_top_down_then_narrow_bottom_up() -> None:
    current = {"qos": "0-3", "pod": "0-3", "ctr": "0-3"}
    writes = [
        CgroupWrite("t", "qos", r.CPUSET_CPUS, "4-7", Level.QOS),
        CgroupWrite("t", "pod", r.CPUSET_CPUS, "4-7", Level.POD),
        CgroupWrite("t", "ctr", r.CPUSET_CPUS, "4-7", Level.CONTAINER),
    ]
    ordered = leveled_order(writes, lambda cgroup, _res: current[cgroup])
    assert [(w.cgroup, w.value) for w in ordered] == [
        ("qos", "0-7"),
        ("pod", "0-7"),
        ("ctr", "0-7"),
        ("ctr", "4-7"),
        ("pod", "4-7"),
        ("qos", "4-7"),
    ]


# --- the property: no parent ever below a child mid-transition ---------------------------------------

UNLIMITED = -1


def _le(child: int, parent: int) -> bool:
    return parent == UNLIMITED or (child != UNLIMITED and child <= parent)


quota = st.one_of(st.just(UNLIMITED), st.integers(min_value=1000, max_value=800_000))


@st.composite
def chain(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Valid old and new quotas of a QoS → pod → container chain (each level within its parent)."""

    def valid() -> list[int]:
        values = [draw(quota)]
        for _ in range(2):
            parent = values[-1]
            child = draw(quota if parent == UNLIMITED else st.integers(min_value=1000, max_value=max(1000, parent)))
            values.append(min(child, parent) if parent != UNLIMITED and child != UNLIMITED else child)
        return values

    return valid(), valid()


@settings(max_examples=300, deadline=None)
@given(chain())
def test_leveled_quota_updates_never_leave_a_parent_below_a_child(values: tuple[list[int], list[int]]) -> None:
    old, new = values
    names = ["qos", "pod", "ctr"]
    state = dict(zip(names, old, strict=True))
    assert all(_le(state[c], state[p]) for p, c in zip(names, names[1:], strict=False))
    writes = [
        CgroupWrite("t", n, r.CPU_CFS_QUOTA, v, Level(i)) for i, (n, v) in enumerate(zip(names, new, strict=True))
    ]
    for w in leveled_order(writes, lambda cgroup, _res: state[cgroup]):
        assert isinstance(w.value, int)
        state[w.cgroup] = w.value
        assert all(_le(state[c], state[p]) for p, c in zip(names, names[1:], strict=False)), (old, new, state)
    assert [state[n] for n in names] == new


cpusets = st.frozensets(st.integers(min_value=0, max_value=15), min_size=1)


@settings(max_examples=300, deadline=None)
@given(st.lists(cpusets, min_size=3, max_size=3), st.lists(cpusets, min_size=3, max_size=3))
def test_leveled_cpuset_updates_keep_every_child_inside_its_parent(
    old_sets: list[frozenset[int]], new_sets: list[frozenset[int]]
) -> None:
    from policies.apis.cpuset import format_cpuset, parse_cpuset

    def nested(sets: list[frozenset[int]]) -> list[frozenset[int]]:  # make the chain valid: child ⊆ parent
        out = [sets[0]]
        for s in sets[1:]:
            out.append((s & out[-1]) or out[-1])
        return out

    old, new = nested(old_sets), nested(new_sets)
    names = ["qos", "pod", "ctr"]
    state = {n: format_cpuset(s) for n, s in zip(names, old, strict=True)}
    writes = [
        CgroupWrite("t", n, r.CPUSET_CPUS, format_cpuset(s), Level(i))
        for i, (n, s) in enumerate(zip(names, new, strict=True))
    ]
    for w in leveled_order(writes, lambda cgroup, _res: state[cgroup]):
        state[w.cgroup] = str(w.value)
        sets = [parse_cpuset(state[n]) for n in names]
        assert sets[2] <= sets[1] <= sets[0]
    assert [parse_cpuset(state[n]) for n in names] == new


def test_a_failed_write_is_counted_on_the_agents_metric_by_strategy(tmp_path: Path) -> None:
    """`koordlet_cgroup_write_failures_total` (docs/koordlet.md) moves when a write fails."""
    from colocate.cluster.store import ClusterStore
    from scheduler_plugins.koordlet.agent import Agent, AgentSettings
    from scheduler_plugins.koordlet.features import koordlet_gates
    from scheduler_plugins.koordlet.framework import RoundReport
    from scheduler_plugins.koordlet.states import KOORDLET_KINDS
    from scheduler_plugins.koordlet.strategies.base import StrategyOptions

    (tmp_path / "cpu").mkdir()
    agent = Agent(AgentSettings("n1", tmp_path), StrategyOptions(koordlet_gates()), ClusterStore(KOORDLET_KINDS))
    agent.apply(RoundReport(writes=[CgroupWrite("CPUSuppress", "kubepods/gone", r.CPU_SHARES, 2, Level.POD)]))
    failures = agent.registry.get_sample_value("koordlet_cgroup_write_failures_total", {"strategy": "CPUSuppress"})
    assert failures == 1.0
