"""`/healthz`, `/readyz` and `/metrics` of a cluster component (the descheduler, the manager), served
by a small stdlib HTTP server in a daemon thread on the configured bind addresses.

`/healthz` answers 200 while the process serves (and, for components that pass `ready` as the
health check too, once the cluster state is listed); `/readyz` answers 200 once `ready()` says so;
`/metrics` is the Prometheus exposition of one registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class HealthServer:
    """Some of `/healthz`, `/readyz`, `/metrics` on one address, in a daemon thread."""

    def __init__(
        self,
        address: tuple[str, int],
        paths: set[str],
        ready: Callable[[], bool],
        registry: CollectorRegistry,
        healthy: Callable[[], bool] | None = None,
        name: str = "health-http",
        detail: Callable[[], tuple[bool, str]] | None = None,
    ) -> None:
        alive = healthy or ready
        said = detail or (lambda: (ready(), "ok" if ready() else "cluster state not listed yet"))

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's spelling)
                path = self.path.split("?", 1)[0]
                if path == "/readyz" and path in paths:  # says what is missing or stale
                    ok, text = said()
                    self._send(200 if ok else 503, "text/plain", text.encode())
                elif path == "/healthz" and path in paths:
                    ok = alive()
                    self._send(200 if ok else 503, "text/plain", b"ok" if ok else b"cluster state not listed yet")
                elif path == "/metrics" and "/metrics" in paths:
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
                else:
                    self._send(404, "text/plain", b"not found")

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(address, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
