"""Fixtures every test tree shares: the API-server stand-in and a kubeconfig pointing at it.

A directory whose tests need the stand-in seeded overrides `api` in its own conftest (tests/certs
seeds the webhook configurations); `kubeconfig` follows the override.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.apiserver import ApiServer


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
def kubeconfig(api: ApiServer, tmp_path: Path) -> Path:
    return api.write_kubeconfig(tmp_path / "kubeconfig")
