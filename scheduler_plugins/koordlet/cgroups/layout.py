"""Where a QoS class, a pod and a container live below the cgroup root (Koordinator's
`pkg/koordlet/util/system/cgroup_driver.go`).

Paths are relative to the root with no leading slash and, on v1, without the subsystem directory:
`kubepods/besteffort/pod<uid>`. The version is detected from the files under the root — a v2
root has `cgroup.controllers`, a v1 root a directory per subsystem — without assuming the root is a
mount point (a test tree, a container's view of the host).
"""

from __future__ import annotations

import enum
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from policies.apis.constants import KubernetesQoSClass
from policies.apis.objects import status_of
from scheduler_plugins.koordlet.cgroups.ids import checked_pod_uid, parse_container_id
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion, Resource

#: the v1 hierarchies a pod's cgroup files live in: every write and kill must stay below one of them
V1_SUBSYSTEMS: Final = ("cpu", "cpuacct", "cpuset", "memory", "blkio", "net_cls")


class CgroupDriver(enum.StrEnum):
    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


class Level(enum.IntEnum):
    """How deep a cgroup is: the leveled update writes top-down by this, and bottom-up back."""

    QOS = 0
    POD = 1
    CONTAINER = 2


class LayoutError(ValueError):
    """The cgroup root is neither a v1 nor a v2 hierarchy."""


def detect_version(root: Path) -> CgroupVersion:
    if (root / "cgroup.controllers").is_file():
        return CgroupVersion.V2
    if any((root / sub).is_dir() for sub in ("cpu", "cpuacct", "memory", "cpuset")):
        return CgroupVersion.V1
    raise LayoutError(f"{root}: not a cgroup root (no cgroup.controllers, no cpu/cpuacct/cpuset/memory directory)")


#: read for every cgroup path (a member of an enum class costs an attribute lookup through its type)
_CGROUPFS: Final = CgroupDriver.CGROUPFS

_CGROUPFS_QOS: Final[dict[str, str]] = {
    KubernetesQoSClass.GUARANTEED: "kubepods",
    KubernetesQoSClass.BURSTABLE: "kubepods/burstable",
    KubernetesQoSClass.BEST_EFFORT: "kubepods/besteffort",
}
_SYSTEMD_QOS: Final[dict[str, str]] = {
    KubernetesQoSClass.GUARANTEED: "kubepods.slice",
    KubernetesQoSClass.BURSTABLE: "kubepods.slice/kubepods-burstable.slice",
    KubernetesQoSClass.BEST_EFFORT: "kubepods.slice/kubepods-besteffort.slice",
}
_RUNTIME_SCOPE: Final = {"containerd": "cri-containerd", "docker": "docker", "cri-o": "crio"}


def container_id(pod: Mapping[str, Any], name: str) -> tuple[str, str] | None:
    """(runtime, id) of a container from the pod's status (`containerd://<64 hex>`), None before it
    runs; `RefusedPath` for an ID that is not its runtime's format."""
    status = status_of(pod)
    if not isinstance(status, Mapping):
        return None
    entries = [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("name") == name and entry.get("containerID"):
            return parse_container_id(entry["containerID"])
    return None


@dataclass(frozen=True)
class CgroupLayout:
    """The version, the driver and the root: every path the agent reads or writes."""

    root: Path
    version: CgroupVersion
    driver: CgroupDriver = CgroupDriver.CGROUPFS

    def qos_dir(self, kube_qos: str) -> str:
        table = _CGROUPFS_QOS if self.driver is _CGROUPFS else _SYSTEMD_QOS
        return table[kube_qos]

    def pod_dir(self, kube_qos: str, uid: object) -> str:
        """The pod's cgroup; `RefusedPath` unless `uid` is a UUID."""
        uid = checked_pod_uid(uid)
        if self.driver is CgroupDriver.CGROUPFS:
            return f"{self.qos_dir(kube_qos)}/pod{uid}"
        escaped = uid.replace("-", "_")
        name = (
            f"kubepods-pod{escaped}.slice"
            if kube_qos == KubernetesQoSClass.GUARANTEED
            else f"kubepods-{kube_qos.lower()}-pod{escaped}.slice"
        )
        return f"{self.qos_dir(kube_qos)}/{name}"

    def container_dir(self, pod_dir: str, runtime: str, cid: str) -> str:
        if self.driver is CgroupDriver.CGROUPFS:
            return f"{pod_dir}/{cid}"
        return f"{pod_dir}/{_RUNTIME_SCOPE.get(runtime, runtime)}-{cid}.scope"

    def path(self, cgroup: str, resource: Resource) -> Path:
        """The file of `resource` in the cgroup `cgroup` (relative) on this machine."""
        return Path(self.path_text(cgroup, resource))

    def path_text(self, cgroup: str, resource: Resource) -> str:
        """`path` as a string, cached: a reconcile round asks for thousands of them."""
        subsystem = resource.subsystem if self.version is CgroupVersion.V1 else ""
        return _join(str(self.root), subsystem, cgroup, resource.file(self.version))

    def bases(self) -> tuple[str, ...]:
        """The resolved directories every path must stay in: each subsystem's (v1), the root (v2)."""
        if self.version is CgroupVersion.V2:
            return (os.path.realpath(self.root),)
        return tuple(os.path.realpath(self.root / sub) for sub in V1_SUBSYSTEMS)

    def inside(self, path: str | Path) -> bool:
        """Whether `path`, every symlink resolved, stays below the cgroup root: checked before any
        write or kill, whatever built the path."""
        resolved = os.path.realpath(path)
        return any(resolved == base or resolved.startswith(base + os.sep) for base in self.bases())

    def dir(self, cgroup: str, subsystem: str) -> Path:
        base = self.root / subsystem if self.version is CgroupVersion.V1 else self.root
        return base / cgroup if cgroup else base


@functools.lru_cache(maxsize=65536)
def _join(root: str, subsystem: str, cgroup: str, file: str) -> str:
    return os.path.join(root, *(part for part in (subsystem, cgroup) if part), file)
