"""Fixtures for the certificate tests: a fixed clock, the API stand-in seeded with both webhook
configurations, and `certs.kube.Cluster` pointed at it through a real kubeconfig.

The `kubernetes` client is synchronous: tests call it through `asyncio.to_thread` so that the
stand-in, running on the test's event loop, can answer.
"""
from __future__ import annotations

import datetime as dt
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509

from certs.kube import Cluster
from cluster.client import api_client
from tests.support.apiserver import ApiServer
from tests.support.webhook_manifests import WEBHOOKS_FILE
from cluster.files import read_manifest_file

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
DAY = dt.timedelta(days=1)


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with ApiServer(bookmark_interval=0.2) as server:
        for obj in read_manifest_file(WEBHOOKS_FILE):
            server.apply(obj)
        yield server


@pytest.fixture
def kubeconfig(api: ApiServer, tmp_path: Path) -> Path:
    return api.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def cluster(kubeconfig: Path) -> Cluster:
    return Cluster(api_client(kubeconfig))


def served_certificate(port: int, ca_pem: bytes, name: str = "localhost") -> x509.Certificate:
    """The certificate a new TLS connection gets, verified against `ca_pem` only (raises if it does not)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=name) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)
