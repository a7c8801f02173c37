"""Property tests over generated pods and profiles (hypothesis)."""
from __future__ import annotations

import json
import re

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.objects import json_copy
from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_namespace, make_profile
from webhook.admission import serve_review
from webhook.chain import request_for, run_chain
from webhook.registry import default_routes

REGISTRY = default_routes()
MUTATE_POD = REGISTRY.by_path()["/mutate-pod"]
SELECTOR_KEYS = ["app", "tier"]
WRITTEN_KEYS = ["team", "example.com/role", "odd~key/x"]  # "/" and "~" exercise RFC 6901 escaping
LABEL_KEYS = SELECTOR_KEYS + WRITTEN_KEYS
VALUES = ["a", "b", "c"]
QUANTITIES = ["100m", "500m", "1", "2", "1.5", "64Mi", "1Gi", "4Gi"]

label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=3)
selector_maps = st.dictionaries(st.sampled_from(SELECTOR_KEYS), st.sampled_from(VALUES), max_size=2)
written_maps = st.dictionaries(st.sampled_from(WRITTEN_KEYS), st.sampled_from(VALUES), max_size=3)
resource_lists = st.dictionaries(st.sampled_from(["cpu", "memory", "ephemeral-storage"]),
                                 st.sampled_from(QUANTITIES), max_size=3)


@st.composite
def containers(draw, prefix: str) -> list[dict]:
    count = draw(st.integers(0 if prefix == "init" else 1, 2))
    result = []
    for index in range(count):
        container = {"name": f"{prefix}-{index}", "image": "busybox",
                     "args": draw(st.lists(st.sampled_from(VALUES), max_size=2)),
                     "env": [{"name": "E", "value": draw(st.sampled_from(VALUES))}]}
        resources = {}
        for section in ("requests", "limits"):
            values = draw(resource_lists)
            if values:
                resources[section] = values
        if resources or draw(st.booleans()):
            container["resources"] = resources
        result.append(container)
    return result


@st.composite
def pods(draw) -> dict:
    metadata = {"name": "p", "namespace": draw(st.sampled_from(["ns-on", "ns-off", "ns-unknown"])),
                "labels": draw(label_maps), "uid": "1234",
                "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u"}]}
    if draw(st.booleans()):
        metadata["annotations"] = draw(label_maps)
    spec = {"containers": draw(containers("main")), "restartPolicy": "Never", "x-unknown-field": {"keep": [1, 2]}}
    init = draw(containers("init"))
    if init:
        spec["initContainers"] = init
    if draw(st.booleans()):
        spec["overhead"] = draw(resource_lists)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


@st.composite
def profiles(draw, idempotent: bool = False) -> list[dict]:
    result = []
    for index in range(draw(st.integers(0, 3))):
        spec = {}
        if draw(st.booleans()):
            spec["selector"] = {"matchLabels": draw(selector_maps)}
        if draw(st.booleans()):
            spec["namespaceSelector"] = {"matchLabels": {"colocate": "yes"}}
        # With idempotent=True profiles never write a label that a selector reads, since a profile that
        # makes another one match on a second pass changes the pod again, in Koordinator too.
        spec["labels"] = draw(written_maps if idempotent else label_maps)
        spec["annotations"] = draw(label_maps)
        if draw(st.booleans()):
            spec["qosClass"] = draw(st.sampled_from(["LS", "BE", "LSR", "SYSTEM"]))
        if draw(st.booleans()):
            spec["priorityClassName"] = draw(st.sampled_from(["koord-prod", "koord-mid", "koord-batch", "koord-free"]))
        if draw(st.booleans()):
            spec["koordinatorPriority"] = draw(st.integers(0, 2000))
        if draw(st.booleans()):
            spec["schedulerName"] = "koord-scheduler"
        # Suffixes append again, and a mapping whose source a later profile sets copies the new value on
        # a second pass: both are Koordinator behaviour (spec 5.4), so they are left out of idempotence.
        if not idempotent and draw(st.booleans()):
            spec["labelKeysMapping"] = {draw(st.sampled_from(LABEL_KEYS)): "mapped"}
        if not idempotent and draw(st.booleans()):
            spec["labelSuffixes"] = {draw(st.sampled_from(LABEL_KEYS)): "-sfx"}
        if draw(st.booleans()):
            spec["patch"] = {"spec": {"terminationGracePeriodSeconds": 30},
                             "metadata": {"labels": {"patched": "yes"}}}
        result.append(make_profile(f"profile-{index}", **spec))
    return result


def snapshot_of(profile_list):
    return make_snapshot(*profile_list, make_namespace("ns-on", {"colocate": "yes"}), make_namespace("ns-off"))


def mutate_over_the_wire(pod, snapshot):
    served = serve_review(MUTATE_POD, json.dumps(admission_review(pod)).encode(), snapshot, rand_int=lambda n: 0)
    response = json.loads(served.body)["response"]
    assert response["allowed"], response
    patch = json.loads(__import__("base64").b64decode(response["patch"])) if "patch" in response else []
    return patch, jsonpatch.apply_patch(pod, patch)


# Paths a profile (or the steps after it) may write; anything else must survive byte for byte.
OWNED = re.compile(r"^/(metadata/(labels|annotations)(/.*)?"
                   r"|spec/(schedulerName|priority|priorityClassName|preemptionPolicy|terminationGracePeriodSeconds)"
                   r"|spec/(containers|initContainers)/\d+/resources(/.*)?|spec/overhead(/.*)?)$")

settings.register_profile("colocate", deadline=None, max_examples=150,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("colocate")


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
            assert ({k: v for k, v in before.items() if k != "resources"}
                    == {k: v for k, v in after.items() if k != "resources"})


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
