"""The pod and container identities a cgroup path is built from, checked before they become paths.

The agent runs as root and builds its paths from `metadata.uid` and `status.containerStatuses[].
containerID`, which anyone who may write `pods/status` controls. A UID must be a UUID (what the API
server assigns) and a container ID `<runtime>://<64 hex>` for a runtime Koordinator knows
(`pkg/koordlet/util/system/cgroup_driver.go`: docker, containerd, pouch, cri-o); anything else is a
`Refusal`, never a path.
"""

from __future__ import annotations

import enum
import re
from typing import Final

_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH_ID: Final = re.compile(r"[0-9a-f]{64}")
RUNTIMES: Final = frozenset({"docker", "containerd", "pouch", "cri-o"})


class Refusal(enum.StrEnum):
    """Why a path was refused: the closed label set of `koordlet_cgroup_path_refusals_total`."""

    POD_UID = "pod_uid"
    CONTAINER_ID = "container_id"
    OUTSIDE_ROOT = "outside_root"


class RefusedPath(ValueError):
    """A pod field that would make a path outside the pod's cgroup."""

    def __init__(self, reason: Refusal, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def checked_pod_uid(uid: object) -> str:
    """`uid` when it is a UUID; else `RefusedPath`."""
    if isinstance(uid, str) and _UUID.fullmatch(uid):
        return uid
    raise RefusedPath(Refusal.POD_UID, f"pod UID {str(uid)[:80]!r} is not a UUID")


def parse_container_id(raw: object) -> tuple[str, str]:
    """(runtime, hash id) of `<runtime>://<64 hex>`; else `RefusedPath`."""
    runtime, sep, cid = str(raw).partition("://")
    if sep and runtime in RUNTIMES and _HASH_ID.fullmatch(cid):
        return runtime, cid
    raise RefusedPath(
        Refusal.CONTAINER_ID,
        f"container ID {str(raw)[:100]!r} is not <runtime>://<64 hex> of {', '.join(sorted(RUNTIMES))}",
    )
