"""The active pods by node that the manager's and the descheduler's views share."""

from __future__ import annotations

from colocate.cluster.views import BoundPods
from tests.support.builders import make_pod


def test_a_pod_is_on_the_node_it_is_bound_to_until_it_moves_ends_or_goes() -> None:
    pods = BoundPods()
    key = ("default", "web-0")
    pods.put(key, make_pod("web-0", node="n1", phase="Running"))
    pods.put(("default", "pending"), make_pod("pending"))  # bound to no node: held nowhere
    assert {n: [p["metadata"]["name"] for p in ps] for n, ps in pods.by_node().items()} == {"n1": ["web-0"]}
    pods.put(key, make_pod("web-0", node="n2", phase="Running"))
    assert list(pods.by_node()) == ["n2"]  # n1 left empty is gone, not kept as an empty entry
    pods.put(key, make_pod("web-0", node="n2", phase="Succeeded"))
    assert pods.by_node() == {}
    pods.put(key, make_pod("web-0", node="n2", phase="Running"))
    pods.drop(key)
    assert pods.by_node() == {}


def test_a_nodes_pods_are_the_very_same_tuple_until_one_of_them_changes() -> None:
    """The manager's memo tells "the same pods" by the tuple's identity: a new tuple for a node
    whose pods changed (added, replaced, moved away, gone), the same one for every other node."""
    pods = BoundPods()
    pods.put(("default", "a"), make_pod("a", node="n1", phase="Running"))
    pods.put(("default", "b"), make_pod("b", node="n2", phase="Running"))
    first = pods.by_node()
    second = pods.by_node()
    assert second["n1"] is first["n1"] and second["n2"] is first["n2"]
    replaced = make_pod("a", node="n1", phase="Running")
    pods.put(("default", "a"), replaced)
    third = pods.by_node()
    assert third["n1"] is not first["n1"] and third["n1"] == (replaced,) and third["n2"] is first["n2"]
    pods.put(("default", "c"), make_pod("c", node="n2", phase="Running"))
    assert [p["metadata"]["name"] for p in pods.by_node()["n2"]] == ["b", "c"]
    pods.drop(("default", "b"))
    pods.drop(("default", "c"))
    assert "n2" not in pods.by_node() and not pods._tuples.keys() - {"n1"}  # bounded by the nodes held
