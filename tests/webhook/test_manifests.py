"""`manifests/` deploys what the code serves: routes, reads, schemas, HA settings."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from colocate.cluster.files import read_manifest_file
from tests.support.dispatcher import POD, rule_matches
from tests.support.kustomize import K8S_VERSION, render
from tests.support.webhook_manifests import (
    MANIFESTS,
    MUTATING_TIMEOUT,
    WEBHOOKS_FILE,
    comparable,
    expected_webhooks,
)
from webhook.registry import default_routes
from webhook.review import SUPPORTED_API_VERSIONS
from webhook.watched import watched_kinds


def load(path: Path) -> list[dict[str, Any]]:
    return read_manifest_file(path)


def kustomized() -> list[dict[str, Any]]:
    """Every object `kubectl apply -k manifests/overlays/everything` creates (the default install
    and the example profiles among them)."""
    return render(MANIFESTS / "overlays" / "everything")


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [o for o in kustomized() if o["kind"] == kind]


def webhook_deployment() -> dict[str, Any]:
    """The webhook's Deployment (the koord-scheduler, koordlet and descheduler have their own tests)."""
    (deployment,) = [
        d for d in by_kind("Deployment") if d["metadata"]["labels"].get("app.kubernetes.io/component") == "webhook"
    ]
    return deployment


def test_webhook_configurations_match_the_handler_registry() -> None:
    registry = default_routes()
    configurations = {c["kind"]: c for c in load(WEBHOOKS_FILE)}
    for kind, mutating in (("MutatingWebhookConfiguration", True), ("ValidatingWebhookConfiguration", False)):
        found = [comparable(w) for w in configurations[kind]["webhooks"]]
        assert found == expected_webhooks(registry, mutating), (
            f"{WEBHOOKS_FILE} is out of date: regenerate with `colocate manifests webhooks`"
        )
    paths = {w["clientConfig"]["service"]["path"] for c in configurations.values() for w in c["webhooks"]}
    assert paths == {r.path for r in registry.routes}


def test_every_webhook_is_quick_side_effect_free_and_skips_system_namespaces() -> None:
    for configuration in load(WEBHOOKS_FILE):
        for webhook in configuration["webhooks"]:
            assert webhook["sideEffects"] == "None"
            # versions the server answers in (it speaks both; the API server sends the first it knows)
            assert {f"admission.k8s.io/{v}" for v in webhook["admissionReviewVersions"]} <= set(SUPPORTED_API_VERSIONS)
            limit = MUTATING_TIMEOUT if configuration["kind"].startswith("Mutating") else 10
            assert 1 <= webhook["timeoutSeconds"] <= limit
            expressions = webhook["namespaceSelector"]["matchExpressions"]
            # vconfigmap's objects live in koordinator-system: only its objectSelector narrows it
            system = (
                {"kube-system"}
                if webhook["name"] == "vconfigmap.koordinator.sh"
                else {"kube-system", "koordinator-system"}
            )
            if webhook["name"] != "vconfigmap.koordinator.sh":
                assert {"key": "control-plane", "operator": "DoesNotExist"} in expressions
            assert any(
                e["key"] == "kubernetes.io/metadata.name" and e["operator"] == "NotIn" and system <= set(e["values"])
                for e in expressions
            )


def test_pods_are_sent_to_the_pod_webhooks() -> None:
    names = [
        w["name"]
        for c in load(WEBHOOKS_FILE)
        for w in c["webhooks"]
        if any(rule_matches(r, POD, "CREATE") for r in w["rules"])
    ]
    assert names == ["mpod-create.koordinator.sh", "vpod.koordinator.sh"]


@pytest.mark.parametrize(
    "obj",
    [
        o
        for o in kustomized()
        if "/" not in o["apiVersion"] or o["apiVersion"].split("/")[0].endswith((".k8s.io", "apps", "policy"))
    ],
    ids=lambda o: f"{o['kind']}/{o['metadata']['name']}",
)
def test_every_builtin_manifest_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def crd_schema(kind: str) -> dict[str, Any]:
    crd = next(c for c in by_kind("CustomResourceDefinition") if c["spec"]["names"]["kind"] == kind)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_the_example_profiles_pass_the_crd_schema() -> None:
    profiles = by_kind("ClusterColocationProfile")
    assert profiles
    for profile in profiles:
        jsonschema.validate(profile, crd_schema("ClusterColocationProfile"))


