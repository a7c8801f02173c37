"""The active pods by node that the manager's and the descheduler's views share."""

from __future__ import annotations

from cluster.views import BoundPods
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
