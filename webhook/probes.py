"""The webhook's health probes and metrics, on their own listeners, as controller-runtime serves them.

controller-runtime's managers serve `/metrics` on `--metrics-bind-address` and `/healthz`,
`/readyz` on `--health-probe-bind-address`, never on the webhook port; so does `colocate serve`,
through the listeners every component shares (`colocate.cluster.probes`: a connection cap, a
per-connection rate and a rendered-exposition cache bound what a scraper costs the admissions).
Both are plain HTTP, read by kubelet and Prometheus inside the cluster; the NetworkPolicy says who
may reach them (`manifests/deploy/networkpolicy.yaml`).

When both addresses are the same, one listener serves the three paths; `0` turns metrics off (as
controller-runtime's `--metrics-bind-address=0`). With `--workers` every worker listens on the
same addresses (SO_REUSEPORT), like on the webhook port: any worker answers, and in multiprocess
mode a scrape reads every worker's series.
"""

from __future__ import annotations

from typing import Final

from colocate.cluster.probes import Address, Answer, AnswerOf, ProbeListeners, exposition
from webhook.connections import EXPOSITION_CACHE_SECONDS
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.server import SERVER_NAME, Lifecycle, readiness
from webhook.state import StateHolder

#: the flag that sets the address of each path, for the start-up log
PROBE_FLAGS: Final = {"/healthz": "--health-probe-bind-address", "/metrics": "--metrics-bind-address"}


def probe_answers(
    state: StateHolder,
    metrics: WebhookMetrics,
    lifecycle: Lifecycle,
    exposition_cache: float = EXPOSITION_CACHE_SECONDS,
) -> dict[str, AnswerOf]:
    """What /healthz, /readyz and /metrics answer: alive, ready (with the reason when not), the exposition."""

    def ready() -> Answer:
        status, text = readiness(lifecycle, state)
        return Answer(status, text.encode())

    return {
        "/healthz": lambda: Answer(200, b"ok"),
        "/readyz": ready,
        "/metrics": exposition(metrics.render, exposition_cache, CONTENT_TYPE),
    }


def probe_listeners(
    health: Address | None,
    metrics_address: Address | None,
    state: StateHolder,
    metrics: WebhookMetrics,
    lifecycle: Lifecycle,
    *,
    reuse_port: bool | None = None,
    exposition_cache: float = EXPOSITION_CACHE_SECONDS,
) -> ProbeListeners:
    """The health and metrics listeners of one server process."""
    answers = probe_answers(state, metrics, lifecycle, exposition_cache)
    return ProbeListeners(health, metrics_address, answers, headers={"Server": SERVER_NAME}, reuse_port=reuse_port)
