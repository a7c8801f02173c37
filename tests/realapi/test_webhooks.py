"""colocate's webhook behind a real API server (kube-apiserver v1.20.2), as an operator meets it.

One `colocate serve --kubeconfig` for the module, reading the cluster from the API server, with the
certificates `colocate certs generate` wrote; our two webhook configurations (as
`colocate manifests webhooks` renders them) call it by URL, trusting that CA. Objects are created
through the API server, which calls the webhook: what is stored, or the refusal a client sees, is
what the tests check. The cluster state the webhook needs (profiles, labelled namespaces, a parent
quota) exists before the server starts, so no test races the webhook's watches.
"""

from __future__ import annotations

import base64
import re
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from certs.names import MUTATING, VALIDATING
from colocate.cluster.rest import ApiError, call
from colocate.testing.builders import make_quota, make_reservation, make_slo_config
from tests.realapi.objects import LARGE, MEDIUM, SMALL, colocate, pod, serve_from_api, tier_ls
from tests.support.kubelet import project
from tests.support.paths import REPO
from tests.support.realapi import ALL_CRDS, RealApi
from tests.support.served import Served
from tests.support.wait import wait_for_sync

pytestmark = pytest.mark.realapi

EXAMPLES = REPO / "manifests" / "cluster"
ADMISSION = "admissionregistration.k8s.io/v1"
CONFIGURATIONS = (("MutatingWebhookConfiguration", MUTATING), ("ValidatingWebhookConfiguration", VALIDATING))
COLOCATION = {"koordinator.sh/enable-colocation": "true"}


@dataclass
class Webhook:
    served: Served
    be_namespace: str  # labelled for the example BE profile
    quota_namespace: str  # holds the parent quota


def install(realapi: RealApi) -> None:
    """The CRDs, the example PriorityClasses and profiles, and the slo-controller-config's namespace."""
    realapi.install_crds(*ALL_CRDS)
    realapi.apply_file(EXAMPLES / "priorityclasses.yaml")
    realapi.apply_file(EXAMPLES / "profiles.yaml")
    realapi.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "koordinator-system"}}])


