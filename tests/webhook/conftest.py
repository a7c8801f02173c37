"""A real HTTPS webhook server on 127.0.0.1, in-process, with certificates from `certs.generate`."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from certs.generate import ensure_serving_certs
from certs.material import CertPaths
from policies.admission.snapshot import ClusterSnapshot
from tests.support.cluster import free_port
from tests.support.listener import listening
from tests.support.served import Served
from webhook.metrics import WebhookMetrics
from webhook.port import build_server
from webhook.probes import probe_listeners
from webhook.registry import default_routes
from webhook.serve import tls_context
from webhook.server import Lifecycle
from webhook.state import StateHolder


@pytest.fixture(scope="session")
def cert_paths(tmp_path_factory: pytest.TempPathFactory) -> CertPaths:
    paths, _ = ensure_serving_certs(tmp_path_factory.mktemp("certs"))
    return paths


@dataclass
class RunningServer:
    url: str  # the webhook port (https)
    probes: str  # /healthz, /readyz and /metrics, on their own listener (http)
    state: StateHolder
    metrics: WebhookMetrics
    session: aiohttp.ClientSession

    def publish(self, snapshot: ClusterSnapshot) -> None:
        self.state.publish(snapshot)

    async def post(self, path: str, payload: object = None, *, data: bytes | None = None) -> aiohttp.ClientResponse:
        if data is None:
            return await self.session.post(self.url + path, json=payload)
        return await self.session.post(self.url + path, data=data, headers={"Content-Type": "application/json"})


@asynccontextmanager
async def start_server(
    cert_paths: CertPaths, max_body: int = 8 * 1024 * 1024, rand: int | None = None
) -> AsyncIterator[RunningServer]:
    state, metrics = StateHolder(), WebhookMetrics()
    kwargs = {"rand_int": (lambda n: rand)} if rand is not None else {}
    server = build_server(default_routes(), state, metrics, max_body=max_body, **kwargs)  # type: ignore[arg-type]
    probe_address = ("127.0.0.1", free_port())
    probes = probe_listeners(probe_address, probe_address, state, metrics, Lifecycle(), exposition_cache=0)
    await probes.start()
    try:
        async with listening(server, tls_context(cert_paths)) as url:
            client_tls = ssl.create_default_context(cafile=str(cert_paths.ca))
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_tls)) as session:
                yield RunningServer(url, f"http://127.0.0.1:{probe_address[1]}", state, metrics, session)
    finally:
        await probes.stop()


@pytest.fixture
async def server(cert_paths: CertPaths) -> AsyncIterator[RunningServer]:
    async with start_server(cert_paths) as running:
        yield running


@pytest.fixture
async def small_body_server(cert_paths: CertPaths) -> AsyncIterator[RunningServer]:
    async with start_server(cert_paths, max_body=4096) as running:
        yield running


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """`served(*flags, **options)`: a ready `colocate serve` process, killed at the end of the test."""
    servers: list[Served] = []

    def start(*extra: str, **options: Any) -> Served:
        servers.append(Served(tmp_path, *extra, **options))
        return servers[-1].wait_ready()

    yield start
    for server in servers:
        server.kill()
