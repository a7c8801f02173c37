"""A scan of the --cluster directory that does not return is reported, and never holds the server."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from tests.support.wait import wait_for
from webhook.registry import default_routes
from webhook.serve import ServeConfig, make_source
from webhook.snapshots import DirectorySnapshots
from webhook.state import StateHolder


async def test_a_stuck_scan_is_reported_every_period_and_its_result_still_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    snapshots = DirectorySnapshots(tmp_path, interval=0.01, stuck_after=0.1)
    release = threading.Event()
    real_scan = snapshots.scan

    def hung_scan():  # a hung network mount: the first scan blocks until released
        release.wait(10)
        return real_scan()

    snapshots.scan = hung_scan  # type: ignore[method-assign]
    reloads: list[object] = []
    state = StateHolder()
    with caplog.at_level(logging.ERROR, logger="colocate"):
        task = asyncio.create_task(snapshots.run(state, reloads.append))
        await wait_for(lambda: reloads.count(None) >= 2, timeout=5, message="two stuck-scan reports")
        assert not state.ready
        release.set()
        await wait_for(lambda: state.ready, timeout=5, message="the scan's result to be published")
        task.cancel()
    assert "has not returned" in caplog.text


def test_serve_passes_the_stuck_scan_period_to_the_directory_source(tmp_path: Path) -> None:
    source = make_source(
        ServeConfig(cluster=tmp_path, cert_dir=tmp_path, stuck_scan_after=7.0), default_routes(), metrics=None
    )
    assert isinstance(source, DirectorySnapshots) and source.stuck_after == 7.0
