"""How many connections the webhook port may hold, and how long one may take to be useful.

The limits are read at the CLI edge (`colocate serve --max-connections --first-request-timeout
--idle-timeout --max-body-bytes`) and enforced by `webhook.gate`; this module is light so the CLI can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

DEFAULT_MAX_CONNECTIONS: Final = 1000
DEFAULT_FIRST_REQUEST_TIMEOUT: Final = 10.0
DEFAULT_IDLE_TIMEOUT: Final = 30.0
DEFAULT_MAX_BODY: Final = 8 * 1024 * 1024  # one request body (--max-body)
DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024 * 1024  # request bodies held at once (webhook.http1.BodyBudget)
#: the sizing rule of docs/serve.md, measured by benchmarks/hostile_bench.py (idle): a server
#: process at rest, and what each open connection adds (TLS and HTTP buffers)
MEMORY_BASE_MIB: Final = 100
MEMORY_PER_CONNECTION_KIB: Final = 64
#: a body being parsed into Python objects takes up to this many times its size (one at a time:
#: parsing does not yield the event loop)
PARSED_BODY_FACTOR: Final = 8
#: why the server closed a connection itself: the closed set of metric labels
CLOSE_REASONS: Final = ("over_limit", "first_request_timeout", "tls_handshake_failed")


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    first_request_timeout: float = DEFAULT_FIRST_REQUEST_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
