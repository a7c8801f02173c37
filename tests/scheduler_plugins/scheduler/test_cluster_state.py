"""ClusterState under watch-event order: pods may arrive before their node, nodes may go away."""

from scheduler_plugins.scheduler.cluster.state import ClusterState
from tests.support.builders import make_node, make_pod


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def on_pod_assigned(self, pod, node_name):
        self.events.append(("assigned", pod.key, node_name))

    def on_pod_deleted(self, pod, node_name):
        self.events.append(("deleted", pod.key, node_name))

    def on_node_metric(self, node_name, metric):
        pass


def test_a_pod_bound_before_its_node_is_listed_counts_once_the_node_arrives():
    state = ClusterState()
    state.add_pod(make_pod("a", node="n1", requests={"cpu": "2"}))
    assert "n1" not in state.nodes
    state.add_node(make_node("n1", cpu="32", memory="128Gi"))
    assert list(state.nodes["n1"].pods) == ["default/a"]
    assert state.nodes["n1"].requested["cpu"] == 2000
    assert state.homeless == {}


def test_a_deleted_node_leaves_an_empty_row_and_keeps_its_pods_until_it_returns():
    state = ClusterState()
    state.add_node(make_node("n1", cpu="32", memory="128Gi"))
    state.add_node(make_node("n2", cpu="32", memory="128Gi"))
    state.add_pod(make_pod("a", node="n1", requests={"cpu": "1"}))
    generation = state.generations[0]
    state.delete_node("n1")
    assert list(state.nodes) == ["n2"] and [n.name for n in state.node_list()] == ["n2"]
    assert state.by_index[0].node is None and state.generations[0] > generation
    assert state.by_index[1].name == "n2"
    state.add_node(make_node("n1", cpu="32", memory="128Gi"))
    assert list(state.nodes["n1"].pods) == ["default/a"]


def test_deleting_a_pod_of_a_missing_node_tells_the_listeners():
    state = ClusterState()
    recorder = Recorder()
    state.subscribe(recorder)
    state.add_pod(make_pod("a", node="gone"))
    state.delete_pod("default/a", "gone")
    assert recorder.events == [("assigned", "default/a", "gone"), ("deleted", "default/a", "gone")]
    assert state.homeless == {}


def test_a_node_whose_status_is_rewritten_keeps_its_pods_and_their_sums():
    """A Node is replaced on every status write (the manager's batch resources): the new NodeInfo
    counts the same pods, and what happens to it afterwards is not seen by the one it replaced."""
    state = ClusterState()
    state.add_node(make_node("n1", cpu="32", memory="128Gi"))
    state.add_pod(make_pod("a", node="n1", requests={"cpu": "2", "memory": "1Gi"}))
    state.add_pod(make_pod("b", node="n1", requests={"cpu": "1"}))
    state.delete_pod("default/b", "n1")
    old = state.nodes["n1"]
    generation = state.generations[old.index]
    state.add_node(make_node("n1", cpu="30", memory="128Gi"))
    new = state.nodes["n1"]
    assert new is not old and new.allocatable["cpu"] == 30000 and state.generations[new.index] > generation
    assert list(new.pods) == ["default/a"]
    assert (new.requested.get("cpu"), new.requested.get("memory")) == (2000, 1024**3)
    assert new.qos_requested.get("cpu") == 2000 and new.non_zero_requested.get("cpu") == 2000
    state.add_pod(make_pod("c", node="n1", requests={"cpu": "4"}))
    assert new.requested["cpu"] == 6000 and old.requested["cpu"] == 2000 and "default/c" not in old.pods
