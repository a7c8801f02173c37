"""Framework runtime contracts: Reserve/Unreserve order, Skip, transformers, score validation."""

from dataclasses import dataclass, field

import pytest

from policies.apis.field_errors import ConfigError
from scheduler_plugins.scheduler.cluster.client import InMemoryClient
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.registry import PluginSpec, Registry
from scheduler_plugins.scheduler.framework.runtime import Framework
from scheduler_plugins.scheduler.framework.scheduling import Scheduler, num_feasible_nodes_to_find
from scheduler_plugins.scheduler.framework.status import SKIP, SUCCESS, Code, Status, unschedulable
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.support.builders import make_node, make_pod


@dataclass
class Recorder:
    name: str
    log: list = field(default_factory=list)
    fail_reserve: bool = False
    pre_filter_status: Status = SUCCESS
    filter_status: Status = SUCCESS
    score_value: int = 50

    def pre_filter(self, state, pod):
        return None, self.pre_filter_status

    def filter(self, state, pod, node):
        self.log.append(("filter", self.name, node.name))
        return self.filter_status

    def score(self, state, pod, node):
        return self.score_value, SUCCESS

    def reserve(self, state, pod, node_name):
        self.log.append(("reserve", self.name))
        return unschedulable("no") if self.fail_reserve else SUCCESS

    def unreserve(self, state, pod, node_name):
        self.log.append(("unreserve", self.name))

    def before_filter(self, state, pod, node):
        self.log.append(("before_filter", self.name))
        return pod, node, False, SUCCESS


def build(plugins: dict[str, Recorder], points: dict, nodes=("n1", "n2")):
    registry = in_tree_registry()
    for name, plugin in plugins.items():
        registry.register(PluginSpec(name, lambda args, handle, p=plugin: p))
    blocks = {k: {"enabled": [{"name": n} for n in v], "disabled": [{"name": "*"}]} for k, v in points.items()}
    config = parse_config({"profiles": [{"plugins": blocks}]}, registry)
    cluster = ClusterState.from_objects([make_node(n, cpu="32", memory="128Gi") for n in nodes])
    return Framework(config.profile(), registry, Handle(cluster, InMemoryClient(cluster))), cluster


def test_failed_reserve_unreserves_every_plugin_in_reverse_order():
    log = []
    a, b = Recorder("A", log), Recorder("B", log, fail_reserve=True)
    fwk, _ = build({"A": a, "B": b}, {"reserve": ["A", "B"]})
    status = fwk.run_reserve(CycleState(), PodInfo(make_pod()), "n1")
    assert (status.code, status.plugin) == (Code.Unschedulable, "B")
    assert [e for e in log if e[0] in ("reserve", "unreserve")] == [
        ("reserve", "A"),
        ("reserve", "B"),
        ("unreserve", "B"),
        ("unreserve", "A"),
    ]


def test_prefilter_skip_means_the_filter_is_not_run():
    log = []
    fwk, cluster = build({"S": Recorder("S", log, pre_filter_status=SKIP)}, {"preFilter": ["S"], "filter": ["S"]})
    state = CycleState()
    pod, _, status = fwk.run_pre_filter(state, PodInfo(make_pod()))
    assert status.is_success
    assert fwk.run_filter(state, pod, cluster.nodes["n1"]).is_success
    assert ("filter", "S", "n1") not in log
    _, rows = fwk.explain_filter(state, pod, cluster.nodes["n1"])
    assert [r.as_dict() for r in rows if r.plugin == "S"] == [{"plugin": "S", "code": "Skip", "reasons": []}]


def test_transformers_run_only_where_the_plugin_is_enabled():
    log = []
    t = Recorder("T", log)
    fwk, cluster = build({"T": t}, {"score": ["T"]})
    fwk.run_filter(CycleState(), PodInfo(make_pod()), cluster.nodes["n1"])
    assert ("before_filter", "T") not in log
    fwk, cluster = build({"T": t}, {"filter": ["T"]})
    fwk.run_filter(CycleState(), PodInfo(make_pod()), cluster.nodes["n1"])
    assert ("before_filter", "T") in log


def test_out_of_range_score_is_an_error():
    fwk, cluster = build({"X": Recorder("X", score_value=101)}, {"score": ["X"]})
    _, status = fwk.run_score(CycleState(), PodInfo(make_pod()), cluster.node_list())
    assert status.code is Code.Error and status.plugin == "X"


