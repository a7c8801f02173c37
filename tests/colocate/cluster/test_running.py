"""What a long-running component does around its rounds (`colocate.cluster.running`): a bounded
run gives up on a cluster that is never listed, in one line; what runs beside the rounds is
stopped however they end; and a directory read with `scan_all_or_refuse` refuses any file left out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from colocate.cluster import running
from colocate.cluster.files import scan_all_or_refuse
from colocate.cluster.running import Beside, NotListed, wait_listed
from colocate.cluster.store import ClusterStore
from policies.apis.manifests import ManifestError


class NeverListed:
    on_synced: Callable[[], None] | None = None
    synced = False


class Listed:
    on_synced: Callable[[], None] | None = None
    synced = True


async def test_a_bounded_run_gives_up_on_a_cluster_never_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(running, "LISTING_TIMEOUT_SECONDS", 0.01)
    with pytest.raises(NotListed, match=r"^the cluster state was not listed within 0.01s$"):
        await wait_listed(NeverListed(), bounded=True)


async def test_a_listed_cluster_is_waited_for_no_longer() -> None:
    await asyncio.wait_for(wait_listed(Listed(), bounded=False), 1.0)


async def test_what_runs_beside_the_rounds_stops_when_they_fail() -> None:
    stopped: list[str] = []
    forever = asyncio.Event()

    async def stop() -> None:
        stopped.append("probes")

    with pytest.raises(RuntimeError):
        async with Beside() as beside:
            beside.start(forever.wait())
            beside.stops.append(stop)
            raise RuntimeError("the rounds failed")
    assert all(task.done() for task in beside.tasks) and stopped == ["probes"]


def test_a_strict_scan_refuses_a_file_left_out(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n")
    (tmp_path / "broken.yaml").write_text("kind: [\n")
    with pytest.raises(ManifestError, match=r"broken\.yaml"):
        scan_all_or_refuse(tmp_path, ClusterStore(), "--cluster DIR")
    with pytest.raises(ManifestError, match=r"^--cluster DIR: not a directory$"):
        scan_all_or_refuse(tmp_path / "missing", ClusterStore(), "--cluster DIR")