@pytest.mark.parametrize(
    "field,value",
    [
        ("qosClass", "GOLD"),
        ("probability", "150%"),
        ("probability", 101),
        ("koordinatorPriority", "high"),
        ("labels", {"a": 1}),
        ("selector", {"matchExpressions": [{"key": "a", "operator": "Near"}]}),
        ("patch", "not an object"),
    ],
)
def test_the_crd_schema_refuses_a_malformed_profile(field: str, value: Any) -> None:
    profile = copy.deepcopy(by_kind("ClusterColocationProfile")[0])
    profile["spec"][field] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(profile, crd_schema("ClusterColocationProfile"))


def test_rbac_lets_colocate_list_and_watch_everything_it_reads() -> None:
    rules = [r for role in by_kind("ClusterRole") + by_kind("Role") for r in role["rules"]]
    for kind in watched_kinds(default_routes()):
        assert any(
            kind.group in r["apiGroups"]
            and kind.plural in r["resources"]
            and {"list", "watch"} <= set(r["verbs"])
            and "resourceNames" not in r
            for r in rules
        ), kind.kind
    assert not any("*" in r["verbs"] or "*" in r["resources"] for r in rules)


def test_the_deployment_is_highly_available_and_locked_down() -> None:
    deployment = webhook_deployment()
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] == 3 and by_kind("PodDisruptionBudget")
    assert spec["affinity"]["podAntiAffinity"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # the probes read the health listener, never the webhook port (webhook.probes)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    assert int(args["health-probe-bind-address"].rpartition(":")[2]) == ports["health"]
    assert int(args["metrics-bind-address"].rpartition(":")[2]) == ports["metrics"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "health" and container[probe]["httpGet"]["scheme"] == "HTTP"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert spec["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    assert float(args["drain-delay"]) + float(args["shutdown-timeout"]) < spec["terminationGracePeriodSeconds"]
    (service,) = by_kind("Service")
    paths = {w["clientConfig"]["service"]["name"] for c in load(WEBHOOKS_FILE) for w in c["webhooks"]}
    assert paths == {service["metadata"]["name"]}


def test_the_network_policy_admits_only_the_ports_of_the_webhook_pods() -> None:
    deployment = webhook_deployment()
    (policy,) = [p for p in by_kind("NetworkPolicy") if p["metadata"]["name"] == "colocate-webhook"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    declared = [{"port": p["containerPort"], "protocol": "TCP"} for p in container["ports"]]
    ports = [port for rule in policy["spec"]["ingress"] for port in rule["ports"]]
    assert sorted(ports, key=str) == sorted(declared, key=str)
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}


def workers_of(container: dict[str, Any]) -> int:
    """The server processes the container runs: `--workers`, with `auto` resolved against its CPU limit
    on a node with more CPUs than that (the case the limit is for)."""
    from policies.apis.quantity import Quantity
    from webhook.workers import Cpus, parse_workers, resolve_workers

    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    limit = Quantity.parse(container["resources"]["limits"]["cpu"]).value()
    return resolve_workers(parse_workers(args.get("workers", "1")), Cpus(usable=1024, limit=float(limit)))


def test_the_deployment_runs_one_worker_per_cpu_of_its_limit() -> None:
    """docs/sizing.md: `--workers auto` is the replica's default; it needs a CPU limit (without one it
    would start a worker per CPU of the node, each holding the whole cluster state)."""
    (container,) = webhook_deployment()["spec"]["template"]["spec"]["containers"]
    assert "--workers=auto" in container["args"]
    assert workers_of(container) == 2


def test_the_memory_limit_covers_a_full_connection_table() -> None:
    """docs/serve.md "Sizing": base + connections x their cost + bodies held + one body parsing < limit."""
    from policies.apis.quantity import Quantity
    from webhook.connections import (
        DEFAULT_MAX_BODY,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_CONNECTIONS,
        MEMORY_BASE_MIB,
        MEMORY_PER_CONNECTION_KIB,
        PARSED_BODY_FACTOR,
    )

    deployment = webhook_deployment()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"] if "=" in a)
    connections = int(args.get("max-connections", DEFAULT_MAX_CONNECTIONS))
    workers = workers_of(container)
    max_body_mib = int(args.get("max-body", DEFAULT_MAX_BODY)) / 2**20
    bodies_mib = int(args.get("body-budget-bytes", DEFAULT_MAX_BODY_BYTES)) / 2**20
    parent_mib = MEMORY_BASE_MIB if workers > 1 else 0  # the process that started the workers
    needed_mib = parent_mib + workers * (
        MEMORY_BASE_MIB
        + connections * MEMORY_PER_CONNECTION_KIB / 1024
        + bodies_mib
        + PARSED_BODY_FACTOR * max_body_mib
    )
    limit_mib = Quantity.parse(container["resources"]["limits"]["memory"]).value() / 2**20
    assert needed_mib <= limit_mib, f"{needed_mib:.0f} MiB needed, {limit_mib:.0f} MiB limit"
