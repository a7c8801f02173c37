"""Deep, oversized or mis-shaped objects get a 400 AdmissionReview answer, are counted, and are logged in
one bounded line; nothing reaches a plugin or a recursive walk."""
from __future__ import annotations

import json
from typing import Any

from tests.support.admission import admission_review
from tests.support.builders import make_container, make_pod

DEEP = "__deep__"  # replaced in the body's text: json.dumps itself cannot write 1,000 levels


def _nested(depth: int) -> str:
    return f"{DEEP}{depth}"


def _body(review: dict[str, Any]) -> bytes:
    text = json.dumps(review)
    for depth in (900, 1000, 2000):
        text = text.replace(f'"{DEEP}{depth}"', '{"a": ' * depth + '"x"' + "}" * depth)
    return text.encode()


def _deep_affinity(depth: int) -> dict[str, Any]:
    pod = make_pod("deep-affinity")
    pod["spec"]["affinity"] = _nested(depth)
    return pod


def _deep_limits(depth: int) -> dict[str, Any]:
    return make_pod("deep-limits", containers=[make_container(limits={"cpu": _nested(depth)})])


def _string_containers() -> dict[str, Any]:
    pod = make_pod("string-containers")
    pod["spec"]["containers"] = "main"
    return pod


def _quantity(value: object) -> dict[str, Any]:
    return make_pod("quantity", containers=[make_container(requests={"cpu": value})])


CASES = [
    ("/mutate-pod", _deep_affinity(900), "nested more than 64 levels deep"),
    ("/validate-pod", _deep_affinity(900), "nested more than 64 levels deep"),
    ("/mutate-pod", _deep_limits(1000), "nested more than 64 levels deep"),
    ("/mutate-pod", _string_containers(), "object.spec.containers: must be a list, got str"),
    ("/validate-pod", _string_containers(), "object.spec.containers: must be a list, got str"),
    ("/mutate-pod", _quantity("-2"), "requests.cpu: must be greater than or equal to 0"),
    ("/mutate-pod", _quantity("9" * 5000), "quantities must be at most 64 characters"),
    ("/mutate-pod", _quantity("1e999999999"), "quantity exponents must be within"),
]


def test_each_hostile_object_is_a_counted_400_admission_review_in_one_short_log_line(served):
    server = served()
    for index, (path, pod, message) in enumerate(CASES):
        response = server.review(path, None, data=_body(admission_review(pod, uid=f"hostile-{index}")), timeout=10)
        assert response["uid"] == f"hostile-{index}"
        assert not response["allowed"], (path, message)
        assert response["status"]["code"] == 400 and message in response["status"]["message"], response
    mutate_cases = sum(1 for path, _, _ in CASES if path == "/mutate-pod")
    assert server.metric("colocate_webhook_refused_requests_total", webhook="/mutate-pod",
                         reason="bad_object") == mutate_cases - 2
    assert server.metric("colocate_webhook_refused_requests_total", webhook="/mutate-pod",
                         reason="bad_review") == 2
    ok = server.review("/mutate-pod", admission_review(make_pod("fine")))
    assert ok["allowed"]
    server.stop()
    lines = server.log_lines()
    assert all("notJson" not in line for line in lines), [line for line in lines if "notJson" in line][:3]
    hostile = [line for line in lines if str(line.get("uid", "")).startswith("hostile-")]
    assert len(hostile) == len(CASES)
    assert max(len(json.dumps(line)) for line in lines) < 8192


def test_a_body_nested_past_the_json_parser_limit_keeps_its_uid(served):
    server = served()
    body = _body(admission_review(_deep_affinity(2000), uid="too-deep-to-parse"))
    response = server.review("/mutate-pod", None, data=body)
    assert response["uid"] == "too-deep-to-parse" and response["status"]["code"] == 400
