"""Hostile AdmissionReviews against every route: whatever type a field holds, the answer is an
AdmissionReview (or a plain 400), never a 500.

A valid review of each route's kind is taken apart at a drawn place, anywhere in the review (the
request's own fields, the object, the old object), and that value replaced by one of another JSON type:
a string where a number belongs, a list where a map does, a map where a string does, null anywhere.
The hot path is compiled with mypyc where users run it (`colocate/cluster/compiled.py`): a compiled function
checks its annotations when called, and a value of the wrong type raises TypeError there instead of
flowing on as in plain Python. So the same property runs in the plain checkout and, in CI, in the
compiled copy (`.ci/run`: `python -m devtools.compiled_copy DIR`, then these tests from DIR); the
last test says which build ran.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colocate.cluster.compiled import ADMISSION, compiled_modules
from tests.support.admission import QUOTA_MUTATE, QUOTA_VALIDATE, ROUTES, admission_review, make_snapshot
from tests.support.builders import make_node, make_pod, make_profile, make_quota, make_reservation, make_slo_config
from webhook.admission import serve_review

#: what a hostile client puts where another type belongs
WRONG: list[Any] = [None, "", "x", "1e308", 0, -1, 1e308, 2**70, True, [], [1], ["x"], {}, {"a": 1}, {"": None}]

SNAPSHOT = make_snapshot(
    make_profile(
        "batch",
        selector={"matchLabels": {"app": "batch"}},
        qosClass="BE",
        priorityClassName="koord-batch",
        labels={"colocate": "yes"},
        annotations={"a": "b"},
        schedulerName="koord-scheduler",
        patch={"metadata": {"labels": {"patched": "true"}}},
    ),
    make_quota("parent", is_parent=True, min={"cpu": "10", "memory": "10Gi"}, max={"cpu": "40", "memory": "40Gi"}),
)


def _reviews() -> dict[str, dict[str, Any]]:
    pod = make_pod("p", labels={"app": "batch"}, requests={"cpu": "1", "memory": "1Gi"})
    node_old = make_node("n", labels={"pool": "a"}, allocatable={"cpu": "4", "memory": "8Gi"})
    node_new = make_node(
        "n",
        labels={"pool": "a"},
        annotations={"node.koordinator.sh/resource-amplification-ratio": '{"cpu": 2}'},
        allocatable={"cpu": "4", "memory": "8Gi"},
    )
    quota = make_quota("child", parent="parent", min={"cpu": "1", "memory": "1Gi"}, max={"cpu": "2", "memory": "2Gi"})
    slo = make_slo_config({"colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 60}})
    return {
        "/mutate-pod": admission_review(pod),
        "/validate-pod": admission_review(pod, operation="UPDATE", old=pod),
        "/mutate-node-status": admission_review(
            node_new, operation="UPDATE", old=node_old, resource="nodes", sub_resource="status", kind="Node"
        ),
        "/validate-node": admission_review(node_new, operation="UPDATE", old=node_old, resource="nodes", kind="Node"),
        "/mutate-reservation": admission_review(
            make_reservation(labels={"app": "batch"}), resource="reservations", kind="Reservation"
        ),
        "/validate-reservation": admission_review(
            make_reservation(labels={"app": "batch"}), resource="reservations", kind="Reservation"
        ),
        QUOTA_MUTATE: admission_review(quota, resource="elasticquotas", kind="ElasticQuota"),
        QUOTA_VALIDATE: admission_review(quota, resource="elasticquotas", kind="ElasticQuota"),
        "/validate-configmap": admission_review(slo, resource="configmaps", kind="ConfigMap"),
    }


REVIEWS = _reviews()


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in `value` a field or an item sits, deepest last."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from _places(item, (*path, index))


PLACES = {path: list(_places(review)) for path, review in REVIEWS.items()}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "null")


def _at(review: dict[str, Any], place: tuple[Any, ...]) -> Any:
    value: Any = review
    for step in place:
        value = value[step]
    return value


def _replaced(review: dict[str, Any], place: tuple[Any, ...], value: Any) -> dict[str, Any]:
    hostile = copy.deepcopy(review)
    parent = hostile
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = value
    return hostile


def _answer(path: str, body: bytes) -> tuple[int, int | None, str]:
    """(HTTP status, the AdmissionReview's code or None, its message)."""
    served = serve_review(ROUTES[path], body, SNAPSHOT, rand_int=lambda n: 0)
    if served.status != 200:
        return served.status, None, json.loads(served.body).get("error", "")
    response = orjson.loads(served.body)["response"]
    status = response.get("status") or {}
    return 200, status.get("code"), status.get("message", "")


def test_the_valid_reviews_are_admitted() -> None:
    """The property below starts from reviews every route accepts: a failure there is the value's."""
    for path, review in REVIEWS.items():
        status, code, message = _answer(path, orjson.dumps(review))
        assert status == 200 and code in (None, 200), (path, code, message)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_wrong_typed_field_anywhere_is_a_400_never_a_500(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(sorted(REVIEWS)), label="route")
    place = data.draw(st.sampled_from(PLACES[path]), label="place")
    original = _json_type(_at(REVIEWS[path], place))
    value = data.draw(st.sampled_from([v for v in WRONG if _json_type(v) != original]), label="value")
    status, code, message = _answer(path, json.dumps(_replaced(REVIEWS[path], place, value)).encode())
    assert status in (200, 400), (status, message)
    assert code != 500 and "internal error" not in message, (path, place, value, message)


@settings(max_examples=200, deadline=None)
@given(
    path=st.sampled_from(sorted(REVIEWS)),
    field=st.sampled_from(["object", "oldObject"]),
    value=st.sampled_from(WRONG),
)
def test_an_object_of_the_wrong_type_is_a_400_admission_review(path: str, field: str, value: Any) -> None:
    review = copy.deepcopy(REVIEWS[path])
    review["request"][field] = value
    status, code, message = _answer(path, json.dumps(review).encode())
    assert status == 200 and code in (None, 200, 400), (path, field, value, code, message)


def test_the_build_under_test_is_named() -> None:
    """Plain in the checkout, every ADMISSION module compiled in `devtools.compiled_copy`'s copy."""
    compiled = compiled_modules(ADMISSION)
    assert len(compiled) in (0, len(ADMISSION)), f"a mixed build: {sorted(compiled)}"
