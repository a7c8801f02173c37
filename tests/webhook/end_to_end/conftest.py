from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.apiserver import ApiServer
from tests.support.cluster import (
    ColocateProcess,
    Service,
    cluster_files,
    inject_ca_bundle,
    make_certs,
    namespace_labels,
    seed,
    webhook_configurations,
)
from tests.support.dispatcher import Dispatcher


@pytest.fixture
async def cluster(api: ApiServer, kubeconfig: Path, tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """`await cluster(replicas=1)` → (service, dispatcher) with colocate processes behind them."""
    processes: list[ColocateProcess] = []
    services: list[Service] = []
    dispatchers: list[Dispatcher] = []
    seed(api, cluster_files())
    certs = make_certs(tmp_path / "certs")
    inject_ca_bundle(api, certs.ca)

    async def start(replicas: int = 1) -> tuple[Service, Dispatcher]:
        for _ in range(replicas):
            processes.append(ColocateProcess(kubeconfig, certs.directory, tmp_path / f"colocate-{len(processes)}.log"))
        service = await Service(processes[-replicas:]).start()
        services.append(service)
        dispatcher = Dispatcher(
            lambda: webhook_configurations(api), service.endpoints, lambda name: namespace_labels(api, name)
        )
        dispatchers.append(dispatcher)
        return service, dispatcher

    yield start
    for dispatcher in dispatchers:
        await dispatcher.close()
    for service in services:
        await service.stop()
    for process in processes:
        process.kill()
