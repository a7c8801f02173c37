"""Kubelet's part in Secret volumes: project a Secret's keys into pod directories by symlink swap.

Written independently of `certs.material` (kubelet's AtomicWriter: a new timestamped directory, then
a rename of the `..data` symlink), so tests of colocate's reload do not run colocate's own writer.
"""

from __future__ import annotations

import asyncio
import base64
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.support.apiserver import ApiServer
from tests.support.apistore import NotFound


def project(data: dict[str, str], directory: Path, keys: Sequence[str]) -> bool:
    files = {key: base64.b64decode(data.get(key, "")) for key in keys}
    if all((directory / key).is_file() and (directory / key).read_bytes() == content for key, content in files.items()):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    version = Path(tempfile.mkdtemp(dir=directory, prefix="..kubelet-"))
    for key, content in files.items():
        (version / key).write_bytes(content)
    link = directory / "..data_tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(version.name)
    os.replace(link, directory / "..data")
    for key in keys:
        if not (directory / key).is_symlink():
            (directory / key).unlink(missing_ok=True)
            (directory / key).symlink_to(f"..data/{key}")
    return True


async def sync_secret(
    api: ApiServer,
    namespace: str,
    name: str,
    directories: Sequence[Path],
    keys: Sequence[str] = ("ca.crt", "tls.crt", "tls.key"),
    period: float = 0.1,
) -> None:
    """Keep `directories` in step with the Secret until cancelled (kubelet's periodic volume sync)."""
    while True:
        try:
            data = api.store.get(api.by_kind["Secret"], namespace, name).get("data") or {}
        except NotFound:
            data = None
        if data is not None:
            for directory in directories:
                project(data, directory, keys)
        await asyncio.sleep(period)  # the sync period is the behaviour: kubelet re-projects on a timer
