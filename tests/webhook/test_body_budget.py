"""Request bodies count against the bytes all bodies may hold at once (`--body-budget-bytes`), also
when a body has arrived whole with its headers and is taken without waiting."""

from __future__ import annotations

import json
import ssl

import aiohttp

from certs.material import CertPaths
from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_pod
from tests.support.listener import listening
from webhook.metrics import WebhookMetrics
from webhook.port import build_server
from webhook.registry import default_routes
from webhook.serve import tls_context
from webhook.state import StateHolder


async def _post_twice(cert_paths: CertPaths, max_body_bytes: int, body: bytes) -> list[int]:
    state = StateHolder()
    state.publish(make_snapshot())
    server = build_server(default_routes(), state, WebhookMetrics(), max_body_bytes=max_body_bytes)
    statuses = []
    trust = ssl.create_default_context(cafile=str(cert_paths.ca))
    async with listening(server, tls_context(cert_paths)) as base:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as session:
            for _ in range(2):  # a new connection each time: a refusal closes its connection
                async with session.post(
                    f"{base}/mutate-pod", data=body, headers={"Content-Type": "application/json", "Connection": "close"}
                ) as answer:
                    statuses.append(answer.status)
    return statuses


async def test_a_whole_body_larger_than_the_budget_is_refused_as_busy(cert_paths: CertPaths):
    body = json.dumps(admission_review(make_pod("p"))).encode()
    assert await _post_twice(cert_paths, len(body) - 1, body) == [503, 503]


async def test_a_whole_body_gives_its_bytes_back_after_its_answer(cert_paths: CertPaths):
    body = json.dumps(admission_review(make_pod("p"))).encode()
    assert await _post_twice(cert_paths, len(body), body) == [200, 200]  # the second fits only if the first gave back
