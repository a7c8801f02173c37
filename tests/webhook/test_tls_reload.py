"""The live TLS context: new handshakes get the new chain, open connections keep theirs, a bad pair is refused."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from certs.generate import generate_material, utcnow
from certs.material import CERT_FILE, KEY_FILE, CertPaths, Material, pem_certs, pem_key, read_directory, write_directory
from tests.support.cluster import free_port
from tests.support.tls import served_certificate
from tests.support.wait import wait_for
from webhook.connections import ConnectionLimits
from webhook.gate import GatedSite
from webhook.metrics import WebhookMetrics
from webhook.port import build_server
from webhook.registry import default_routes
from webhook.state import StateHolder
from webhook.tls_reload import CertReloader, LoadedChain


def client(material: Material) -> aiohttp.ClientSession:
    context = ssl.create_default_context(cadata=pem_certs([material.ca]).decode())
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=1))


class Running:
    def __init__(self, directory: Path) -> None:
        self.events: list[tuple[LoadedChain | None, str]] = []
        self.reloader = CertReloader(
            CertPaths(directory), interval=0.05, on_reload=lambda chain, error: self.events.append((chain, error))
        )
        self.port = free_port()


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    write_directory(tmp_path, generate_material(["localhost"], utcnow()))
    served = Running(tmp_path)

    # the webhook port as `colocate serve` runs it: the gate starts TLS with the live context
    server = build_server(default_routes(), StateHolder(), WebhookMetrics())
    site = GatedSite(
        server.connection,
        "127.0.0.1",
        served.port,
        tls_context=served.reloader.load_initial(),
        limits=ConnectionLimits(),
    )
    await site.start()
    yield served
    await site.stop()
    await server.shutdown(1.0)


async def test_new_handshakes_get_the_new_chain_while_open_connections_keep_working(
    running: Running, tmp_path: Path
) -> None:
    before = read_directory(tmp_path)
    async with client(before) as kept:  # trusts only the old CA: it can only succeed on its open connection
        assert (await kept.get(f"https://localhost:{running.port}/mutate-pod")).status == 405  # answered over TLS
        new = generate_material(["localhost"], utcnow())
        write_directory(tmp_path, Material(new.ca_key, (new.ca, before.ca), new.cert, new.key))
        assert await running.reloader.check_once()
        assert not await running.reloader.check_once()  # no change, no reload
        for _ in range(3):
            async with kept.get(f"https://localhost:{running.port}/mutate-pod") as response:
                assert response.status == 405
    served = await asyncio.to_thread(served_certificate, running.port, pem_certs([new.ca]))
    assert served == new.cert
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.to_thread(served_certificate, running.port, pem_certs([before.ca]))
    assert [(chain.cert, chain.ca, error) for chain, error in running.events if chain] == [(new.cert, new.ca, "")]


async def test_a_mismatched_pair_is_refused_and_the_old_chain_keeps_serving(running: Running, tmp_path: Path) -> None:
    current = read_directory(tmp_path)
    stranger = generate_material(["localhost"], utcnow())
    (tmp_path / CERT_FILE).unlink()
    (tmp_path / CERT_FILE).write_bytes(pem_certs([stranger.cert]))  # a writer that swaps files one by one
    assert not await running.reloader.check_once()
    assert running.events == []  # once may be a writer caught between the two files
    assert not await running.reloader.check_once()
    assert not await running.reloader.check_once()  # the same bad pair is reported once
    assert [error for _, error in running.events] == [
        "the key does not match the certificate (files caught mid-update?)"
    ]
    assert await asyncio.to_thread(served_certificate, running.port, pem_certs([current.ca])) == current.cert

    (tmp_path / KEY_FILE).unlink()
    (tmp_path / KEY_FILE).write_bytes(pem_key(stranger.key))  # ... and now the pair is complete
    assert await running.reloader.check_once()
    assert await asyncio.to_thread(served_certificate, running.port, pem_certs([stranger.ca])) == stranger.cert


async def test_the_reload_loop_picks_up_a_symlink_swap_by_itself(running: Running, tmp_path: Path) -> None:
    task = asyncio.create_task(running.reloader.run())
    try:
        new = generate_material(["localhost"], utcnow())
        write_directory(tmp_path, new)
        await wait_for(
            lambda: running.reloader.current is not None and running.reloader.current.cert == new.cert,
            timeout=2,
            message="the reload loop to load the swapped certificate",
        )
        assert await asyncio.to_thread(served_certificate, running.port, pem_certs([new.ca])) == new.cert
    finally:
        task.cancel()


async def test_a_pair_caught_mid_update_is_not_an_error(running: Running, tmp_path: Path) -> None:
    """A writer that replaces the certificate, then the key: the poll between the two sees a
    mismatched pair; the next one sees the new pair and loads it, and no error is counted."""
    new = generate_material(["localhost"], utcnow())
    (tmp_path / CERT_FILE).write_bytes(pem_certs([new.cert]))
    assert not await running.reloader.check_once()
    (tmp_path / KEY_FILE).write_bytes(pem_key(new.key))
    assert await running.reloader.check_once()
    assert [(chain is not None, error) for chain, error in running.events] == [(True, "")]


async def test_the_pair_is_read_through_one_version_of_a_projected_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubelet's atomic writer: tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>; the key is read
    from the directory the certificate resolved to, even when `..data` moves between the reads."""
    old, new = (generate_material(["localhost"], utcnow()) for _ in range(2))
    for version, material in (("..v1", old), ("..v2", new)):
        write_directory(tmp_path / version, material)
    (tmp_path / "..data").symlink_to("..v1")
    for name in (CERT_FILE, KEY_FILE):
        (tmp_path / name).symlink_to(Path("..data") / name)
    read_bytes = Path.read_bytes

    def read_then_swap(path: Path) -> bytes:  # the swap lands right after the certificate is read
        data = read_bytes(path)
        if path.name == CERT_FILE and (tmp_path / "..data").readlink() == Path("..v1"):
            (tmp_path / "..data").unlink()
            (tmp_path / "..data").symlink_to("..v2")
        return data

    monkeypatch.setattr(Path, "read_bytes", read_then_swap)
    assert CertReloader(CertPaths(tmp_path))._read() == (pem_certs([old.cert]), pem_key(old.key))
