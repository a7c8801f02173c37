"""NetworkTraffic (the example plugin of kubernetes-sigs/scheduler-plugins' tutorial;
docs/scheduler.md): prefer nodes that received fewer bytes on a network interface over the last
`timeRangeInMinutes`, as reported by Prometheus.

Score(node) is the instant query
`sum_over_time(node_network_receive_bytes_total{kubernetes_node="<node>",device="<iface>"}[<range>])`
evaluated at the framework clock's time, truncated to an integer; a node without samples scores 0.
NormalizeScore inverts: `100 - raw * 100 // max`, so the busiest node gets 0; when every node is at
zero traffic (max == 0) every node gets 100 — upstream divides by zero there.

A failed query (Prometheus down, a bad answer) gives a defined score rather than an error (the
issue asks for that, where upstream returns an Error status and so fails the pod's scheduling
cycle): the failure is logged and noted in the cycle state, and NormalizeScore then gives every
node the same score, `FAILED_SCORE` (0), so a plugin without data does not steer placement.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from policies.apis.durations import format_duration
from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import NodeScore
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import MAX_NODE_SCORE, SUCCESS, Status
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "NetworkTraffic"
DEFAULT_PROMETHEUS_ADDRESS = "http://127.0.0.1:9090"
DEFAULT_NETWORK_INTERFACE = "ens192"
DEFAULT_TIME_RANGE_IN_MINUTES = 3
QUERY_TIMEOUT_SECONDS = 5.0
QUERY_TEMPLATE = 'sum_over_time(node_network_receive_bytes_total{{kubernetes_node="{node}",device="{iface}"}}[{range}])'


@dataclass(frozen=True)
class NetworkTrafficArgs:
    prometheus_address: str = DEFAULT_PROMETHEUS_ADDRESS
    network_interface: str = DEFAULT_NETWORK_INTERFACE
    time_range_in_minutes: int = DEFAULT_TIME_RANGE_IN_MINUTES


def parse_args(raw: Mapping[str, Any] | None, path: str) -> NetworkTrafficArgs:
    f = Fields(raw, path)
    args = NetworkTrafficArgs(
        prometheus_address=f.str("prometheusAddress", DEFAULT_PROMETHEUS_ADDRESS),
        network_interface=f.str("networkInterface", DEFAULT_NETWORK_INTERFACE),
        time_range_in_minutes=f.int("timeRangeInMinutes", DEFAULT_TIME_RANGE_IN_MINUTES),
    )
    if urllib.parse.urlparse(args.prometheus_address).scheme not in ("http", "https"):
        raise ConfigError(f.at("prometheusAddress"), f"must be an http(s) URL, got {args.prometheus_address!r}")
    if not args.network_interface:
        raise ConfigError(f.at("networkInterface"), "must not be empty")
    if args.time_range_in_minutes <= 0:
        raise ConfigError(f.at("timeRangeInMinutes"), f"must be > 0, got {args.time_range_in_minutes}")
    return args


class QueryError(Exception):
    pass


class PrometheusQuerier(Protocol):
    def query(self, promql: str, at: float) -> float | None: ...


class PrometheusClient:
    """Instant queries over the HTTP API; `None` when the result vector is empty."""

    def __init__(self, address: str, timeout: float = QUERY_TIMEOUT_SECONDS) -> None:
        self.address = address.rstrip("/")
        self.timeout = timeout

    def query(self, promql: str, at: float) -> float | None:
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        try:
            with urllib.request.urlopen(f"{self.address}/api/v1/query?{params}", timeout=self.timeout) as resp:
                body = json.loads(resp.read())
        except (OSError, ValueError) as exc:  # URLError, timeouts and refused connections are OSErrors
            raise QueryError(f"prometheus query failed: {exc}") from exc
        if body.get("status") != "success":
            raise QueryError(f"prometheus query failed: {body.get('error', 'unknown error')}")
        result = (body.get("data") or {}).get("result") or []
        if not result:
            return None
        try:
            return float(result[0]["value"][1])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise QueryError(f"unexpected prometheus answer: {result[0]!r}") from exc


QUERY_FAILED_KEY = "NetworkTraffic/queryFailed"
FAILED_SCORE = 0
log = logging.getLogger("colocate.scheduler.networktraffic")


class NetworkTraffic:
    name = NAME

    def __init__(self, args: NetworkTrafficArgs, handle: Handle, querier: PrometheusQuerier | None = None) -> None:
        self.args = args
        self.clock = handle.clock
        self.querier = querier or PrometheusClient(args.prometheus_address)

    def promql(self, node_name: str) -> str:
        return QUERY_TEMPLATE.format(
            node=node_name,
            iface=self.args.network_interface,
            range=format_duration(self.args.time_range_in_minutes * 60),
        )

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        try:
            value = self.querier.query(self.promql(node.name), self.clock())
        except QueryError as exc:
            if state.read(QUERY_FAILED_KEY) is None:  # one warning per cycle, not one per node
                log.warning("NetworkTraffic: node %s: %s; every node gets the same score this cycle", node.name, exc)
            state.write(QUERY_FAILED_KEY, str(exc))
            return 0, SUCCESS
        return (int(value) if value is not None else 0), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        if state.read(QUERY_FAILED_KEY) is not None:
            for entry in scores:
                entry.score = FAILED_SCORE
            return SUCCESS
        highest = max((s.score for s in scores), default=0)
        for entry in scores:
            entry.score = MAX_NODE_SCORE if highest == 0 else MAX_NODE_SCORE - entry.score * MAX_NODE_SCORE // highest
        return SUCCESS


def new(args: NetworkTrafficArgs, handle: Handle) -> NetworkTraffic:
    return NetworkTraffic(args, handle)
