"""`serve --self-managed-certs`: two replicas, one Lease holder renews the Secret, both serve the new chain."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
from pathlib import Path

from certs.generate import generate_material, service_names, utcnow
from certs.kube import Cluster
from certs.material import pem_certs, secret_files
from tests.support.apiserver import ApiServer
from tests.support.cluster import FAST_ARGS, ColocateProcess, cluster_files, seed
from tests.support.kubelet import sync_secret
from tests.support.tls import served_certificate
from tests.support.wait import wait_for

NAMESPACE, SECRET = "koordinator-system", "koordinator-webhook-certs"
ARGS = (
    *FAST_ARGS,
    "--self-managed-certs",
    "--cert-check-interval",
    "0.2",
    "--cert-settle",
    "0",
    "--cert-reload-interval",
    "0.1",
    "--log-level",
    "info",
)


async def test_the_leader_renews_a_certificate_due_for_rotation_and_every_replica_reloads_it(
    api: ApiServer, cluster: Cluster, kubeconfig: Path, tmp_path: Path
) -> None:
    seed(api, cluster_files())
    due = generate_material(
        service_names("koordinator-webhook-service", NAMESPACE), utcnow(), validity=dt.timedelta(days=30)
    )  # under Koordinator's 6 months: due now
    await asyncio.to_thread(cluster.write_secret, due, None)
    await asyncio.to_thread(cluster.patch_ca_bundles, pem_certs(due.ca_certs))
    directories = [tmp_path / "replica-a", tmp_path / "replica-b"]
    kubelet = asyncio.create_task(sync_secret(api, NAMESPACE, SECRET, directories))
    await wait_for(lambda: all((d / "tls.key").exists() for d in directories), timeout=5, message="the projection")
    writes_before = api.writes("Secret")
    replicas = [ColocateProcess(kubeconfig, d, tmp_path / f"{d.name}.log", ARGS) for d in directories]
    try:

        async def renewed() -> bytes | None:
            served = secret_files(api.store.get(api.by_kind["Secret"], NAMESPACE, SECRET))["tls.crt"]
            return served if served != pem_certs([due.cert]) else None

        new_cert_pem = await wait_for(renewed, timeout=20, message="the leader to renew the Secret")
        renewals = api.writes("Lease")  # the leader renews its Lease at the start of every round
        for replica in replicas:

            async def serves_new(port: int = replica.port) -> bool:
                try:
                    cert = await asyncio.to_thread(served_certificate, port, pem_certs([due.ca]))
                except OSError:
                    return False
                return pem_certs([cert]) == new_cert_pem

            await wait_for(serves_new, timeout=10, message=f"replica on port {replica.port} to reload")
        # The leader writes nothing more: wait until the round after the renewal is over, i.e. the
        # Lease was renewed twice since (a round every 5 s, ManagerSettings.renew_interval).
        await wait_for(
            lambda: api.writes("Lease") >= renewals + 2,
            timeout=20,
            message="the leader to finish the round after the renewal",
        )
        assert api.writes("Secret") == writes_before + 1
        lease = api.store.get(api.by_kind["Lease"], NAMESPACE, "colocate-webhook-certs")
        assert lease["spec"]["holderIdentity"]
        bundle = {
            w["clientConfig"]["caBundle"]
            for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for c in api.store.list(api.by_kind[kind])
            for w in c["webhooks"]
        }
        assert bundle == {base64.b64encode(pem_certs([due.ca])).decode()}  # same CA: caBundle untouched
    finally:
        kubelet.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await kubelet
        for replica in replicas:
            replica.kill()
