"""Request bodies count against the bytes all bodies may hold at once (`--max-body-bytes`), also
when a body has arrived whole with its headers and is taken without waiting."""
from __future__ import annotations

import json

import aiohttp
from aiohttp import web

from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_pod
from tests.support.cluster import free_port
from webhook.metrics import WebhookMetrics
from webhook.registry import default_routes
from webhook.server import build_app
from webhook.state import StateHolder


async def _post_twice(max_body_bytes: int, body: bytes) -> list[int]:
    state = StateHolder()
    state.publish(make_snapshot())
    runner = web.AppRunner(build_app(default_routes(), state, WebhookMetrics(), max_body_bytes=max_body_bytes),
                           access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    statuses = []
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(2):  # a new connection each time: a refusal closes its connection
                async with session.post(f"http://127.0.0.1:{port}/mutate-pod", data=body,
                                        headers={"Content-Type": "application/json", "Connection": "close"}) as answer:
                    statuses.append(answer.status)
    finally:
        await runner.cleanup()
    return statuses


async def test_a_whole_body_larger_than_the_budget_is_refused_as_busy():
    body = json.dumps(admission_review(make_pod("p"))).encode()
    assert await _post_twice(len(body) - 1, body) == [503, 503]


async def test_a_whole_body_gives_its_bytes_back_after_its_answer():
    body = json.dumps(admission_review(make_pod("p"))).encode()
    assert await _post_twice(len(body), body) == [200, 200]  # the second fits only if the first gave back
