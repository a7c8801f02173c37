"""The flags `plan` and `run` share, and the `StrategyOptions` they parse into."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Final

from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.host import HostRoots
from scheduler_plugins.koordlet.strategies.base import StrategyOptions

_INTERVALS = (
    "cpu_suppress_interval",
    "cpu_evict_interval",
    "cpu_evict_cool_time",
    "memory_evict_interval",
    "memory_evict_cool_time",
    "reconcile_interval",
    "collect_interval",
)


def add_strategy_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cgroup-driver",
        choices=[d.value for d in CgroupDriver],
        default="cgroupfs",
        help="how kubelet names the cgroups (default cgroupfs)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="K=BOOL,...",
        help="koordlet feature gates, e.g. BECPUEvict=true,CgroupReconcile=true",
    )
    parser.add_argument(
        "--qos-extension-plugins",
        default="",
        metavar="K=BOOL,...",
        help="gates of the QoS extension plugins and of the installed strategies (`colocate plugins list`)",
    )
    add_host_roots(parser)


#: The host's files, each a flag taking a PATH: its name, default and what is read or written there.
_HOST_ROOTS: Final = (
    (
        "--cgroup-root",
        "/sys/fs/cgroup",
        "the host's cgroup root (v1: a directory per subsystem; v2: cgroup.controllers); "
        "`plan` only looks there for the blkio/io controller and writes nothing",
    ),
    ("--proc-root", "/proc", "the host's /proc"),
    ("--sys-root", "/sys", "the host's /sys (block devices, the memcg reaper) for BlkIOReconcile and SystemConfig"),
    ("--resctrl-root", "/sys/fs/resctrl", "the mounted resctrl filesystem for RdtResctrl"),
)


def add_host_roots(parser: argparse.ArgumentParser) -> None:
    """The host's files, declared once for `plan` and `run` (`host_roots` reads them back)."""
    for flag, default, help in _HOST_ROOTS:
        parser.add_argument(flag, type=Path, default=Path(default), metavar="PATH", help=help)


def host_roots(args: argparse.Namespace) -> HostRoots:
    """Where the host files live (`--proc-root`, `--sys-root`, `--resctrl-root`, `--cgroup-root`)."""
    return HostRoots(args.proc_root, args.sys_root, args.resctrl_root, args.cgroup_root)


def strategy_options(args: argparse.Namespace) -> StrategyOptions:
    """The gates (ConfigError on an unknown one) and the intervals the command line gives."""
    gates = koordlet_gates(args.feature_gates)
    values: dict[str, Any] = {
        attr: float(getattr(args, attr)) for attr in _INTERVALS if getattr(args, attr, None) is not None
    }
    return StrategyOptions(gates, **values)
