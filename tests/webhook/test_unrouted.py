"""Every answer, routed or not, names no versions in its Server header, and says Connection: close
while the server drains; an unknown path is a 404 (the probes and /metrics too: they have their own
listener) and an admission path asked with another method a 405."""

from __future__ import annotations

import ssl

import aiohttp

from certs.material import CertPaths
from tests.support.admission import admission_review
from tests.support.builders import make_pod
from tests.support.listener import listening
from webhook.metrics import WebhookMetrics
from webhook.port import build_server
from webhook.registry import default_routes
from webhook.serve import tls_context
from webhook.server import Lifecycle
from webhook.state import StateHolder


async def test_unknown_paths_and_methods_get_our_headers(cert_paths: CertPaths):
    lifecycle = Lifecycle()
    server = build_server(default_routes(), StateHolder(), WebhookMetrics(), lifecycle=lifecycle)
    trust = ssl.create_default_context(cafile=str(cert_paths.ca))
    async with listening(server, tls_context(cert_paths)) as base:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as session:

            async def answer(method: str, path: str, **kwargs: object) -> tuple[int, dict[str, str]]:
                async with session.request(method, base + path, **kwargs) as response:  # type: ignore[arg-type]
                    await response.read()
                    return response.status, dict(response.headers)

            status, headers = await answer("GET", "/no-such-path")
            assert status == 404 and headers["Server"] == "colocate"
            status, headers = await answer("GET", "/mutate-pod")
            assert status == 405 and headers["Allow"] == "POST" and headers["Server"] == "colocate"
            for probe in ("/healthz", "/readyz", "/metrics"):  # on their own listener (webhook.probes)
                status, headers = await answer("GET", probe)
                assert status == 404 and headers["Server"] == "colocate", probe
            status, headers = await answer("POST", "/mutate-pod", json=admission_review(make_pod("p")))
            assert status == 200 and headers["Server"] == "colocate" and headers.get("Connection") != "close"

            lifecycle.draining = True
            for method, path, kwargs in (
                ("GET", "/no-such-path", {}),
                ("POST", "/mutate-pod", {"json": admission_review(make_pod("p"))}),
            ):
                status, headers = await answer(method, path, **kwargs)
                assert headers["Connection"] == "close" and headers["Server"] == "colocate", (method, path)
