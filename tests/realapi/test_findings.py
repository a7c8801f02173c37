"""Findings 3, 4 and 5 of issue 36 against a real kube-apiserver (tests/support/realapi.py): what the
stand-in showed fixed (tests/webhook/test_quota_parent_reads.py,
tests/colocate/cluster/test_apiserver_restart.py, tests/colocate/cluster/test_eviction.py,
tests/scheduler_plugins/descheduler/test_migration.py) holds against the real server too."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.eviction import EvictionClient, Outcome, discover_eviction_version
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.rest import ObjectClient, request
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.backend import ApiMigrationBackend
from scheduler_plugins.descheduler.migration.controller import Reconciler
from scheduler_plugins.descheduler.migration.limits import Limits, MigrationLimits
from tests.support.builders import make_profile, make_quota
from tests.support.realapi import RUN_LABEL, ControlPlane, RealApi
from tests.support.served import Served
from tests.support.wait import wait_for, wait_for_sync
from webhook.registry import default_routes
from webhook.server import Lifecycle, readiness
from webhook.snapshots import ApiServerSnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.watched import watched_kinds

pytestmark = pytest.mark.realapi

PAUSE = "registry.k8s.io/pause:3.9"


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": PAUSE}]},
    }


# --- finding 3: a quota tree applied in one go ------------------------------------------------


def test_a_quota_tree_applied_in_one_go_is_admitted_by_the_quota_webhook(
    realapi: RealApi, realapi_namespace: str, tmp_path: Path
) -> None:
    """Each child reaches the webhook right after its parent, before the webhook's watch can show
    it: the webhook reads the parent from the API server instead of refusing the child."""
    realapi.install_crds("elasticquotas", "clustercolocationprofiles")
    webhook = Served(tmp_path, "--kubeconfig", str(realapi.kubeconfig)).wait_ready()
    name = f"quota-{realapi.run_id}.colocate.test"
    realapi.register_webhook(
        name,
        url=f"https://127.0.0.1:{webhook.port}/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
        ca_bundle=(webhook.certs / "ca.crt").read_bytes(),
        rules=[
            {
                "apiGroups": ["scheduling.sigs.k8s.io"],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["elasticquotas"],
            }
        ],
        mutating=False,
        namespaceSelector={"matchLabels": {RUN_LABEL: realapi.run_id}},
    )
    tree = f"t-{realapi.run_id}"
    parent = f"team-{realapi.run_id}"
    quotas = [
        make_quota(parent, realapi_namespace, is_parent=True, tree_id=tree, min={"cpu": "4"}, max={"cpu": "8"}),
        *(
            make_quota(
                f"{parent}-{i}", realapi_namespace, parent=parent, tree_id=tree, min={"cpu": "1"}, max={"cpu": "8"}
            )
            for i in range(3)
        ),
    ]
    try:
        stored = realapi.apply(quotas)  # one after the other, as `kubectl apply -f` does
    finally:
        realapi.delete("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", name)
        webhook.stop()
    assert [q["metadata"]["name"] for q in stored] == [q["metadata"]["name"] for q in quotas]


# --- finding 4: an API server restart -------------------------------------------------------


async def test_every_watch_resumes_within_a_second_of_a_real_restart(
    realapi: RealApi, realapi_control_plane: ControlPlane
) -> None:
    """Measured from when the restarted server can serve a watch of the kind again: kube-apiserver
    1.20 answers `/readyz` 200 before it serves watches of custom resources (their watch cache is
    built on first use, seconds later on a loaded machine); a watch asked earlier waits for it."""
    realapi.install_crds("clustercolocationprofiles", "elasticquotas")
    failures: Counter[str] = Counter()
    source = ApiServerSnapshots(
        api_client(realapi.kubeconfig),
        watched_kinds(default_routes()),
        KubeSettings(ReflectorSettings(watch_timeout=60)),  # production's backoff
        on_failure=lambda kind, reason: failures.update([kind]),
    )
    state = StateHolder(stale_seconds=source.stale_seconds)
    task = asyncio.create_task(source.run(state, lambda snapshot: None))
    profile = make_profile(f"restart-{realapi.run_id}", selector={"matchLabels": {"app": "x"}}, qosClass="BE")
    try:
        await wait_for(lambda: state.ready, timeout=60, message="the first list of every kind")
        # from this thread, which started the control plane: a child started from a worker thread
        # is killed when that thread ends (the harness's PR_SET_PDEATHSIG). The loop waits; the
        # watches run in their own threads and their snapshots are published when it resumes.
        realapi_control_plane.stop_apiserver()
        ready = realapi_control_plane.start_apiserver()
        await asyncio.to_thread(realapi.apply, [profile])
        servable = await asyncio.to_thread(
            watch_servable, realapi, "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles"
        )
        await wait_for(
            lambda: profile["metadata"]["name"] in {p.name for p in state.snapshot.profiles},
            timeout=60,
            message="the profile created after the restart",
        )
        effect = time.monotonic()
        print(
            f"\nprofile in effect {effect - ready:.2f}s after /readyz, {effect - servable:.2f}s after the server "
            f"served its watch again ({servable - ready:.2f}s after /readyz); failures: {dict(failures)}"
        )
        assert effect - servable < 1.5
        assert readiness(Lifecycle(), state)[0] == 200
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        realapi.delete("config.koordinator.sh/v1alpha1", "ClusterColocationProfile", profile["metadata"]["name"])


def watch_servable(realapi: RealApi, collection: str) -> float:
    """`time.monotonic()` when the server began serving a watch of `collection`: a one-second watch
    returns a second after it opened."""
    status, _ = request(realapi.client, "GET", f"{collection}?watch=1&timeoutSeconds=1", timeout=(5.0, 120.0))
    assert status == 200
    return time.monotonic() - 1.0


# --- finding 5: evictions on 1.20 -------------------------------------------------------------


def test_the_eviction_version_is_the_one_the_server_serves(realapi: RealApi, realapi_namespace: str) -> None:
    realapi.apply([pod("evicted")], realapi_namespace)
    client = EvictionClient(api_client(realapi.kubeconfig))
    served = discover_eviction_version(client.api)
    if realapi.local is not None:  # the local control plane is Kubernetes 1.20: no policy/v1 Eviction
        assert served == "policy/v1beta1"
    result = client.evict(realapi_namespace, "evicted")
    assert result.outcome is Outcome.EVICTED, result
    wait_for_sync(
        lambda: realapi.get("v1", "Pod", "evicted", realapi_namespace) is None, timeout=30, message="the pod gone"
    )


def test_a_migration_whose_eviction_the_server_refuses_fails_with_the_reason(
    realapi: RealApi, realapi_namespace: str
) -> None:
    """What the descheduler did before: a policy/v1 Eviction to a 1.20 server (HTTP 400). The job
    must say FailedEvict and never count the pod as evicted."""
    realapi.require_local("send an Eviction version the server does not serve (1.20 has no policy/v1)")
    realapi.install_crds("podmigrationjobs", "reservations")
    target = realapi.apply([pod("kept")], realapi_namespace)[0]
    api = api_client(realapi.kubeconfig)
    now = time.time()
    reconciler = Reconciler(
        ApiMigrationBackend(ObjectClient(api)),
        EvictionClient(api, group_version="policy/v1"),
        Limits(MigrationLimits(), lambda: now),
        lambda: now,
        default_mode=pmj.MODE_EVICT_DIRECTLY,
    )
    name = f"job-{realapi.run_id}"
    job = pmj.new_job(
        name,
        target,
        mode=pmj.MODE_EVICT_DIRECTLY,
        ttl_seconds=300,
        reason="test",
        trigger="test",
        created_by="",
        now=now,
    )
    realapi.apply([job])
    try:
        key = f"{realapi_namespace}/kept"
        for _ in range(3):  # arbitrated, started, evicting
            reconciler.reconcile_all({key: target})
        stored = realapi.get(pmj.API_VERSION, "PodMigrationJob", name)
        assert stored is not None
        status = stored["status"]
        assert (status["phase"], status["reason"]) == ("Failed", "FailedEvict"), status
        assert "policy/v1" in status["message"]
        assert realapi.get("v1", "Pod", "kept", realapi_namespace) is not None  # never evicted
    finally:
        realapi.delete(pmj.API_VERSION, "PodMigrationJob", name)
