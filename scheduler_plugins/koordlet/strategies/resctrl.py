"""ResctrlReconcile, the `RdtResctrl` gate (Koordinator's
`pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile.go`): Intel RDT / AMD PQoS through the
resctrl filesystem. One group per QoS class, `LSR` (LSE pods too), `LS` and `BE` directly under the
resctrl root (`GetResctrlGroupRootDirPath`), whose `schemata` take the class's
`resourceQOSStrategy.<class>.resctrlQOS`:

* L3 CAT: `catRangeStartPercent`..`catRangeEndPercent` of the cache ways (the root's
  `info/L3/cbm_mask`) as a contiguous mask (`CalculateCatL3MaskValue`), on every L3 cache id the
  root `schemata` lists: `L3:0=7ff;1=7ff;`;
* MBA: `mbaPercent` rounded up to a multiple of 10 on Intel; on AMD a bandwidth in Gbps of the
  CCD's 160 (100 % = unlimited, 2048): `MB:0=50;1=50;`.

and the pods' tasks move into their class's group (`reconcileResctrlGroups`): for a class whose
`resctrlQOS.enable` is true, every thread id of every running container of its active pods, and
of each pod's sandbox container (the container cgroup's v1 `cpu/tasks`, v2 `cgroup.threads`), that
the group's `tasks` does not list yet is appended to it, one id a write, sorted. Pods with their own resctrl config (the
`node.koordinator.sh/resctrl` annotation) are left out, as are SYSTEM and class-less pods.

A node whose CPU lacks the `cat_l3` or the `mba` flag (Koordinator's `IsSupportResctrl` wants both),
or without the resctrl filesystem mounted (or without L3 CAT) is reported unavailable, in the
status and in `koordlet_interface_unavailable`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from policies.apis.constants import ANNOTATION_RESCTRL, QoSClass
from policies.apis.objects import annotations_of, status_of
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups.ids import RefusedPath, parse_container_id
from scheduler_plugins.koordlet.cgroups.resources import CPU_TASKS
from scheduler_plugins.koordlet.host import INTERFACE_RESCTRL, PROC, RESCTRL, HostWrite
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME: Final = "ResctrlReconcile"
#: QoS class group -> the resourceQOSStrategy key it follows
GROUPS: Final = {"LSR": "lsrClass", "LS": "lsClass", "BE": "beClass"}
#: getPodResctrlGroup: a pod's (defaulted) QoS class -> its group
GROUP_OF_CLASS: Final = {QoSClass.LSE: "LSR", QoSClass.LSR: "LSR", QoSClass.LS: "LS", QoSClass.BE: "BE"}
AMD_VENDOR_ID: Final = "AuthenticAMD"
AMD_CCD_MAX_MB_GBPS: Final = 25 * 8 * 0.8
AMD_CCD_UNLIMITED_MB: Final = "2048"


class ResctrlError(ValueError):
    pass


def l3_mask(cbm: int, start: int, end: int) -> str:
    """CalculateCatL3MaskValue: the ways in [start %, end %) of the root mask, as hex."""
    if cbm <= 0 or (cbm + 1) & cbm:
        raise ResctrlError(f"illegal cbm {cbm:x}")
    if start < 0 or end > 100 or end <= start:
        raise ResctrlError(f"illegal l3 cat percent: start {start}, end {end}")
    ways = cbm.bit_length()
    start_way = math.ceil(ways * start / 100)
    end_way = math.ceil(ways * end / 100)
    return format((1 << end_way) - (1 << start_way), "x")


def mba_value(percent: int, vendor: str) -> str | None:
    """calculateMbaPercentForGroup: None when the percent is not in [1, 100]."""
    if percent <= 0 or percent > 100:
        return None
    if vendor == AMD_VENDOR_ID:
        return AMD_CCD_UNLIMITED_MB if percent == 100 else str(int(AMD_CCD_MAX_MB_GBPS * percent / 100))
    return str(percent if percent % 10 == 0 else percent // 10 * 10 + 10)


def cache_ids(root_schemata: str) -> list[int]:
    """The L3 cache ids of the root group's `schemata` (`L3:0=fff;1=fff`)."""
    for line in root_schemata.splitlines():
        kind, _, domains = line.strip().partition(":")
        if kind.strip() == "L3":
            return sorted(int(d.split("=")[0]) for d in domains.split(";") if "=" in d)
    return []


def schemata_line(kind: str, ids: list[int], text: str) -> str:
    """ResctrlSchemataRaw.L3String / MBString: every id the same value, a `;` after each."""
    return f"{kind}:" + "".join(f"{i}={text};" for i in ids) + "\n"


def cpu_supports_resctrl(cpuinfo: str) -> bool:
    """isCPUSupportResctrl: the cpuinfo flags hold both `cat_l3` and `mba` (Koordinator acts on
    neither alone: IsSupportResctrl)."""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if "flags" in line:
            flags.update(line.split(" "))
    return "cat_l3" in flags and "mba" in flags


def task_ids(text: str | None) -> set[int]:
    """The ids of a `tasks` (or `cgroup.threads`) file, one a line; nothing for a missing file."""
    out: set[int] = set()
    for line in (text or "").split():
        try:
            out.add(int(line))
        except ValueError:
            continue
    return out


