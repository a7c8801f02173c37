"""Fixtures for the certificate tests: a fixed clock, the API stand-in seeded with both webhook
configurations (overriding tests/conftest.py's empty one), and `certs.kube.Cluster` pointed at it
through a real kubeconfig.

The `kubernetes` client is synchronous: tests call it through `asyncio.to_thread` so that the
stand-in, running on the test's event loop, can answer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from certs.kube import Cluster
from colocate.cluster.client import api_client
from colocate.cluster.files import read_manifest_file
from tests.support.apiserver import ApiServer
from tests.support.webhook_manifests import WEBHOOKS_FILE

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer(bookmark_interval=0.2) as server:
        for obj in read_manifest_file(WEBHOOKS_FILE):
            server.apply(obj)
        yield server


@pytest.fixture
def cluster(kubeconfig: Path) -> Cluster:
    return Cluster(api_client(kubeconfig))
