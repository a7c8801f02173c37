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
    ("/mutate-pod", _deep_affinity(900), "nested more than 254 levels deep"),
    ("/validate-pod", _deep_affinity(900), "nested more than 254 levels deep"),
    ("/mutate-pod", _deep_limits(1000), "nested more than 254 levels deep"),
    ("/mutate-pod", _string_containers(), "object.spec.containers: must be a list, got str"),
    ("/validate-pod", _string_containers(), "object.spec.containers: must be a list, got str"),
    ("/mutate-pod", _quantity("-2"), "requests.cpu: must be greater than or equal to 0"),
    ("/mutate-pod", _quantity("9" * 5000), "quantities must be at most 64 characters"),
    ("/mutate-pod", _quantity("1e999999999"), "quantity exponents must be within"),
    ("/mutate-pod", _quantity("1EE"), "unable to parse quantity's suffix"),  # was a 500
    ("/validate-pod", _quantity("2e"), "unable to parse quantity's suffix"),
]


def test_each_hostile_object_is_a_counted_400_admission_review_in_one_short_log_line(served):
    server = served()
    for index, (path, pod, message) in enumerate(CASES):
        response = server.review(path, None, data=_body(admission_review(pod, uid=f"hostile-{index}")), timeout=10)
        assert response["uid"] == f"hostile-{index}"
        assert not response["allowed"], (path, message)
        assert response["status"]["code"] == 400 and message in response["status"]["message"], response
    mutate_cases = sum(1 for path, _, _ in CASES if path == "/mutate-pod")
    assert (
        server.metric("colocate_webhook_refused_requests_total", webhook="/mutate-pod", reason="bad_object")
        == mutate_cases - 2
    )
    assert server.metric("colocate_webhook_refused_requests_total", webhook="/mutate-pod", reason="bad_review") == 2
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


def test_an_object_as_deep_as_allowed_passes_every_recursive_walk():
    """MAX_DEPTH is what keeps recursion away from Python's limit: an object at the limit goes
    through the copy, the diff, a profile's strategic merge patch, a warn-only what-if, an
    explanation and an audit without a RecursionError (which would be a 500)."""
    import json as json_module

    from policies.apis.constants import ANNOTATION_ENFORCEMENT, ENFORCEMENT_WARN
    from policies.apis.shape import MAX_DEPTH
    from tests.support.admission import make_snapshot
    from tests.support.builders import make_profile
    from webhook.chain import request_for, run_chain
    from webhook.registry import default_routes

    pod = make_pod("deep", labels={"app": "deep"})
    deep: object = "x"
    for _ in range(MAX_DEPTH - 3):  # the pod, its spec and the affinity are three levels
        deep = {"a": deep}
    pod["spec"]["affinity"] = deep
    assert json_module.loads(json_module.dumps(pod)) == pod
    cluster = make_snapshot(
        make_profile(
            "enforced",
            selector={"matchLabels": {"app": "deep"}},
            qosClass="BE",
            priorityClassName="koord-batch",
            patch={"spec": {"affinity": {"b": "y"}}, "metadata": {"labels": {"patched": "yes"}}},
        ),
        make_profile(
            "warn-only",
            metadata_annotations={ANNOTATION_ENFORCEMENT: ENFORCEMENT_WARN},
            selector={"matchLabels": {"app": "deep"}},
            labels={"would": "add"},
        ),
    )
    registry = default_routes()
    for audit in (False, True):
        result = run_chain(request_for(pod, registry), registry, cluster, explain=True, audit=audit)
        assert result.allowed, (audit, result.message)
        assert result.object is not None and result.object["metadata"]["labels"]["patched"] == "yes"
        assert result.object["spec"]["affinity"]["b"] == "y"
