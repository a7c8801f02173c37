"""`serve --workers auto`: one worker per CPU the process may use, within its cgroup CPU limit."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from webhook.workers import AUTO, Cpus, cgroup_cpu_limit, detect_cpus, parse_workers, resolve_workers

V2_MOUNTS = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
V1_MOUNTS = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)
HYBRID_MOUNTS = V1_MOUNTS + "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"


def host(tmp_path: Path, cgroup: str, mountinfo: str, files: dict[str, str]) -> Path:
    """A directory laid out like `/`: /proc/self/{cgroup,mountinfo} and the cgroup files."""
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text(cgroup)
    (tmp_path / "proc/self/mountinfo").write_text(mountinfo)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text + "\n")
    return tmp_path


@pytest.mark.parametrize(("text", "expected"), [("auto", AUTO), ("AUTO", AUTO), ("1", 1), ("16", 16)])
def test_workers_is_a_count_or_auto(text: str, expected: object) -> None:
    assert parse_workers(text) == expected


@pytest.mark.parametrize("text", ["0", "-2", "1.5", "many", ""])
def test_anything_else_is_refused_with_the_reason(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1|whole number"):
        parse_workers(text)


def test_a_count_is_taken_as_given() -> None:
    assert resolve_workers(3, Cpus(usable=64)) == 3


def test_auto_without_a_cgroup_limit_is_the_affinity_count(tmp_path: Path) -> None:
    cpus = detect_cpus(root=tmp_path)  # no /proc, no cgroup files: no limit known
    assert cpus == Cpus(usable=len(os.sched_getaffinity(0)), limit=None)
    assert resolve_workers(AUTO, cpus) == len(os.sched_getaffinity(0))


def test_auto_of_this_process_is_at_most_its_affinity_count() -> None:
    assert 1 <= resolve_workers(AUTO) <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("usable", "limit", "workers"),
    [
        (8, None, 8),  # no limit: every CPU of the affinity mask
        (8, 2.0, 2),  # limits.cpu: "2"
        (8, 1.5, 1),  # rounded down: two workers would be throttled in every CFS period
        (8, 0.25, 1),  # at least one
        (2, 16.0, 2),  # a limit above the cpuset does not add CPUs
        (0, None, 1),
    ],
)
def test_auto_is_the_affinity_count_lowered_to_the_limit_rounded_down(
    usable: int, limit: float | None, workers: int
) -> None:
    assert Cpus(usable, limit).workers == workers


def test_cgroup_v2_cpu_max_in_a_container(tmp_path: Path) -> None:
    root = host(tmp_path, "0::/\n", V2_MOUNTS, {"sys/fs/cgroup/cpu.max": "200000 100000"})
    assert cgroup_cpu_limit(root) == 2.0


def test_cgroup_v2_max_is_no_limit(tmp_path: Path) -> None:
    root = host(tmp_path, "0::/\n", V2_MOUNTS, {"sys/fs/cgroup/cpu.max": "max 100000"})
    assert cgroup_cpu_limit(root) is None


def test_cgroup_v2_on_a_host_reads_the_process_own_cgroup(tmp_path: Path) -> None:
    path = "/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope"
    root = host(
        tmp_path,
        f"0::{path}\n",
        V2_MOUNTS,
        {"sys/fs/cgroup/cpu.max": "max 100000", f"sys/fs/cgroup{path}/cpu.max": "150000 100000"},
    )
    assert cgroup_cpu_limit(root) == 1.5


def test_cgroup_v1_quota_and_period(tmp_path: Path) -> None:
    root = host(
        tmp_path,
        "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n",
        V1_MOUNTS,
        {
            "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000",
            "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000",
        },
    )
    assert cgroup_cpu_limit(root) == 3.0


def test_cgroup_v1_minus_one_is_no_limit(tmp_path: Path) -> None:
    root = host(
        tmp_path,
        "3:cpu,cpuacct:/\n",
        V1_MOUNTS,
        {"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1", "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000"},
    )
    assert cgroup_cpu_limit(root) is None


def test_a_mount_of_the_container_subtree_is_translated(tmp_path: Path) -> None:
    """Docker without a cgroup namespace mounts the container's own cgroup at /sys/fs/cgroup/cpu."""
    mounts = "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    root = host(
        tmp_path,
        "2:cpu:/docker/abc\n",
        mounts,
        {"sys/fs/cgroup/cpu/cpu.cfs_quota_us": "50000", "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"},
    )
    assert cgroup_cpu_limit(root) == 0.5


def test_on_a_hybrid_host_the_v1_cpu_controller_limits(tmp_path: Path) -> None:
    root = host(
        tmp_path,
        "3:cpu,cpuacct:/\n0::/\n",
        HYBRID_MOUNTS,
        {
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000",
            "sys/fs/cgroup/unified/cpu.max": "max 100000",
        },
    )
    assert cgroup_cpu_limit(root) == 2.0


@pytest.mark.parametrize("cpu_max", ["", "garbage", "200000 0", "-5 100000"])
def test_an_unreadable_limit_is_no_limit(tmp_path: Path, cpu_max: str) -> None:
    root = host(tmp_path, "0::/\n", V2_MOUNTS, {"sys/fs/cgroup/cpu.max": cpu_max})
    assert cgroup_cpu_limit(root) is None


def test_a_mount_point_with_an_escaped_space(tmp_path: Path) -> None:
    mounts = "30 23 0:26 / /cgroup\\040root rw - cgroup2 cgroup2 rw\n"
    root = host(tmp_path, "0::/\n", mounts, {"cgroup root/cpu.max": "100000 100000"})
    assert cgroup_cpu_limit(root) == 1.0
