"""What the plugins declare they read is what the webhook watches and what RBAC grants it.

The declaration is checked against behaviour too: every plugin is run over the sample objects on a
snapshot that records what is read, and may read only what it declared.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.files import read_manifest_file
from colocate.cluster.kinds import WatchedKind
from policies.admission.plugin import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionContext,
    AdmissionRequest,
    Denied,
    GroupVersionResource,
    Read,
)
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.constants import ELASTIC_QUOTA_KIND, PROFILE_KIND
from tests.support.paths import REPO
from webhook.registry import Registry, Route, default_routes, node_routes, pod_routes
from webhook.watched import ReadRule, merged_reads, read_rules, watched_kinds

FIXTURES = Path(__file__).parent / "fixtures"
RBAC = REPO / "manifests" / "deploy" / "rbac.yaml"
DEPLOYMENT = REPO / "manifests" / "deploy" / "deployment.yaml"
CLUSTER_OBJECTS = [
    *sorted((REPO / "manifests" / "cluster").glob("*.yaml")),
    *sorted(FIXTURES.glob("*.yaml")),
    REPO / "manifests" / "samples" / "quota-tree" / "state" / "quotas.yaml",
]
SAMPLE_OBJECTS = [
    *CLUSTER_OBJECTS,
    *sorted((REPO / "manifests" / "samples").glob("*.yaml")),
    *sorted((REPO / "manifests" / "samples" / "quota-tree").glob("*.yaml")),
]
assert len(CLUSTER_OBJECTS) > 4, "the sample paths moved: update them"
# Granted to the certificate controller and its leader election (certs/), not to admission plugins.
CERTIFICATE_READS = {
    ("", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("koordinator-system", "", "secrets"),
    ("koordinator-system", "coordination.k8s.io", "leases"),
}
# Listed by the audit's PolicyReport writer (webhook/rollout/reports.py), which writes them too.
REPORT_READS = {("", "wgpolicyk8s.io", "policyreports")}


def test_the_webhook_watches_what_its_plugins_read_narrowed_where_they_allow() -> None:
    watched = [(w.kind, w.namespace, w.field_selector) for w in watched_kinds(default_routes())]
    assert watched == [
        ("ClusterColocationProfile", "", ""),
        ("Namespace", "", ""),
        ("PriorityClass", "", ""),
        ("ElasticQuota", "", ""),
        ("ConfigMap", "koordinator-system", "metadata.name=slo-controller-config"),
        ("Node", "", ""),
        ("Pod", "", ""),
    ]
    assert all(isinstance(w, WatchedKind) for w in watched_kinds(default_routes()))


def test_a_registry_watches_only_what_its_own_routes_read() -> None:
    assert [w.kind for w in watched_kinds(Registry(tuple(node_routes())))] == ["ConfigMap"]
    assert {w.kind for w in watched_kinds(Registry(tuple(pod_routes())))} == {
        PROFILE_KIND,
        "Namespace",
        "PriorityClass",
        ELASTIC_QUOTA_KIND,
    }


@pytest.mark.parametrize(
    "reads, merged",
    [
        ([Read("ConfigMap", "a", "x"), Read("ConfigMap", "a", "x")], Read("ConfigMap", "a", "x")),
        ([Read("ConfigMap", "a", "x"), Read("ConfigMap", "a", "y")], Read("ConfigMap", "a")),
        ([Read("ConfigMap", "a", "x"), Read("ConfigMap", "b", "x")], Read("ConfigMap")),
        ([Read("ConfigMap", "a"), Read("ConfigMap")], Read("ConfigMap")),
        ([Read("Node", name="n1"), Read("Node", name="n2")], Read("Node")),
        ([Read("Pod", metadata_only=True), Read("Pod", metadata_only=True)], Read("Pod", metadata_only=True)),
        ([Read("Pod", metadata_only=True), Read("Pod")], Read("Pod")),  # one reader of whole pods keeps them whole
        ([Read("Pod", "a", metadata_only=True), Read("Pod", "a")], Read("Pod", "a")),
        ([Read("Pod", "a", metadata_only=True), Read("Pod", "b", metadata_only=True)], Read("Pod", metadata_only=True)),
    ],
)
def test_two_reads_of_one_kind_widen_to_cover_both(reads: list[Read], merged: Read) -> None:
    assert merged_reads(reads) == (merged,)
    assert merged_reads(reversed(reads)) == (merged,)


def test_a_read_names_a_kind_of_the_kinds_table_and_a_namespace_only_when_namespaced() -> None:
    with pytest.raises(KeyError):
        Read("Gadget")
    with pytest.raises(ValueError, match="cluster-scoped"):
        Read("Node", namespace="default")


def test_the_read_rules_follow_the_watches() -> None:
    assert read_rules(default_routes()) == (
        ReadRule("", "config.koordinator.sh", "clustercolocationprofiles"),
        ReadRule("", "", "namespaces"),
        ReadRule("", "scheduling.k8s.io", "priorityclasses"),
        ReadRule("", "scheduling.sigs.k8s.io", "elasticquotas"),
        ReadRule("koordinator-system", "", "configmaps", ("slo-controller-config",)),
        ReadRule("", "", "nodes"),
        ReadRule("", "", "pods"),
    )


# --- the checked-in RBAC manifest -------------------------------------------------------------------


def bound_rules() -> list[tuple[str, Mapping[str, Any]]]:
    """(namespace or "" for cluster-wide, rule) of every role bound to the webhook's service account."""
    (deployment,) = read_manifest_file(DEPLOYMENT)
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    namespace = deployment["metadata"]["namespace"]
    objects = read_manifest_file(RBAC)
    roles = {
        (o["kind"], o["metadata"].get("namespace", "")): o for o in objects if o["kind"] in ("ClusterRole", "Role")
    }
    rules: list[tuple[str, Mapping[str, Any]]] = []
    for binding in (o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account and s["namespace"] == namespace
            for s in binding["subjects"]
        ):
            continue
        scope = binding["metadata"].get("namespace", "")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else "")]
        rules.extend((scope, rule) for rule in role["rules"])
    return rules


