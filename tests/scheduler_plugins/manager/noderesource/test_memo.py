"""The memoising planner (`scheduler_plugins/manager/noderesource/memo.py`): it serves a pod's input
only while the pod object is the one it was read from, so a replaced pod is read again, and a
plugin's result only while what the plugin declares it reads reads the same."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.apis.constants import ANNOTATION_AMPLIFICATION_RATIO, ANNOTATION_CPU_NORMALIZATION_RATIO
from policies.apis.timestamps import parse_time
from scheduler_plugins.manager.noderesource.framework import NODE_LABELS, NRT_ANNOTATIONS, PluginTable, Reading
from scheduler_plugins.manager.noderesource.inputs import node_input
from scheduler_plugins.manager.noderesource.memo import MemoPlanner
from scheduler_plugins.manager.noderesource.plan import NodeObjects, node_fixed, plan_node
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE, default_plugins
from tests.scheduler_plugins.manager.noderesource.builders import NOW, STRATEGY_65, config, metric, node
from tests.support.builders import make_pod


def test_a_replaced_pod_is_read_again_and_a_gone_pod_is_dropped() -> None:
    memo = MemoPlanner()
    a = make_pod("a", requests={"cpu": "1"}, phase="Running")
    b = make_pod("b", requests={"cpu": "2"}, phase="Running")
    first = memo.pod_inputs("n1", [a, b])
    assert memo.pod_inputs("n1", [a, b]) == first
    assert memo.pod_inputs("n1", [a, b])[0] is first[0]  # the same object: not read again
    resized = make_pod("a", requests={"cpu": "3"}, phase="Running")  # what a watch event delivers
    again = memo.pod_inputs("n1", [resized])
    assert again[0] != first[0] and again[0].request != first[0].request
    assert [p.key for p in memo.pod_inputs("n1", [resized])] == ["default/a"]
    memo.forget("n1")
    assert memo.pod_inputs("n1", [a])[0] == first[0]


def test_unchanged_pods_give_the_very_same_inputs_and_one_replaced_pod_only_its_own_read() -> None:
    memo = MemoPlanner()
    a = make_pod("a", requests={"cpu": "1"}, phase="Running")
    b = make_pod("b", requests={"cpu": "2"}, phase="Running")
    first = memo.pod_inputs("n1", (a, b))
    assert memo.pod_inputs("n1", [a, b]) is first  # a new sequence of the same objects
    b2 = make_pod("b", requests={"cpu": "5"}, phase="Running")
    again = memo.pod_inputs("n1", (a, b2))
    assert again is not first and again[0] is first[0] and again[1].request == (5000, 0)
    assert memo.pod_inputs("n1", (b2, a)) == (again[1], again[0])  # order is the caller's


def test_a_replaced_node_object_is_read_again() -> None:
    memo = MemoPlanner()
    n1 = node(name="n1", allocatable={"kubernetes.io/batch-cpu": "1000"})
    read = memo.read_node(n1)
    assert memo.read_node(n1) is read and read.current == {"kubernetes.io/batch-cpu": "1000"}
    written = {**n1, "status": {**n1["status"], "allocatable": {"kubernetes.io/batch-cpu": "2000"}}}
    assert memo.read_node(written).current == {"kubernetes.io/batch-cpu": "2000"}
    assert not memo.read_node({"metadata": {"name": "n1"}}).writable


def test_node_input_is_read_again_when_the_node_or_a_pod_is_replaced() -> None:
    memo = MemoPlanner()
    n1 = node("10", "10Gi", name="n1")
    a = make_pod("a", requests={"cpu": "1"}, phase="Running")
    first = memo.node_input("n1", n1, [a])
    assert memo.node_input("n1", n1, (a,)) is first
    resized = node("20", "10Gi", name="n1")
    assert memo.node_input("n1", resized, (a,)).capacity == (20000, 10 * 2**30 * 1000)
    b = make_pod("b", requests={"cpu": "1"}, phase="Succeeded")
    with_b = memo.node_input("n1", resized, (a, b))
    assert with_b.active_keys == frozenset({"default/a"}) and len(with_b.pods) == 2


def test_the_memo_keeps_one_entry_per_node_and_forgets_it() -> None:
    memo = MemoPlanner()
    for i in range(50):
        n = node(name="n1", cpu=str(i + 1))  # fifty replacements of one node
        memo.node_input("n1", n, [make_pod(f"p{i}", phase="Running")])
        memo.read_node(n)
    assert len(memo._inputs) == len(memo._reads) == len(memo._pods) == 1
    memo.forget("n1")
    assert not memo._inputs and not memo._reads and not memo._pods


def test_a_status_write_of_the_batch_resources_keeps_the_node_input_and_a_capacity_change_does_not() -> None:
    """`node_input_source`: the Node object the manager's own write replaced reads the same."""
    memo = MemoPlanner()
    pods = (make_pod("a", requests={"cpu": "1"}, phase="Running"),)
    n1 = node("10", "10Gi", name="n1")
    first = memo.node_input("n1", n1, pods)
    written = {
        **n1,
        "metadata": {**n1["metadata"], "annotations": {"node.koordinator.sh/originExtendedAllocatable": "{}"}},
        "status": {
            "capacity": {**n1["status"]["capacity"], "kubernetes.io/batch-cpu": "5000"},
            "allocatable": {**n1["status"]["allocatable"], "kubernetes.io/batch-cpu": "5000"},
        },
    }
    assert memo.node_input("n1", written, pods) is first
    reserved = {
        **written,
        "metadata": {"name": "n1", "annotations": {"node.koordinator.sh/reservation": '{"resources": {"cpu": "2"}}'}},
    }
    assert memo.node_input("n1", reserved, pods).reserved == (2000, 0)
    for changed in (
        node("20", "10Gi", name="n1"),
        node("10", "10G", name="n1"),
        node("10", "10Gi", name="n1", alloc_cpu="8"),
    ):
        again = memo.node_input("n1", changed, pods)
        assert again is not first and again == node_input(changed, pods)
    numbers = {
        **n1,
        "status": {"capacity": {"cpu": 10, "memory": "10Gi"}, "allocatable": {"cpu": 10, "memory": "10Gi"}},
    }
    assert memo.node_input("n1", numbers, pods) == node_input(numbers, pods)  # 10 is not "10": read again


