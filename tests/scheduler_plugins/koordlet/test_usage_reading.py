"""The koordlet's usage of a NodeMetric (`plan`, `colocate whatif`) comes from the one reading of
the object (`policies.apis.nodemetric.read_node_metric`); a NodeMetric the reading refuses is read
entry by entry, as the koordlet always read it."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_plugins.koordlet.usage import ResourceUsage, Usage, _tolerant_usage, usage_of_node_metric


def _metric(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "NodeMetric", "metadata": {"name": name}, "status": status}


def _res(cpu: Any = "1", memory: Any = "1Gi") -> dict[str, Any]:
    return {"resources": {"cpu": cpu, "memory": memory}}


#: readable NodeMetrics with the shapes where what is counted depends on more than the amounts
READABLE = [
    {},
    {"nodeMetric": {}},
    {"nodeMetric": {"nodeUsage": None}},
    {"nodeMetric": {"nodeUsage": {}}},
    {"nodeMetric": {"nodeUsage": {"resources": None}}},
    {"nodeMetric": {"nodeUsage": _res("2500m", "3Gi")}},
    {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1G"}}}},
    {
        "podsMetric": [
            {"namespace": "a", "name": "p1", "podUsage": _res("300m", "100Mi")},
            {"name": "p2", "podUsage": _res()},  # default namespace
            {"namespace": "a", "name": "", "podUsage": _res()},  # unnamed: not counted
            {"namespace": "a", "podUsage": _res()},
            {"namespace": "a", "name": "p3"},  # no podUsage: not counted
            {"namespace": "a", "name": "p4", "podUsage": {}},  # counted, as zero
            {"namespace": "a", "name": "p5", "podUsage": {"resources": {}}},
            {"namespace": "a", "name": "p6", "podUsage": {"resources": {"cpu": "1"}}},
            {"namespace": "a", "name": "p1", "podUsage": _res("700m", "1Mi")},  # the last entry wins
        ]
    },
    {
        "hostApplicationMetric": [
            {"name": "agent", "usage": _res("200m", "64Mi"), "priority": "koord-prod"},
            {"name": "", "usage": _res()},
            {"usage": _res()},
            {"name": "nousage"},
            {"name": "empty", "usage": {}},
        ]
    },
]

#: NodeMetrics the one reading refuses, where the koordlet still reads what it can
MALFORMED = [
    {"nodeMetric": {"nodeUsage": _res("lots")}, "podsMetric": [{"name": "p", "podUsage": _res("1")}]},
    {"podsMetric": [{"name": "p", "podUsage": _res("bad")}, {"name": "q", "podUsage": _res("2")}]},
    {"podsMetric": ["not an entry", {"name": "q", "podUsage": _res("2")}]},
    {"podsMetric": [{"name": "q", "podUsage": ["list"]}], "nodeMetric": {"nodeUsage": _res("1")}},
    {"hostApplicationMetric": [{"name": "a", "usage": "text"}, {"name": "b", "usage": _res("1")}]},
    {"nodeMetric": {"nodeUsage": _res("1"), "aggregatedNodeUsages": [{"duration": "forever", "usage": {}}]}},
]


@pytest.mark.parametrize("status", READABLE + MALFORMED)
def test_the_usage_is_what_the_koordlet_reads_entry_by_entry(status: dict[str, Any]) -> None:
    metric = _metric("n-equal", status)
    assert usage_of_node_metric(metric) == _tolerant_usage(metric)


def test_the_usage_of_a_metric_and_of_none() -> None:
    metric = _metric("n1", READABLE[7] | {"nodeMetric": {"nodeUsage": _res("2500m", "3Gi")}})
    usage = usage_of_node_metric(metric)
    assert usage.node == ResourceUsage(2500, 3 << 30)
    assert usage.pods == {
        "a/p1": ResourceUsage(700, 1 << 20),
        "default/p2": ResourceUsage(1000, 1 << 30),
        "a/p4": ResourceUsage(),
        "a/p5": ResourceUsage(),
        "a/p6": ResourceUsage(1000, 0),
    }
    assert usage_of_node_metric(None) == Usage(None, {}, {})


def test_a_replaced_metric_is_read_again() -> None:
    first = _metric("n-replaced", {"nodeMetric": {"nodeUsage": _res("1", "1Gi")}})
    assert usage_of_node_metric(first).node == ResourceUsage(1000, 1 << 30)
    second = _metric("n-replaced", {"nodeMetric": {"nodeUsage": _res("3", "1Gi")}})
    assert usage_of_node_metric(second).node == ResourceUsage(3000, 1 << 30)
    assert usage_of_node_metric(first).node == ResourceUsage(1000, 1 << 30)
