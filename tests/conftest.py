"""Fixtures every test tree shares: the API-server stand-in and a kubeconfig pointing at it, and the
real control plane for tests marked `realapi` (`realapi`, `realapi_namespace`, `realapi_control_plane`,
`realapi_controller_manager`, `realapi_scheduler`: tests/support/realapi_fixtures.py).

A directory whose tests need the stand-in seeded overrides `api` in its own conftest (tests/certs
seeds the webhook configurations); `kubeconfig` follows the override.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.apiserver import ApiServer
from tests.support.realapi_fixtures import (  # noqa: F401 - fixtures and hooks, found here by pytest
    _realapi_for_marked,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_runtest_makereport,
    realapi,
    realapi_control_plane,
    realapi_controller_manager,
    realapi_namespace,
    realapi_scheduler,
)


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer(bookmark_interval=0.2) as server:
        yield server


@pytest.fixture
def kubeconfig(api: ApiServer, tmp_path: Path) -> Path:
    return api.write_kubeconfig(tmp_path / "kubeconfig")
