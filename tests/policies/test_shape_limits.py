"""Issue 41's low items on the shape check: a verdict that depended on earlier requests, a quantity
that passed it and then failed with 500, and a pod whose quantities cost seconds of CPU."""

from __future__ import annotations

import json

from policies.apis import shape
from policies.apis.shape import MAX_QUANTITIES, object_error
from tests.support.admission import ROUTES, admission_review, make_snapshot
from tests.support.builders import make_container, make_pod
from webhook.admission import serve_review


def test_a_boolean_quantity_is_refused_whatever_was_checked_before():
    shape._quantity_error.cache_clear()
    assert object_error("Pod", make_pod(containers=[make_container(requests={"cpu": 1.0})])) is None
    pod = make_pod(containers=[make_container(requests={"cpu": True})])
    assert "spec.containers[0].resources.requests.cpu: quantities must be strings or numbers" in object_error(
        "Pod", pod
    )


def _code(path: str, pod: dict) -> int:
    served = serve_review(ROUTES[path], json.dumps(admission_review(pod)).encode(), make_snapshot())
    return json.loads(served.body)["response"].get("status", {}).get("code", 200)


def test_a_cpu_of_1e64_is_a_bad_object_not_an_internal_error():
    for amount in ("1e64", 1e64, "9223372036854776"):  # the last: one core past what int64 counts in milli
        pod = make_pod(containers=[make_container(requests={"cpu": amount})])
        assert "must be at most 9223372036854775807m" in object_error("Pod", pod)
        assert _code("/mutate-pod", pod) == 400
    assert object_error("Pod", make_pod(containers=[make_container(requests={"cpu": "9223372036854775"})])) is None


def test_a_pod_with_more_quantities_than_the_limit_is_refused_before_any_is_parsed():
    per_container = 40
    containers = [
        make_container(name=f"c{i}", requests={f"example.com/r{j}": f"{i * 100 + j}" for j in range(per_container)})
        for i in range(MAX_QUANTITIES // per_container + 1)
    ]
    pod = make_pod(containers=containers)
    shape._quantity_error.cache_clear()
    assert (
        object_error("Pod", pod)
        == f"object.spec: more than {MAX_QUANTITIES} resource quantities in its containers' requests and limits"
    )
    assert shape._quantity_error.cache_info().misses == 0
    assert _code("/mutate-pod", pod) == 400 and _code("/validate-pod", pod) == 400
    containers.pop()
    assert object_error("Pod", make_pod(containers=containers)) is None
