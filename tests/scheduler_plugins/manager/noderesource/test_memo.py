"""The manager's memo between rounds (`scheduler_plugins/manager/noderesource/memo.py`): it serves a pod's input
only while the pod object is the one it was read from, so a replaced pod is read again."""

from __future__ import annotations

from scheduler_plugins.manager.noderesource.amplification import amplification_ratio
from scheduler_plugins.manager.noderesource.inputs import node_input
from scheduler_plugins.manager.noderesource.memo import PlanMemo, node_fixed
from scheduler_plugins.manager.noderesource.normalization import normalization_ratio
from tests.scheduler_plugins.manager.noderesource.builders import STRATEGY_65, config, node
from tests.support.builders import make_pod


def test_a_replaced_pod_is_read_again_and_a_gone_pod_is_dropped() -> None:
    memo = PlanMemo()
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
    memo = PlanMemo()
    a = make_pod("a", requests={"cpu": "1"}, phase="Running")
    b = make_pod("b", requests={"cpu": "2"}, phase="Running")
    first = memo.pod_inputs("n1", (a, b))
    assert memo.pod_inputs("n1", [a, b]) is first  # a new sequence of the same objects
    b2 = make_pod("b", requests={"cpu": "5"}, phase="Running")
    again = memo.pod_inputs("n1", (a, b2))
    assert again is not first and again[0] is first[0] and again[1].request == (5000, 0)
    assert memo.pod_inputs("n1", (b2, a)) == (again[1], again[0])  # order is the caller's


def test_a_replaced_node_object_is_read_again() -> None:
    memo = PlanMemo()
    n1 = node(name="n1", allocatable={"kubernetes.io/batch-cpu": "1000"})
    read = memo.read_node(n1)
    assert memo.read_node(n1) is read and read.current == {"kubernetes.io/batch-cpu": "1000"}
    written = {**n1, "status": {**n1["status"], "allocatable": {"kubernetes.io/batch-cpu": "2000"}}}
    assert memo.read_node(written).current == {"kubernetes.io/batch-cpu": "2000"}
    assert not memo.read_node({"metadata": {"name": "n1"}}).writable


def test_node_input_is_read_again_when_the_node_or_a_pod_is_replaced() -> None:
    memo = PlanMemo()
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
    memo = PlanMemo()
    for i in range(50):
        n = node(name="n1", cpu=str(i + 1))  # fifty replacements of one node
        memo.node_input("n1", n, [make_pod(f"p{i}", phase="Running")])
        memo.read_node(n)
    assert len(memo._inputs) == len(memo._reads) == len(memo._pods) == 1
    memo.forget("n1")
    assert not memo._inputs and not memo._reads and not memo._pods


def test_the_ratios_follow_a_replaced_node_and_a_replaced_topology() -> None:
    memo = PlanMemo()
    manager = config(STRATEGY_65, cpu_normalization_config={"enable": True, "defaultRatio": 1.5})
    rules = (manager.normalization, manager.amplification)
    nrt = {"node.koordinator.sh/cpu-basic-info": '{"cpuModel": "x"}'}
    plain = memo.read_node(node(name="n1"))
    assert memo.ratios(*rules, plain, nrt) == ("1.50", None)
    assert memo.ratios(*rules, plain, None) == (None, None)  # the NRT's annotations went
    off = memo.read_node(node(name="n1", labels={"node.koordinator.sh/cpu-normalization-enabled": "false"}))
    assert memo.ratios(*rules, off, nrt) == ("1.00", None)


def test_a_status_write_of_the_batch_resources_keeps_the_node_input_and_a_capacity_change_does_not() -> None:
    """`node_input_source`: the Node object the manager's own write replaced reads the same."""
    memo = PlanMemo()
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
    memo = PlanMemo()
    manager = config(STRATEGY_65)
    n1 = node(name="n1", labels={"pool": "a"})
    fixed = memo.fixed(manager, n1, None, None)
    assert memo.fixed(manager, n1, None, None) is fixed
    assert fixed == node_fixed(manager, n1, None, None)
    other = config({**STRATEGY_65, "nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": "a"}}, "enable": False}]})
    off = memo.fixed(other, n1, None, None)
    assert not off.enabled and off.ratios is None and off == node_fixed(other, n1, None, None)
    extensions = {"x": 1}
    assert memo.fixed(other, n1, None, extensions).nodeslo["extensions"] == extensions
    memo.forget("n1")
    assert not memo._fixed


def test_the_ratios_are_kept_across_a_write_of_other_annotations_and_follow_the_normalization_one() -> None:
    memo = PlanMemo()
    manager = config(
        STRATEGY_65, resource_amplification_config={"enable": True, "resourceAmplificationRatio": {"cpu": 1.2}}
    )
    rules = (manager.normalization, manager.amplification)
    plain = node(name="n1")
    first = memo.ratios(*rules, memo.read_node(plain), None)
    kept = memo._ratios["n1"]  # the entry, not the tuple: a compiled memo hands out a new tuple each time
    written = {
        **plain,
        "metadata": {**plain["metadata"], "annotations": {"node.koordinator.sh/originExtendedAllocatable": "{}"}},
    }
    assert memo.ratios(*rules, memo.read_node(written), None) == first and memo._ratios["n1"] is kept
    ratio = {
        **plain,
        "metadata": {**plain["metadata"], "annotations": {"node.koordinator.sh/cpu-normalization-ratio": "1.50"}},
    }
    assert (
        memo.ratios(*rules, memo.read_node(ratio), None)
        == (
            normalization_ratio(manager.normalization, {}, None),
            amplification_ratio(manager.amplification, {}, ratio["metadata"]["annotations"]),
        )
        != first
    )
