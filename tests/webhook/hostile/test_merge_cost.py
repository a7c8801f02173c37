"""The strategic merge of a profile's patch walks every value of the pod: an object of more values
than any pod kube-apiserver stores is refused with a 400 before the merge, and a dense pod it does
store (1.45 MB, ~140,000 values) is still patched."""

from __future__ import annotations

import time
from typing import Any

from policies.apis.shape import MAX_NODES
from tests.support.admission import admit, make_snapshot, patched
from tests.support.builders import make_pod, make_profile

PROFILE = make_profile(
    "grace", selector={"matchLabels": {"app": "x"}}, patch={"spec": {"terminationGracePeriodSeconds": 7}}
)
SNAPSHOT = make_snapshot(PROFILE)


def dense_pod(env_entries: int) -> dict[str, Any]:
    pod = make_pod("dense", labels={"app": "x"})
    pod["spec"]["containers"][0]["env"] = [{"name": f"E{i:06d}", "value": "v"} for i in range(env_entries)]
    return pod


def test_an_object_of_millions_of_values_is_refused_before_the_merge() -> None:
    """Before: 2.7 million empty lists (8.1 MB) cost 3.4 s of blocking merge."""
    pod = make_pod("wide", labels={"app": "x"})
    pod["spec"]["x"] = [[] for _ in range(2_700_000)]
    started = time.perf_counter()
    outcome = admit("/mutate-pod", pod, SNAPSHOT)
    elapsed = time.perf_counter() - started
    assert (outcome.allowed, outcome.code) == (False, 400)
    assert (
        outcome.message
        == f"ClusterColocationProfile grace: spec.patch not applied: object: more than {MAX_NODES} values"
    )
    assert elapsed < 1.5, elapsed


def test_a_dense_pod_kube_apiserver_stores_is_still_patched() -> None:
    pod = dense_pod(46_000)  # 1.45 MB as JSON, ~140,000 values
    result = patched(pod, admit("/mutate-pod", pod, SNAPSHOT))
    assert result["spec"]["terminationGracePeriodSeconds"] == 7
    assert len(result["spec"]["containers"][0]["env"]) == 46_000


def test_commas_inside_strings_never_refuse_a_small_object() -> None:
    pod = make_pod("commas", labels={"app": "x"}, annotations={"data": "," * (MAX_NODES + 10)})
    result = patched(pod, admit("/mutate-pod", pod, SNAPSHOT))  # the estimate is over; the exact count is not
    assert result["spec"]["terminationGracePeriodSeconds"] == 7