@pytest.fixture(scope="module")
def webhook(realapi: RealApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    install(realapi)
    be_namespace = realapi.create_namespace("colocated")
    realapi.core.patch_namespace(be_namespace, {"metadata": {"labels": COLOCATION}})
    quota_namespace = realapi.create_namespace("quotas")
    realapi.apply([make_quota("parent", quota_namespace, is_parent=True, tree_id="tree-1", min=MEDIUM, max=LARGE)])
    base = tmp_path_factory.mktemp("webhook")
    served = serve_from_api(realapi, base)
    registered: list[tuple[str, str]] = []
    try:
        url = f"https://127.0.0.1:{served.port}"
        registered = realapi.register_colocate_webhooks(url, (served.certs / "ca.crt").read_bytes())
        yield Webhook(served, be_namespace, quota_namespace)
    finally:
        for kind, name in registered:
            realapi.delete(ADMISSION, kind, name)
        served.stop()
        for namespace in (be_namespace, quota_namespace):
            realapi.delete_namespace(namespace)


def refusal(attempt: Any) -> str:
    """The message a client gets when the API server refuses what `attempt()` sends."""
    with pytest.raises(ApiError) as refused:
        attempt()
    return str(refused.value)


def test_a_be_pod_is_stored_as_koordinator_makes_it(realapi: RealApi, webhook: Webhook) -> None:
    batch = pod("spark-0", COLOCATION, requests={"cpu": "500m", "memory": "2Gi"}, limits={"cpu": "1", "memory": "4Gi"})

    stored = realapi.apply([batch], webhook.be_namespace)[0]

    labels = stored["metadata"]["labels"]
    assert labels["koordinator.sh/qosClass"] == "BE"
    assert labels["koordinator.sh/priority"] == "1000"
    assert labels["koordinator.sh/mutated"] == "true"
    assert stored["metadata"]["annotations"]["koordinator.sh/intercepted"] == "true"
    spec = stored["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == ("koord-batch", 5000)
    assert spec["schedulerName"] == "koord-scheduler"
    assert spec["containers"][0]["resources"] == {
        "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "2Gi"},
        "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "4Gi"},
    }
    assert stored["status"]["qosClass"] == "BestEffort"  # no cpu or memory left: what kubelet runs it as


def test_a_pod_the_validating_webhook_refuses_is_not_stored(realapi: RealApi, webhook: Webhook) -> None:
    mislabelled = pod("mislabelled", {"koordinator.sh/qosClass": "BE"})

    message = refusal(lambda: realapi.apply([mislabelled], webhook.be_namespace))

    assert 'admission webhook "vpod.koordinator.sh" denied the request' in message
    assert "koordinator.sh/qosClass=BE and priorityClass= cannot be used in combination" in message
    assert realapi.get("v1", "Pod", "mislabelled", webhook.be_namespace) is None


def test_node_status_is_amplified_by_the_nodes_ratio(realapi: RealApi, webhook: Webhook) -> None:
    name = f"amplified-{realapi.run_id}"
    realapi.add_node(name, {"cpu": "4", "memory": "8Gi", "pods": "110"})
    try:
        ratio = {"node.koordinator.sh/resource-amplification-ratio": '{"cpu": 2}'}
        realapi.core.patch_node(name, {"metadata": {"annotations": ratio}})
        status = {"status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}

        stored = call(realapi.client, "PATCH", f"/api/v1/nodes/{name}/status", status, "application/merge-patch+json")

        assert stored["status"]["allocatable"]["cpu"] == "8"  # what the scheduler sees
        assert stored["status"]["allocatable"]["memory"] == "8Gi"
    finally:
        realapi.core.delete_node(name)


def test_a_reservation_gets_its_profile(realapi: RealApi, webhook: Webhook) -> None:
    reservation = make_reservation(f"reserve-{realapi.run_id}", labels=COLOCATION)
    reservation["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"

    stored = realapi.apply([reservation])[0]
    try:
        assert stored["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
        template = stored["spec"]["template"]["spec"]
        assert (template["priorityClassName"], template["priority"]) == ("koord-batch", 5000)
        assert template["schedulerName"] == "koord-scheduler"
    finally:
        realapi.delete(reservation["apiVersion"], "Reservation", reservation["metadata"]["name"])


def test_quotas_are_defaulted_and_checked_against_their_tree(realapi: RealApi, webhook: Webhook) -> None:
    namespace = webhook.quota_namespace
    fits = make_quota("fits", namespace, parent="parent", min=SMALL, max=LARGE)
    over = make_quota("over", namespace, parent="parent", min={"cpu": "15", "memory": "1Gi"}, max=LARGE)

    stored = realapi.apply([fits])[0]
    message = refusal(lambda: realapi.apply([over]))

    assert stored["metadata"]["labels"]["quota.scheduling.koordinator.sh/tree-id"] == "tree-1"
    assert "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: parent" in message
    assert 'admission webhook "velasticquota.koordinator.sh" denied the request' in message


def test_an_slo_controller_config_that_does_not_parse_is_refused(realapi: RealApi, webhook: Webhook) -> None:
    good = make_slo_config({"system-config": {"clusterStrategy": {"minFreeKbytesFactor": 100}}})
    bad = make_slo_config({"colocation-config": "{not json"})

    realapi.apply([good])
    try:
        message = refusal(lambda: realapi.apply([bad]))
        kept = realapi.core.read_namespaced_config_map("slo-controller-config", "koordinator-system")
    finally:
        realapi.delete("v1", "ConfigMap", "slo-controller-config", "koordinator-system")

    assert 'admission webhook "vconfigmap.koordinator.sh" denied the request' in message
    assert '"reason":"ParseConfigFail"' in message
    assert kept.data == good["data"]


def test_audit_writes_policy_reports_for_pods_that_drifted(realapi: RealApi, webhook: Webhook) -> None:
    """A pod created before the webhook knew it (here: an LS pod in a namespace the webhook leaves
    alone) drifts from the enforced profile; the audit reports it on the server, per namespace."""
    drifted_namespace = realapi.create_namespace("drifted")  # not this run's: no webhook sees its pods
    realapi.core.patch_namespace(drifted_namespace, {"metadata": {"labels": {"colocate.test/run": "other"}}})
    try:
        tier = {"colocate.example.com/tier": "latency-sensitive"}
        realapi.apply([pod("checkout", tier)], drifted_namespace)

        audited = colocate("audit", "--kubeconfig", str(realapi.kubeconfig), "--write-reports", "-o", "json")

        assert audited.returncode == 1, audited.stderr  # an enforced profile's pod drifted
        report = realapi.get("wgpolicyk8s.io/v1alpha2", "PolicyReport", "colocate-audit", drifted_namespace)
    finally:
        realapi.delete_namespace(drifted_namespace)
    assert report is not None, audited.stdout
    assert report["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "colocate"
    (result,) = [r for r in report["results"] if r["resources"][0]["name"] == "checkout"]
    assert (result["policy"], result["result"]) == ("latency-sensitive-example", "fail")
    assert report["summary"]["fail"] >= 1


def test_certs_rotate_patches_the_real_configurations_and_no_admission_fails(
    realapi: RealApi, webhook: Webhook
) -> None:
    """A new CA while pods are being created through the API server: `rotate` trusts it in both
    configurations, waits, then writes the new serving certificate, which serve reloads live."""
    old_ca = (webhook.served.certs / "ca.crt").read_bytes()
    failures: list[str] = []
    created = 0
    stop = threading.Event()

    def create_pods() -> None:  # dry-run creates: admitted by both webhooks, kept nowhere
        nonlocal created
        while not stop.wait(0.02) and created < 5000:
            try:
                realapi.apply([pod("during-rotation", tier_ls())], webhook.be_namespace, dry_run=True)
            except ApiError as exc:
                failures.append(str(exc))
            created += 1

    load = threading.Thread(target=create_pods)
    load.start()
    try:
        rotated = colocate(
            "certs", "rotate", "--kubeconfig", str(realapi.kubeconfig), "--cert-dir", str(webhook.served.certs),
            "--cert-namespace", "koordinator-system", "--force-ca", "--cert-settle", "2",
        )  # fmt: skip
        assert rotated.returncode == 0, rotated.stderr
        new_ca = (webhook.served.certs / "ca.crt").read_bytes()
        wait_for_sync(
            lambda: webhook.served.metric("colocate_certificate_reloads_total", 0, result="ok") >= 1,
            timeout=30,
            message="serve to reload the new serving certificate",
        )
        served_from_new_ca(webhook.served.port, new_ca)
        before = created
        wait_for_sync(lambda: created >= before + 5, timeout=60, message="pods admitted on the new certificate")
    finally:
        stop.set()
        load.join()

    assert (
        "caBundle patched: koordinator-mutating-webhook-configuration, koordinator-validating-webhook-configuration"
        in (rotated.stdout)
    )
    assert new_ca != old_ca
    for configuration in webhook_configurations(realapi):
        (bundle,) = {base64.b64decode(w["clientConfig"]["caBundle"]) for w in configuration["webhooks"]}
        assert old_ca.strip() in bundle and new_ca.strip() in bundle  # both trusted until the old one expires
    assert failures == []
    assert created >= 10


def served_from_new_ca(port: int, ca: bytes) -> None:
    """A TLS handshake that trusts only `ca` succeeds: the server presents the new chain."""
    trust = ssl.create_default_context(cadata=ca.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        trust.wrap_socket(raw, server_hostname="localhost"),
    ):
        pass


def test_self_managed_certs_bootstrap_a_replica_the_api_server_trusts(
    realapi: RealApi, webhook: Webhook, tmp_path: Path
) -> None:
    """`serve --self-managed-certs` on an empty Secret volume: the leader takes the Lease, trusts a
    new CA in both real configurations, creates the Secret; once it is projected (this test plays
    kubelet) the replica serves it, and the API server's calls to it succeed."""
    secret = f"self-managed-{realapi.run_id}"
    volume = tmp_path / "certs"
    volume.mkdir()
    replica = Served(
        tmp_path, "--kubeconfig", str(realapi.kubeconfig), "--drain-delay", "0", "--self-managed-certs",
        "--cert-namespace", "koordinator-system", "--cert-secret", secret,
        "--cert-check-interval", "1", "--cert-settle", "1",
    )  # fmt: skip
    stop = threading.Event()
    kubelet = threading.Thread(target=project_secret, args=(realapi, secret, volume, stop))
    kubelet.start()
    try:
        replica.wait_ready(120)
        lease = realapi.get("coordination.k8s.io/v1", "Lease", "colocate-webhook-certs", "koordinator-system")
        stored = realapi.core.read_namespaced_secret(secret, "koordinator-system")
        ca = base64.b64decode(stored.data["ca.crt"])
        point_webhooks_at(realapi, replica.port)
        admitted = realapi.apply([pod("via-self-managed", tier_ls())], webhook.be_namespace)[0]
    finally:
        point_webhooks_at(realapi, webhook.served.port)
        stop.set()
        kubelet.join()
        replica.stop()
        realapi.delete("v1", "Secret", secret, "koordinator-system")

    assert lease is not None and lease["spec"]["holderIdentity"]
    assert stored.type == "kubernetes.io/tls"
    for configuration in webhook_configurations(realapi):
        for entry in configuration["webhooks"]:
            assert ca.strip() in base64.b64decode(entry["clientConfig"]["caBundle"])
    assert admitted["metadata"]["labels"]["koordinator.sh/qosClass"] == "LS"


def project_secret(realapi: RealApi, name: str, volume: Path, stop: threading.Event) -> None:
    """Kubelet's part: project the Secret's keys into `volume` whenever they change, until `stop`."""
    while not stop.wait(0.1):  # kubelet's periodic volume sync
        try:
            data = realapi.core.read_namespaced_secret(name, "koordinator-system").data or {}
        except client.ApiException as exc:
            if exc.status != 404:
                raise
            continue
        project(data, volume, ("ca.crt", "tls.crt", "tls.key"))


def webhook_configurations(realapi: RealApi) -> list[dict[str, Any]]:
    """Both of colocate's webhook configurations, as stored."""
    found = [realapi.get(ADMISSION, kind, name) for kind, name in CONFIGURATIONS]
    assert None not in found
    return [c for c in found if c is not None]


def point_webhooks_at(realapi: RealApi, port: int) -> None:
    """Every webhook of both configurations calls the server on `port` (the same paths)."""
    for configuration in webhook_configurations(realapi):
        patch = [
            {
                "op": "replace",
                "path": f"/webhooks/{i}/clientConfig/url",
                "value": re.sub(r":\d+/", f":{port}/", w["clientConfig"]["url"]),
            }
            for i, w in enumerate(configuration["webhooks"])
        ]
        path = realapi.path_of(ADMISSION, configuration["kind"], configuration["metadata"]["name"])
        call(realapi.client, "PATCH", path, patch, "application/json-patch+json")