def test_the_fixed_reading_is_kept_while_its_objects_are_the_ones_read() -> None:
    memo = MemoPlanner()
    manager = config(STRATEGY_65)
    n1 = node(name="n1", labels={"pool": "a"})
    fixed = memo.fixed(DEFAULT_TABLE, manager, n1, None)
    assert memo.fixed(DEFAULT_TABLE, manager, n1, None) is fixed
    assert fixed == node_fixed(DEFAULT_TABLE, manager, n1, None)
    other = config({**STRATEGY_65, "nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": "a"}}, "enable": False}]})
    off = memo.fixed(DEFAULT_TABLE, other, n1, None)
    assert not off.enabled and off == node_fixed(DEFAULT_TABLE, other, n1, None)
    extensions = {"x": 1}
    assert memo.fixed(DEFAULT_TABLE, other, n1, extensions).nodeslo["extensions"] == extensions
    memo.forget("n1")
    assert not memo._fixed


class CountingLabels:
    """A plugin that reads the node's labels and the NRT's annotations, and counts its calculations."""

    name = "CountingLabels"
    reads = (NODE_LABELS, NRT_ANNOTATIONS)

    def __init__(self) -> None:
        self.calls = 0

    def calculate(self, reading: Reading) -> object:
        self.calls += 1
        return (dict(reading(NODE_LABELS)), reading(NRT_ANNOTATIONS))


def test_a_plugins_result_is_kept_while_its_declared_reads_read_the_same() -> None:
    counting = CountingLabels()
    planner = MemoPlanner(PluginTable((*default_plugins(), counting)))
    manager = config(STRATEGY_65)
    nrt: dict[str, Any] = {"metadata": {"name": "n1", "annotations": {"a": "1"}}}
    plain = node(name="n1", labels={"pool": "a"})

    def plan(the_node: Mapping[str, Any], the_nrt: Mapping[str, Any] | None) -> None:
        planner.plan(manager, NodeObjects(the_node, (), metric(), the_nrt), value_of_now())

    plan(plain, nrt)
    written = {**plain, "metadata": {**plain["metadata"], "annotations": {"other": "x"}}}
    plan(written, nrt)  # another Node object, other annotations: the labels read the same
    assert counting.calls == 1
    plan({**plain, "metadata": {**plain["metadata"], "labels": {"pool": "b"}}}, nrt)
    assert counting.calls == 2
    plan(
        {**plain, "metadata": {**plain["metadata"], "labels": {"pool": "b"}}}, {"metadata": {"annotations": {"a": "2"}}}
    )
    assert counting.calls == 3
    planner.forget("n1")
    plan({**plain, "metadata": {**plain["metadata"], "labels": {"pool": "b"}}}, nrt)
    assert counting.calls == 4


def value_of_now() -> float:
    at = parse_time(NOW)
    assert at is not None
    return at


def test_the_ratios_follow_the_nodes_normalization_annotation_as_the_plain_plan_does() -> None:
    planner = MemoPlanner()
    manager = config(
        STRATEGY_65, resource_amplification_config={"enable": True, "resourceAmplificationRatio": {"cpu": 1.2}}
    )
    plain = node(name="n1")
    now = value_of_now()
    for written in (
        {},
        {"node.koordinator.sh/originExtendedAllocatable": "{}"},
        {ANNOTATION_CPU_NORMALIZATION_RATIO: "1.50"},
    ):
        the_node = {**plain, "metadata": {**plain["metadata"], "annotations": written}}
        kept = planner.plan(manager, NodeObjects(the_node, (), metric(), None), now)
        fresh = plan_node(manager, NodeObjects(the_node, (), metric(), None), now)
        assert kept.prepared == fresh.prepared and kept.reason == fresh.reason
    assert kept.prepared is not None
    assert kept.prepared["annotations"][ANNOTATION_AMPLIFICATION_RATIO] == '{"cpu":1.80}'
