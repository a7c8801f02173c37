"""Property tests over generated pods and profiles (hypothesis)."""

from __future__ import annotations

import json
import re

import jsonpatch
from hypothesis import given

from policies.apis.objects import json_copy
from tests.support.admission import admission_review
from tests.support.builders import make_profile
from tests.support.strategies import pods, profiles, snapshot_of
from webhook.admission import serve_review
from webhook.chain import request_for, run_chain
from webhook.registry import default_routes

REGISTRY = default_routes()
MUTATE_POD = REGISTRY.by_path()["/mutate-pod"]


def mutate_over_the_wire(pod, snapshot):
    served = serve_review(MUTATE_POD, json.dumps(admission_review(pod)).encode(), snapshot, rand_int=lambda n: 0)
    response = json.loads(served.body)["response"]
    assert response["allowed"], response
    patch = json.loads(__import__("base64").b64decode(response["patch"])) if "patch" in response else []
    return patch, jsonpatch.apply_patch(pod, patch)


# Paths a profile (or the steps after it) may write; anything else must survive byte for byte.
OWNED = re.compile(
    r"^/(metadata/(labels|annotations)(/.*)?"
    r"|spec/(schedulerName|priority|priorityClassName|preemptionPolicy|terminationGracePeriodSeconds)"
    r"|spec/(containers|initContainers)/\d+/resources(/.*)?|spec/overhead(/.*)?)$"
)


@given(pods(), profiles())
def test_patch_touches_only_owned_paths_and_everything_else_survives(pod, profile_list):
    original = json_copy(pod)
    patch, result = mutate_over_the_wire(pod, snapshot_of(profile_list))
    assert pod == original, "the request object must not be modified"
    for operation in patch:
        assert OWNED.match(operation["path"]), operation
    for key in ("apiVersion", "kind", "status"):
        assert result[key] == original[key]
    for key in ("name", "namespace", "uid", "ownerReferences"):
        assert result["metadata"].get(key) == original["metadata"].get(key)
    for key in ("restartPolicy", "x-unknown-field"):
        assert result["spec"][key] == original["spec"][key]
    for section in ("containers", "initContainers"):
        for before, after in zip(original["spec"].get(section, []), result["spec"].get(section, []), strict=False):
            assert {k: v for k, v in before.items() if k != "resources"} == {
                k: v for k, v in after.items() if k != "resources"
            }


@given(pods())
def test_no_matching_profile_gives_no_patch(pod):
    never = make_profile("never", selector={"matchLabels": {"no-pod-has-this": "x"}}, labels={"x": "y"}, qosClass="BE")
    patch, _ = mutate_over_the_wire(pod, snapshot_of([never]))
    assert patch == []


@given(pods(), profiles())
def test_server_and_apply_agree(pod, profile_list):
    snapshot = snapshot_of(profile_list)
    _, over_the_wire = mutate_over_the_wire(pod, snapshot)
    chain = run_chain(request_for(pod, REGISTRY), REGISTRY, snapshot, rand_int=lambda n: 0)
    mutated = chain.object if chain.allowed else None
    if chain.allowed or chain.denied_by == "/validate-pod":
        assert chain.denied_by != "/mutate-pod"
        if mutated is not None:
            assert mutated == over_the_wire


@given(pods(), profiles(idempotent=True))
def test_a_pod_admitted_twice_comes_back_unchanged(pod, profile_list):
    """Re-admitting a mutated pod changes nothing (profiles without suffixes or key mappings)."""
    snapshot = snapshot_of(profile_list)
    _, once = mutate_over_the_wire(pod, snapshot)
    patch, twice = mutate_over_the_wire(once, snapshot)
    assert patch == [] and twice == once
