"""No metric label value comes from a request: unknown operations are refused, /metrics stays small."""

from __future__ import annotations

from tests.support.admission import admission_review
from tests.support.builders import make_pod
from tests.support.wait import wait_for_sync

REQUESTS = 300  # bounded: enough that one series per request would be plain on /metrics


def test_unknown_operations_are_refused_and_add_no_series(served):
    server = served()
    _, before = server.probe("/metrics")
    for i in range(REQUESTS):
        review = admission_review(make_pod(f"p{i}"), uid=f"uid-{i}")
        review["request"]["operation"] = f"OP{i:06d}"
        response = server.review("/validate-pod", review)
        assert response["uid"] == f"uid-{i}"
        assert not response["allowed"] and response["status"]["code"] == 400
        assert "request.operation must be one of" in response["status"]["message"]
    _, after = server.probe("/metrics")
    assert b"OP000" not in after
    assert len(after) < len(before) + 4096, "series must not grow with the requests"
    assert server.metric("controller_runtime_webhook_requests_total", webhook="/validate-pod") == REQUESTS


def test_known_operations_still_admit(served):
    server = served()
    for operation in ("CREATE", "UPDATE"):
        pod = make_pod("p")
        response = server.review(
            "/validate-pod", admission_review(pod, operation=operation, old=pod if operation == "UPDATE" else None)
        )
        assert response["allowed"], response


def test_a_kind_whose_objects_all_vanish_is_exported_as_zero(served):
    server = served()
    assert server.metric("colocate_cluster_state_objects", kind="PriorityClass") > 0
    (server.state / "priorityclasses.yaml").unlink()
    wait_for_sync(
        lambda: server.metric("colocate_cluster_state_objects", kind="PriorityClass"),
        until=lambda count: count == 0,
        timeout=10,
        message="the PriorityClass count to drop to 0",
    )
