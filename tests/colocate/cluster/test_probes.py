"""Every component's /healthz, /readyz and /metrics come from one listener (colocate.cluster.probes):
the manager's and the descheduler's answer as the webhook's do, and are bounded the same way."""

from __future__ import annotations

import asyncio

import aiohttp
from prometheus_client import CollectorRegistry, Counter

from colocate.cluster.probes import ProbeListeners, component_answers, readiness_of
from scheduler_plugins.descheduler.service import health_servers


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("colocate_test_rounds_total", "Rounds.", registry=registry).inc()
    return registry


async def _get(session: aiohttp.ClientSession, url: str, method: str = "GET") -> tuple[int, str]:
    async with session.request(method, url) as response:
        return response.status, await response.text()


async def test_readyz_says_why_not_until_ready_and_healthz_stays_ok() -> None:
    synced = False
    probes = ProbeListeners(
        ("127.0.0.1", 0),
        ("127.0.0.1", 0),
        component_answers(lambda: (synced, "ok" if synced else "waiting for Pod"), _registry()),
    )
    await probes.start()
    try:
        base = f"http://127.0.0.1:{probes.ports[0]}"
        async with aiohttp.ClientSession() as session:
            assert await _get(session, f"{base}/readyz") == (503, "waiting for Pod")
            assert await _get(session, f"{base}/healthz") == (200, "ok")
            synced = True
            assert await _get(session, f"{base}/readyz") == (200, "ok")
            status, body = await _get(session, f"{base}/metrics")
            assert status == 200 and "colocate_test_rounds_total 1.0" in body
            assert (await _get(session, f"{base}/nothing"))[0] == 404
            assert (await _get(session, f"{base}/healthz", "POST"))[0] == 405
    finally:
        await probes.stop()


async def test_the_descheduler_serves_healthz_and_metrics_apart_and_no_readyz() -> None:
    probes = health_servers("127.0.0.1:0", "127.0.0.2:0", lambda: False, _registry())
    assert sorted(map(sorted, probes.listeners.values())) == [["/healthz"], ["/metrics"]]
    await probes.start()
    try:
        listening = zip(probes.listeners, probes.ports, strict=True)
        health, metrics = (f"http://{host}:{port}" for (host, _), port in listening)
        async with aiohttp.ClientSession() as session:
            assert await _get(session, f"{health}/healthz") == (503, "cluster state not listed yet")
            assert (await _get(session, f"{health}/readyz"))[0] == 404
            assert (await _get(session, f"{health}/metrics"))[0] == 404
            assert (await _get(session, f"{metrics}/metrics"))[0] == 200
    finally:
        await probes.stop()


async def test_a_client_opening_many_connections_gives_up_its_oldest_for_a_new_one() -> None:
    probes = ProbeListeners(("127.0.0.1", 0), None, component_answers(readiness_of(lambda: True, ""), _registry()))
    await probes.start()
    listener = probes.running[0]
    listener.max_connections = 4
    try:
        held = [await asyncio.open_connection("127.0.0.1", probes.ports[0]) for _ in range(6)]
        async with aiohttp.ClientSession() as session:
            assert await _get(session, f"http://127.0.0.1:{probes.ports[0]}/healthz") == (200, "ok")
        assert listener.open <= 4
        for _, writer in held:
            writer.close()
    finally:
        await probes.stop()
