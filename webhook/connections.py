"""How many connections the webhook port may hold, how long one may take to be useful, and how
large a request may be.

The limits are read at the CLI edge (`colocate serve --max-connections --handshake-timeout
--first-request-timeout --idle-timeout --max-body --body-budget-bytes`) and enforced by `webhook.gate`
(connections), `webhook.port` (requests) and `webhook.budget` (bodies and heads held at once);
this module is light so the CLI can import it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final

from colocate.cli import flags

DEFAULT_MAX_CONNECTIONS: Final = 1000
DEFAULT_FIRST_REQUEST_TIMEOUT: Final = 10.0
#: from accept to the end of the TLS handshake: kube-apiserver sends its ClientHello at once and
#: a handshake takes one round trip, so a connection that has not finished in half a second is
#: not the API server's, and its place is given back (`webhook.gate`)
DEFAULT_HANDSHAKE_TIMEOUT: Final = 0.5
DEFAULT_IDLE_TIMEOUT: Final = 30.0
#: the largest request body kube-apiserver accepts for an object (its MaxRequestBodyBytes,
#: `staging/src/k8s.io/apiserver/pkg/server/config.go`): no object it admits is larger
APISERVER_MAX_OBJECT: Final = 3 * 1024 * 1024
#: what an AdmissionReview adds around its objects: kind, uid, resource, userInfo, options
REVIEW_ENVELOPE: Final = 64 * 1024
#: one request body (--max-body): the largest AdmissionReview kube-apiserver sends, an UPDATE
#: carrying `object` and `oldObject` of at most APISERVER_MAX_OBJECT each
DEFAULT_MAX_BODY: Final = 2 * APISERVER_MAX_OBJECT + REVIEW_ENVELOPE
DEFAULT_MAX_BODY_BYTES: Final = 64 * 1024 * 1024  # request bodies held at once (webhook.budget.BodyBudget)
#: the head of a request, as aiohttp bounds it: a request line, a field, and the number of fields
MAX_LINE: Final = 8190
MAX_FIELD: Final = 8190
MAX_FIELDS: Final = 128
#: all of a request's head (aiohttp bounds only its parts: 128 fields of 8 KiB would be 1 MiB a
#: connection); kube-apiserver's heads are under 2 KiB, a bearer token and a trace header included
MAX_HEAD_BYTES: Final = 64 * 1024
#: the sizing rule of docs/serve.md, measured by benchmarks/hostile_bench.py (idle, heads): a
#: server process at rest, and what each open connection adds: its TLS and HTTP buffers (~50 KiB
#: idle) and a head of up to MAX_HEAD_BYTES being parsed (1,000 connections each holding a 56 KiB
#: head added 148 MiB)
MEMORY_BASE_MIB: Final = 100
MEMORY_PER_CONNECTION_KIB: Final = 160
#: a body being parsed into Python objects takes up to this many times its size (one at a time:
#: parsing does not yield the event loop)
PARSED_BODY_FACTOR: Final = 8
#: why the server closed a connection itself: the closed set of metric labels
CLOSE_REASONS: Final = (
    "over_limit",
    "idle_evicted",
    "idle_at_shutdown",
    "head_too_large",
    "unserved_evicted",
    "handshake_timeout",
    "first_request_timeout",
    "tls_handshake_failed",
)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    first_request_timeout: float = DEFAULT_FIRST_REQUEST_TIMEOUT
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


#: where controller-runtime's managers serve metrics and health probes by default (`webhook.probes`)
DEFAULT_METRICS_ADDRESS: Final = ":8080"
DEFAULT_HEALTH_ADDRESS: Final = ":8081"
#: how long one render of /metrics answers scrapes (`webhook.probes.CachedExposition`): a render
#: costs ~5 ms of the event loop, a scrape every few seconds needs no fresher numbers
EXPOSITION_CACHE_SECONDS: Final = 1.0
MAX_EXPOSITION_CACHE_SECONDS: Final = 60.0
DISABLED: Final = "0"
Address = tuple[str, int]


def bind_address(text: str) -> Address | None:
    """`host:port` (an empty host: every address; `[::1]:8080` for IPv6), or None for `0` (off)."""
    if text.strip() == DISABLED:
        return None
    try:
        return flags.bind_address(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port (or 0 to turn it off)") from None