def test_a_plugin_enabled_at_a_point_it_does_not_implement_is_rejected():
    registry = in_tree_registry()
    config = parse_config(
        {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "ScarceResourceAvoidance"}]}}}]}, registry
    )
    cluster = ClusterState()
    message = "profiles\\[0\\].plugins.filter: plugin 'ScarceResourceAvoidance' does not implement filter"
    with pytest.raises(ConfigError, match=message):
        Framework(config.profile(), registry, Handle(cluster, InMemoryClient(cluster)))


def test_duplicate_plugin_names_are_rejected():
    with pytest.raises(ValueError, match="registered twice"):
        Registry([PluginSpec("A", lambda a, h: None), PluginSpec("A", lambda a, h: None)])


@pytest.mark.parametrize("total, expected", [(50, 50), (100, 100), (1000, 420), (5000, 500), (100000, 5000)])
def test_adaptive_percentage_of_nodes_to_score(total, expected):
    assert num_feasible_nodes_to_find(0, total) == expected


def test_equal_totals_go_to_the_lowest_node_name():
    fwk, cluster = build({"X": Recorder("X")}, {"score": ["X"]}, nodes=("zeta", "alpha", "mid"))
    placement = Scheduler(fwk, cluster).schedule_one(PodInfo(make_pod()))
    # X is the only score plugin and gives 50 everywhere
    assert placement.node == "alpha"


def test_a_before_filter_transformer_runs_for_every_node_the_scheduler_filters():
    log = []
    fwk, cluster = build({"T": Recorder("T", log)}, {"filter": ["T"]}, nodes=("n1", "n2", "n3"))
    placement = Scheduler(fwk, cluster).schedule_one(PodInfo(make_pod()))
    assert placement.scheduled
    assert [e for e in log if e[0] == "before_filter"] == [("before_filter", "T")] * 3
    assert [e[2] for e in log if e[0] == "filter"] == ["n1", "n2", "n3"]


def test_a_profile_without_filter_plugins_finds_every_node_feasible():
    fwk, cluster = build({}, {"filter": []}, nodes=("n1", "n2"))
    feasible, failed, processed = fwk.find_feasible(CycleState(), PodInfo(make_pod()), cluster.node_list())
    assert ([n.name for n in feasible], failed, processed) == (["n1", "n2"], {}, 2)


@dataclass
class Gate:
    """A Permit plugin that parks every pod for `timeout` seconds."""

    name: str
    timeout: float = 30.0
    log: list = field(default_factory=list)

    def permit(self, state, pod, node_name):
        return Status(Code.Wait), self.timeout

    def reserve(self, state, pod, node_name):
        return SUCCESS

    def unreserve(self, state, pod, node_name):
        self.log.append(("unreserve", pod.name))


def test_permit_wait_parks_the_pod_until_allowed_then_binds_it():
    gate = Gate("Gate")
    fwk, cluster = build({"Gate": gate}, {"permit": ["Gate"], "reserve": ["Gate"], "bind": ["DefaultBinder"]})
    scheduler = Scheduler(fwk, cluster)
    placement = scheduler.schedule_one(PodInfo(make_pod("p", requests={"cpu": "1"})))
    assert placement.status.code is Code.Wait and not placement.scheduled
    (waiting,) = list(fwk.handle.waiting)
    waiting.allow("Gate")
    scheduler.settle_waiting()
    assert placement.scheduled and not fwk.handle.waiting
    assert "default/p" in cluster.nodes[placement.node].pods and not gate.log


def test_permit_wait_past_its_deadline_is_a_rejection_that_unreserves_and_forgets():
    gate = Gate("Gate", timeout=5)
    fwk, cluster = build({"Gate": gate}, {"permit": ["Gate"], "reserve": ["Gate"], "bind": ["DefaultBinder"]})
    scheduler = Scheduler(fwk, cluster)
    placement = scheduler.schedule_one(PodInfo(make_pod("p", requests={"cpu": "1"})))
    node = placement.node
    scheduler.expire_waiting(fwk.handle.clock() + 4)
    assert placement.status.code is Code.Wait
    scheduler.expire_waiting(fwk.handle.clock() + 6)
    assert not placement.scheduled and "timeout" in placement.message
    assert gate.log == [("unreserve", "p")] and "default/p" not in cluster.nodes[node].pods
