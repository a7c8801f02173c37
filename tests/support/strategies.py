"""Hypothesis strategies for pods and ClusterColocationProfiles, shared by the property tests of the
policies and of the audit, and the settings those tests run with (no deadline: the machines are
shared; 150 examples)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.support.admission import make_snapshot
from tests.support.builders import make_namespace, make_profile

settings.register_profile("colocate", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("colocate")

SELECTOR_KEYS = ["app", "tier"]
WRITTEN_KEYS = ["team", "example.com/role", "odd~key/x"]  # "/" and "~" exercise RFC 6901 escaping
LABEL_KEYS = SELECTOR_KEYS + WRITTEN_KEYS
VALUES = ["a", "b", "c"]
QUANTITIES = ["100m", "500m", "1", "2", "1.5", "64Mi", "1Gi", "4Gi"]

label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=3)
selector_maps = st.dictionaries(st.sampled_from(SELECTOR_KEYS), st.sampled_from(VALUES), max_size=2)
written_maps = st.dictionaries(st.sampled_from(WRITTEN_KEYS), st.sampled_from(VALUES), max_size=3)
resource_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage"]), st.sampled_from(QUANTITIES), max_size=3
)


@st.composite
def containers(draw, prefix: str) -> list[dict]:
    count = draw(st.integers(0 if prefix == "init" else 1, 2))
    result = []
    for index in range(count):
        container = {
            "name": f"{prefix}-{index}",
            "image": "busybox",
            "args": draw(st.lists(st.sampled_from(VALUES), max_size=2)),
            "env": [{"name": "E", "value": draw(st.sampled_from(VALUES))}],
        }
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
    metadata = {
        "name": "p",
        "namespace": draw(st.sampled_from(["ns-on", "ns-off", "ns-unknown"])),
        "labels": draw(label_maps),
        "uid": "1234",
        "ownerReferences": [{"kind": "Job", "name": "j", "uid": "u"}],
    }
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
        # a second pass: both are Koordinator behaviour (`doMutateByColocationProfile`), so they are left out of
        # idempotence.
        if not idempotent and draw(st.booleans()):
            spec["labelKeysMapping"] = {draw(st.sampled_from(LABEL_KEYS)): "mapped"}
        if not idempotent and draw(st.booleans()):
            spec["labelSuffixes"] = {draw(st.sampled_from(LABEL_KEYS)): "-sfx"}
        if draw(st.booleans()):
            spec["patch"] = {"spec": {"terminationGracePeriodSeconds": 30}, "metadata": {"labels": {"patched": "yes"}}}
        result.append(make_profile(f"profile-{index}", **spec))
    return result


def snapshot_of(profile_list):
    return make_snapshot(*profile_list, make_namespace("ns-on", {"colocate": "yes"}), make_namespace("ns-off"))
