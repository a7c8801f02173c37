"""NetworkTraffic (the scheduler-plugins tutorial's example; docs/scheduler.md): scoring,
normalisation guards, and failure outcomes."""

import socket

import pytest

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import NodeScore
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.plugins.networktraffic import NetworkTraffic, QueryError, parse_args
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_node, make_pod


class Table:
    """A querier answering from a dict keyed by node name (the node appears in the query)."""

    def __init__(self, values):
        self.values = values
        self.queries = []

    def query(self, promql, at):
        self.queries.append((promql, at))
        for node, value in self.values.items():
            if f'kubernetes_node="{node}"' in promql:
                return value
        return None


def plugin(querier=None, args=None):
    return NetworkTraffic(parse_args(args, "args"), Handle(cluster=None, client=None, clock=lambda: 1000.0), querier)


def scores(p, nodes):
    pod, state = PodInfo(make_pod()), CycleState()
    raw = []
    for name in nodes:
        value, status = p.score(state, pod, NodeInfo(make_node(name, cpu="32", memory="128Gi")))
        assert status.is_success, status
        raw.append(value)
    entries = [NodeScore(n, v) for n, v in zip(nodes, raw, strict=True)]
    assert p.normalize_score(state, pod, entries).is_success
    return raw, [e.score for e in entries]


def test_defaults():
    args = parse_args(None, "args")
    assert (args.prometheus_address, args.network_interface, args.time_range_in_minutes) == (
        "http://127.0.0.1:9090",
        "ens192",
        3,
    )


def test_query_names_node_interface_and_range_and_uses_the_clock():
    table = Table({})
    p = plugin(table, {"networkInterface": "eth1", "timeRangeInMinutes": 5})
    scores(p, ["n1"])
    assert table.queries == [
        ('sum_over_time(node_network_receive_bytes_total{kubernetes_node="n1",device="eth1"}[5m])', 1000.0)
    ]


@pytest.mark.parametrize(
    "case, values, raw, normalized",
    [
        ("quiet nodes win; raw truncated to int", {"a": 1000.9, "b": 3000.0}, [1000, 3000, 0], [67, 0, 100]),
        ("every node at zero traffic: all 100, no division by zero", {"a": 0.0, "b": 0.0}, [0, 0, 0], [100, 100, 100]),
        ("no data anywhere", {}, [0, 0, 0], [100, 100, 100]),
    ],
)
def test_scores(case, values, raw, normalized):
    assert scores(plugin(Table(values)), ["a", "b", "c"]) == (raw, normalized), case


def test_prometheus_down_gives_every_node_the_same_defined_score(caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = plugin(args={"prometheusAddress": f"http://127.0.0.1:{port}"})
    with caplog.at_level("WARNING"):
        assert scores(p, ["n1", "n2"]) == ([0, 0], [0, 0])
    assert len([r for r in caplog.records if "prometheus query failed" in r.getMessage()]) == 1


class FailingFor(Table):
    """Answers for some nodes and fails for the others, like a Prometheus timing out mid-cycle."""

    def __init__(self, values, failing):
        super().__init__(values)
        self.failing = failing

    def query(self, promql, at):
        if any(f'kubernetes_node="{node}"' in promql for node in self.failing):
            raise QueryError("prometheus query failed: timed out")
        return super().query(promql, at)


def test_a_partial_failure_does_not_favour_the_node_without_an_answer():
    assert scores(plugin(FailingFor({"a": 10.0, "b": 500.0}, {"c"})), ["a", "b", "c"]) == ([10, 500, 0], [0, 0, 0])