def sandbox_dir(inp: RoundInput, pod: PodView) -> str | None:
    """GetPodSandboxContainerID: the one child of the pod's cpuset cgroup that is none of its
    (init) containers' — the sandbox — or None (no container runs yet, or not exactly one such
    child: a container is not ready)."""
    status = status_of(pod.pod)
    if not status.get("containerStatuses"):
        return None
    known = set()
    for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        raw = (entry or {}).get("containerID")
        if not raw:
            continue
        try:
            runtime, cid = parse_container_id(raw)
        except RefusedPath:  # an ID we cannot trust: which child is the sandbox is unknown this round
            return None
        known.add(inp.layout.container_dir("", runtime, cid).lstrip("/"))
    candidates = [
        name
        for name in inp.subdirs(pod.dir, "cpuset")
        if name not in known and not (name.startswith("crio-") and name.endswith(".scope"))
    ]
    return f"{pod.dir}/{candidates[0]}" if len(candidates) == 1 else None


def new_task_ids(inp: RoundInput, pod: PodView, known: set[int]) -> set[int]:
    """getPodCgroupNewTaskIds: the thread ids of the pod's running containers and of its sandbox
    container (VM-based runtimes run the pod there) not in `known`."""
    dirs = [c.dir for c in pod.containers if c.dir is not None]
    sandbox = sandbox_dir(inp, pod)
    ids: set[int] = set()
    for cgroup in [*dirs, *([sandbox] if sandbox else [])]:
        raw = inp.read(cgroup, CPU_TASKS)
        ids |= task_ids(raw if isinstance(raw, str) else None)
    return ids - known


def _percent(spec: Mapping[str, Any], key: str) -> int | None:
    raw = spec.get(key)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


class ResctrlReconcile:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.RDT_RESCTRL) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        strategy = slo.spec.get("resourceQOSStrategy") if slo is not None else None
        if type(strategy) is not dict and not isinstance(strategy, Mapping):  # `dict` first: the ABC check costs more
            result.status["reason"] = "the NodeSLO has no resourceQOSStrategy"
            return result
        host = inp.host
        cpuinfo = host.read(PROC, "cpuinfo")
        if cpuinfo is None:
            return result.lacks(INTERFACE_RESCTRL, "cannot read cpuinfo under the proc root")
        if not cpu_supports_resctrl(cpuinfo):
            return result.lacks(INTERFACE_RESCTRL, "the CPU has not both the cat_l3 and mba flags (cpuinfo)")
        root_schemata = host.read(RESCTRL, "schemata")
        if root_schemata is None:
            return result.lacks(INTERFACE_RESCTRL, "no resctrl filesystem mounted")
        cbm_text = host.read(RESCTRL, "info/L3/cbm_mask")
        ids = cache_ids(root_schemata)
        if cbm_text is None or not ids:
            return result.lacks(INTERFACE_RESCTRL, "resctrl has no L3 cache allocation (info/L3/cbm_mask)")
        try:
            cbm = int(cbm_text.strip(), 16)
        except ValueError:
            return result.lacks(INTERFACE_RESCTRL, f"unreadable info/L3/cbm_mask {cbm_text.strip()!r}")
        vendor = AMD_VENDOR_ID if AMD_VENDOR_ID in cpuinfo else "GenuineIntel"
        has_mba = host.exists(RESCTRL, "info/MB")
        applied: dict[str, str] = {}
        for group, key in GROUPS.items():
            qos = strategy.get(key)
            resctrl = qos.get("resctrlQOS") if isinstance(qos, Mapping) else None
            if not isinstance(resctrl, Mapping):
                continue
            path = f"{group}/schemata"
            start, end = _percent(resctrl, "catRangeStartPercent"), _percent(resctrl, "catRangeEndPercent")
            if start is not None and end is not None:
                try:
                    mask = l3_mask(cbm, start, end)
                except ResctrlError as exc:
                    result.status[f"{group}Error"] = str(exc)
                else:
                    result.host_writes.append(HostWrite(NAME, RESCTRL, path, schemata_line("L3", ids, mask), True))
                    applied[group] = f"L3={mask}"
            mba = _percent(resctrl, "mbaPercent")
            if mba is not None:
                text = mba_value(mba, vendor)
                if text is not None and has_mba:
                    result.host_writes.append(HostWrite(NAME, RESCTRL, path, schemata_line("MB", ids, text), True))
                    applied[group] = f"{applied.get(group, '')} MB={text}".strip()
                elif text is not None:
                    result.status["mba"] = "resctrl has no memory bandwidth allocation (info/MB)"
        result.status["groups"] = applied
        self._move_tasks(inp, strategy, result)
        return result

    def _move_tasks(self, inp: RoundInput, strategy: Mapping[str, Any], result: StrategyResult) -> None:
        """reconcileResctrlGroups: append each enabled class's new task ids to its group's `tasks`."""
        enabled = {group for group, key in GROUPS.items() if _resctrl_enabled(strategy.get(key))}
        known = {group: task_ids(inp.host.read(RESCTRL, f"{group}/tasks")) for group in enabled}
        new: dict[str, set[int]] = {group: set() for group in enabled}
        for pod in inp.pods:
            group = GROUP_OF_CLASS.get(pod.qos)
            if group not in enabled or ANNOTATION_RESCTRL in annotations_of(pod.pod):
                continue
            new[group] |= new_task_ids(inp, pod, known[group])
        moved: dict[str, int] = {}
        for group in GROUPS:
            if group not in enabled:
                continue
            ids = sorted(new[group])
            moved[group] = len(ids)
            if not ids:
                continue
            text = "".join(f"{i}\n" for i in ids)
            result.host_writes.append(
                HostWrite(NAME, RESCTRL, f"{group}/tasks", text, True, each_line=True, cached=False)
            )
        result.status["tasks"] = moved if enabled else "no class has resctrlQOS.enable"


def _resctrl_enabled(qos: object) -> bool:
    resctrl = qos.get("resctrlQOS") if isinstance(qos, Mapping) else None
    return isinstance(resctrl, Mapping) and resctrl.get("enable") is True