def grants(scope: str, rule: Mapping[str, Any], need: ReadRule) -> bool:
    """Does `rule`, bound in `scope`, allow list and watch as `need` asks (RBAC semantics)?"""
    names = rule.get("resourceNames") or []
    return (
        (not scope or scope == need.namespace)
        and need.api_group in rule["apiGroups"]
        and need.resource in rule["resources"]
        and set(need.verbs) <= set(rule["verbs"])
        and (not names or (bool(need.resource_names) and set(need.resource_names) <= set(names)))
    )


@pytest.mark.parametrize("need", read_rules(default_routes()), ids=lambda r: r.resource)
def test_rbac_grants_every_derived_read(need: ReadRule) -> None:
    assert any(grants(scope, rule, need) for scope, rule in bound_rules()), f"{RBAC} does not grant {need}"


def test_rbac_lets_the_webhook_read_nothing_its_plugins_do_not() -> None:
    derived = {(r.namespace, r.api_group, r.resource) for r in read_rules(default_routes())}
    granted = {
        (scope, group, resource)
        for scope, rule in bound_rules()
        if {"get", "list", "watch"} & set(rule["verbs"])
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted - CERTIFICATE_READS - REPORT_READS == derived


# --- the declarations are honest ---------------------------------------------------------------------


class RecordingSnapshot(ClusterSnapshot):
    """A snapshot that notes every part of the cluster read through it."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("profiles", "profile_index"):
            object.__getattribute__(self, "_note")(Read(PROFILE_KIND))
        elif name == "quotas":
            object.__getattribute__(self, "_note")(Read(ELASTIC_QUOTA_KIND))
        elif name == "objects":
            raise AssertionError("a plugin reads the cluster through the snapshot's accessors, not `objects`")
        return super().__getattribute__(name)

    def _note(self, read: Read) -> None:
        self.__dict__.setdefault("read", []).append(read)

    def _objects(self, kind: str) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        objects: Mapping[str, Mapping[tuple[str, str], Mapping[str, Any]]] = object.__getattribute__(self, "objects")
        return objects.get(kind, {})

    def get(self, kind: str, name: str, namespace: str = "") -> Mapping[str, Any] | None:
        self._note(Read(kind, namespace, name))
        return self._objects(kind).get((namespace, name))

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]:
        self._note(Read(kind))
        return self._objects(kind).values()


def recording(snapshot: ClusterSnapshot) -> RecordingSnapshot:
    return RecordingSnapshot(**{f: getattr(snapshot, f) for f in ClusterSnapshot.__dataclass_fields__})


def covers(declared: Read, read: Read) -> bool:
    return (
        declared.kind == read.kind and declared.namespace in ("", read.namespace) and declared.name in ("", read.name)
    )


def requests_for(route: Route, objects: list[dict[str, Any]]) -> Iterator[AdmissionRequest]:
    resource = GroupVersionResource(route.api_group, route.api_version, route.resource)
    for obj in (o for o in objects if o.get("kind") == route.kind):
        relabelled = copy.deepcopy(obj)
        relabelled.setdefault("metadata", {})["labels"] = {**(obj["metadata"].get("labels") or {}), "zone": "z1"}
        base = AdmissionRequest(
            "u",
            CREATE,
            resource,
            route.sub_resource,
            route.kind,
            obj["metadata"].get("namespace", ""),
            obj["metadata"]["name"],
        )
        yield replace(base, object=obj)
        yield replace(base, operation=UPDATE, object=relabelled, old_object=obj)
        yield replace(base, operation=DELETE, old_object=obj)


def samples() -> list[dict[str, Any]]:
    objects = [o for path in SAMPLE_OBJECTS for o in read_manifest_file(path)]
    config = next(o for o in objects if o["kind"] == "ConfigMap")
    readable = copy.deepcopy(config)  # only well-formed strategies: the per-node check then lists the Nodes
    readable["data"] = {"colocation-config": config["data"]["colocation-config"]}
    return [*objects, readable]


def reads_of_each_call(route: Route) -> Iterator[tuple[str, AdmissionRequest, list[Read]]]:
    """(plugin name, request, what it read) for each plugin of `route` on each sample request."""
    snapshot = ClusterSnapshot.from_objects(("sample", o) for path in CLUSTER_OBJECTS for o in read_manifest_file(path))
    for plugin in route.plugins:
        for request in requests_for(route, samples()):
            cluster = recording(snapshot)
            ctx = AdmissionContext(request, cluster, lambda n: 0)
            obj = copy.deepcopy(dict(request.object or request.old_object or {}))
            try:
                if route.mutating:
                    plugin.mutate(obj, ctx)  # type: ignore[union-attr]
                else:
                    plugin.validate(obj, ctx)  # type: ignore[union-attr]
            except Denied:
                pass
            yield plugin.name, request, cluster.__dict__.get("read", [])


@pytest.mark.parametrize("route", default_routes().routes, ids=lambda r: r.path)
def test_each_plugin_reads_only_what_it_declares(route: Route) -> None:
    declared = {plugin.name: plugin.reads for plugin in route.plugins}
    for name, request, read in reads_of_each_call(route):
        undeclared = [r for r in read if not any(covers(d, r) for d in declared[name])]
        assert not undeclared, f"{name} on {request.operation} read {undeclared}, declared {declared[name]}"


def test_the_samples_exercise_every_declared_read() -> None:
    """Otherwise the test above proves little: each declared kind is read at least once."""
    read = {r.kind for route in default_routes().routes for _, _, reads in reads_of_each_call(route) for r in reads}
    assert read == {r.kind for r in default_routes().reads()}
