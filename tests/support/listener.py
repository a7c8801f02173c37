"""An in-process webhook port on 127.0.0.1: `webhook.port`'s aiohttp server behind the same gate
and TLS as `colocate serve`, for tests that want the server's objects (state, metrics) at hand."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.support.cluster import free_port
from webhook.connections import ConnectionLimits
from webhook.gate import GatedSite
from webhook.port import WebhookPort


@asynccontextmanager
async def listening(
    server: WebhookPort, tls: ssl.SSLContext, limits: ConnectionLimits = ConnectionLimits()
) -> AsyncIterator[str]:
    """Serve `server` on a free port while the block runs; yields its https:// base URL."""
    port = free_port()
    site = GatedSite(server.connection, "127.0.0.1", port, tls_context=tls, limits=limits)
    await site.start()
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        await site.stop()
        await server.shutdown(1.0)
