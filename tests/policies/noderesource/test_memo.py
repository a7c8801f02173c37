"""The manager's memo between rounds (`policies/noderesource/memo.py`): it serves a pod's input
only while the pod object is the one it was read from, so a replaced pod is read again."""

from __future__ import annotations

from policies.noderesource.memo import PlanMemo
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
