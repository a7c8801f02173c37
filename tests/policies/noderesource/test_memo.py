"""The manager's memo between rounds (`policies/noderesource/memo.py`): it serves a pod's input
only while the pod object is the one it was read from, so a replaced pod is read again."""

from __future__ import annotations

from policies.noderesource.memo import PlanMemo
from tests.policies.noderesource.builders import STRATEGY_65, config, node
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
