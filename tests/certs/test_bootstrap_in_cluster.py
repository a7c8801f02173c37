"""A first install with `serve --self-managed-certs`: no Secret, no caBundle, no workstation.

The replicas start on an empty Secret volume. The leader puts a new CA in both caBundles, then
creates the Secret; the kubelet projects it; only then does a replica listen, and the first
certificate it ever presents is one the API server already trusts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from pathlib import Path

from tests.certs.test_self_managed import ARGS, NAMESPACE, SECRET
from tests.support.apiserver import ApiServer
from tests.support.apistore import NotFound
from tests.support.cluster import ColocateProcess, cluster_files, seed
from tests.support.kubelet import sync_secret
from tests.support.kustomize import render
from tests.support.paths import REPO
from tests.support.tls import served_certificate
from tests.support.wait import wait_for

KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def ca_bundles(api: ApiServer) -> set[str]:
    return {
        w.get("clientConfig", {}).get("caBundle", "")
        for kind in KINDS
        for c in api.store.list(api.by_kind[kind])
        for w in c["webhooks"]
    }


def secret_exists(api: ApiServer) -> bool:
    try:
        api.store.get(api.by_kind["Secret"], NAMESPACE, SECRET)
    except NotFound:
        return False
    return True


async def test_a_replica_on_an_empty_secret_volume_serves_only_a_certificate_the_api_server_trusts(
    api: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    seed(api, cluster_files())
    assert ca_bundles(api) == {""} and not secret_exists(api)  # what `kubectl apply -k manifests/` leaves
    volume = tmp_path / "volume"  # the Secret volume: empty until the kubelet projects the Secret
    replica = ColocateProcess(kubeconfig, volume, tmp_path / "serve.log", ARGS)
    kubelet = asyncio.create_task(sync_secret(api, NAMESPACE, SECRET, [volume]))
    try:

        async def first_certificate() -> bytes | None:
            insecure = ssl.create_default_context()
            insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", replica.port, ssl=insecure)
            except OSError:
                return None
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
            writer.close()
            return bytes(der)

        await wait_for(first_certificate, timeout=30, message="the replica to listen")
        (bundle,) = ca_bundles(api)
        assert bundle, "the replica listened before any caBundle was set"
        trusted = base64.b64decode(bundle)
        # The first certificate presented chains to the CA every webhook configuration holds.
        await asyncio.to_thread(served_certificate, replica.port, trusted)
        assert secret_exists(api)
        assert "waiting for the leader to create Secret koordinator-system/koordinator-webhook-certs" in (
            replica.log.read_text()
        )
        assert not (volume / "ca.key").exists()  # no CA of its own made up in the Secret volume

        # The emergency runbook: delete both configurations, then `kubectl apply -k manifests/`
        # again. The manifests carry no caBundle, so they are recreated without one; the leader
        # puts the CA back on its next check (0.2 s here, --cert-check-interval: 60 s by default).
        for kind, name in (
            ("MutatingWebhookConfiguration", "koordinator-mutating-webhook-configuration"),
            ("ValidatingWebhookConfiguration", "koordinator-validating-webhook-configuration"),
        ):
            api.delete(kind, name)
        for obj in render(REPO / "manifests"):
            if obj["kind"] in KINDS:
                api.apply(obj)
        await wait_for(lambda: ca_bundles(api) == {bundle}, timeout=20, message="the leader to restore the caBundle")
    finally:
        kubelet.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await kubelet
        replica.kill()
