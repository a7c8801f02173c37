"""What no koordlet or kubelet reports is refused, and no written amount exceeds the node (issue 41,
item 3): a NodeMetric the koordlet's role may patch must not give a node batch capacity it does not
have. Koordinator floors the result at 0 only; these inputs are read as the nearest possible value."""

from __future__ import annotations

from typing import Any

from policies.apis.constants import BATCH_CPU, MID_CPU, MID_MEMORY
from scheduler_plugins.manager.noderesource.plan import NodePlan
from tests.scheduler_plugins.manager.noderesource.builders import config, metric, node, run
from tests.support.builders import make_pod

CORES = 32
PROD = make_pod("web", "default", qos="LS", node="test-node1", phase="Running", requests={"cpu": "8", "memory": "16Gi"})


def usage(name: str, cpu: str, memory: str = "4Gi", priority: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {
        "namespace": "default",
        "name": name,
        "podUsage": {"resources": {"cpu": cpu, "memory": memory}},
    }
    if priority:
        entry["priority"] = priority
    return entry


def plan(pods_metric: list[dict[str, Any]], *, system: tuple[str, str] = ("1", "2Gi"), **kw: Any) -> NodePlan:
    the_metric = metric(pods_metric, node_usage=("5", "10Gi"), system=system, **kw)
    return run(config(), node(str(CORES), "128Gi"), [PROD], the_metric)


def batch_cpu(the_plan: NodePlan) -> int:
    return int(the_plan.allocatable[BATCH_CPU])


def test_a_negative_prod_usage_counts_as_none_not_as_capacity() -> None:
    for cpu in ("-30", "-1e30"):
        refused = plan([usage("web", cpu)])
        assert batch_cpu(refused) == batch_cpu(plan([usage("web", "0")])) <= CORES * 1000
        assert refused.refused == ("NegativeUsage",) and "refused: NegativeUsage" in refused.reason


def test_a_pod_listed_twice_counts_at_its_larger_usage() -> None:
    """Koordinator keeps the last entry: a second entry of 1 core hid the 10 the pod uses."""
    twice = plan([usage("web", "10"), usage("web", "1")])
    assert batch_cpu(twice) == batch_cpu(plan([usage("web", "10")]))
    assert twice.refused == ("DuplicatePodMetric",)


def test_ghost_prod_metrics_with_a_negative_usage_give_nothing_back() -> None:
    """A metric of a prod pod the node does not run counts by its own priority; negative, it raised
    batch-cpu to 49,800 on a 32-core node."""
    ghost = plan([usage("web", "2"), usage("ghost", "-30", priority="koord-prod")])
    assert batch_cpu(ghost) == batch_cpu(plan([usage("web", "2")])) <= CORES * 1000
    assert ghost.refused == ("NegativeUsage",)


def test_a_negative_system_usage_does_not_hide_the_host_applications() -> None:
    host = [("2", "1Gi", "koord-prod")]
    negative = plan([usage("web", "2")], system=("-30", "2Gi"), host_apps=host)
    assert batch_cpu(negative) == batch_cpu(plan([usage("web", "2")], system=("0", "2Gi"), host_apps=host))
    assert negative.refused == ("NegativeUsage",)


def test_a_negative_node_capacity_writes_no_negative_amount() -> None:
    """cpu: -32 on the Node wrote mid-cpu: -32000."""
    the_node = node("-32", "128Gi")
    the_plan = run(config(), the_node, [PROD], metric([usage("web", "2")], node_usage=("5", "10Gi")))
    assert int(the_plan.allocatable[MID_CPU]) == 0 and int(the_plan.allocatable[BATCH_CPU]) == 0
    assert not the_plan.allocatable[MID_MEMORY].startswith("-")
    assert the_plan.refused == ("NegativeCapacity",)


def test_clean_inputs_refuse_nothing() -> None:
    clean = plan([usage("web", "2")])
    assert clean.refused == () and "refused" not in clean.reason and "refused" not in clean.as_dict()
