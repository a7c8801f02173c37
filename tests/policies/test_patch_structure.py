"""A profile's patch that leaves something that is not a Pod: refused when the profile loads, and,
should it meet a pod anyway, refused with the profile's name and the field instead of admitted (or
answered 500)."""

from __future__ import annotations

from typing import Any

import pytest

from policies.admission.profiles import ProfileError, parse_profile
from tests.support.admission import admit, make_snapshot
from tests.support.builders import make_pod, make_profile

BROKEN_PATCHES = [
    ({"spec": {"containers": None}}, "spec.containers: Required value"),
    ({"spec": {"$patch": "delete"}}, "spec: Required value"),
    ({"metadata": {"name": None}}, "metadata.name: Required value"),
    ({"spec": {"containers": "oops"}}, "spec.containers: must be a list, got str"),
    ({"spec": {"containers": [{"name": None, "image": "x"}]}}, "spec.containers[1].name: Required value"),
]


def profile(patch: dict[str, Any]) -> dict[str, Any]:
    return make_profile("breaker", selector={"matchLabels": {"app": "x"}}, patch=patch)


@pytest.mark.parametrize("patch, field", BROKEN_PATCHES)
def test_a_profile_whose_patch_breaks_a_pod_is_refused_when_it_loads(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(ProfileError) as refused:
        parse_profile(profile(patch))
    assert f"spec.patch: Invalid value: makes an invalid pod: {field}" in str(refused.value)


@pytest.mark.parametrize("patch, field", BROKEN_PATCHES)
def test_a_pod_such_a_patch_meets_is_refused_naming_the_profile_and_the_field(
    patch: dict[str, Any], field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: admitted as an invalid pod (or a 500 for `containers: "oops"`)."""
    monkeypatch.setattr("policies.admission.profiles.patch_structure_error", lambda patch: None)  # as if loaded before
    snapshot = make_snapshot(profile(patch))
    assert snapshot.profiles, "the profile loads without the load-time check"
    outcome = admit("/mutate-pod", make_pod("victim", labels={"app": "x"}), snapshot)
    assert not outcome.allowed
    assert outcome.message == f"ClusterColocationProfile breaker: spec.patch makes an invalid object: {field}"


def test_sound_patches_still_load_and_apply() -> None:
    patch = {"spec": {"containers": [{"name": "sidecar", "image": "proxy"}], "terminationGracePeriodSeconds": 5}}
    snapshot = make_snapshot(profile(patch))
    outcome = admit("/mutate-pod", make_pod("ok", labels={"app": "x"}), snapshot)
    assert outcome.allowed and outcome.patch


def test_a_pod_that_arrives_without_a_name_is_the_requests_fault_a_400_not_the_profiles() -> None:
    """A sound patch meeting a pod that was malformed before it (no name: kube-apiserver names a pod
    before admission) is a 400 naming the field; a 500 would blame the profile (and the webhook)."""
    snapshot = make_snapshot(profile({"spec": {"terminationGracePeriodSeconds": 5}}))
    pod = make_pod("nameless", labels={"app": "x"})
    pod["metadata"]["name"] = None
    outcome = admit("/mutate-pod", pod, snapshot)
    assert not outcome.allowed and outcome.code == 400
    assert outcome.message == "object: metadata.name: Required value"
