"""One snapshot of the cluster for a one-shot command: from a directory, or listed from the API server.

Both go through the webhook's own sources (`webhook.snapshots`), so `colocate audit` sees exactly
what `colocate serve` would: the same kinds, parsed the same way, with the same problems.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from kubernetes import client

from policies.snapshot import ClusterSnapshot
from webhook.registry import Registry
from webhook.snapshots import ApiServerSnapshots, DirectorySnapshots
from webhook.state import StateHolder
from webhook.watched import watched_kinds

log = logging.getLogger("colocate.audit")


def directory_snapshot(root: Path) -> ClusterSnapshot:
    """Every object below `root`, read once (ManifestError when the directory cannot be read)."""
    snapshot = DirectorySnapshots(root).scan()
    assert snapshot is not None  # the first scan always builds one
    return snapshot


async def api_snapshot(api: client.ApiClient, registry: Registry, timeout: float) -> ClusterSnapshot:
    """List every kind the routes read, once; TimeoutError when that takes longer than `timeout`."""
    source = ApiServerSnapshots(api, watched_kinds(registry))
    state = StateHolder()
    loaded = asyncio.Event()
    task = asyncio.create_task(source.run(state, on_reload=lambda snapshot: loaded.set()))
    try:
        await asyncio.wait_for(loaded.wait(), timeout)
        return state.snapshot
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
