"""The descheduler's migration controller against the real API server, with kube-controller-manager's
disruption controller keeping a PodDisruptionBudget's status: a PodMigrationJob evicts its pod
through the Eviction API the server serves (1.20: `policy/v1beta1`), and a pod whose budget allows
no disruption is kept, its job saying why (tests/scheduler_plugins/descheduler/test_migration_e2e.py
plays the same against the stand-in)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.eviction import EvictionClient
from colocate.cluster.rest import ObjectClient, call, request
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.backend import ApiMigrationBackend
from scheduler_plugins.descheduler.migration.controller import Reconciler
from scheduler_plugins.descheduler.migration.limits import Limits, MigrationLimits
from tests.support.builders import NOW, make_pod
from tests.support.realapi import RealApi
from tests.support.realapi_process import Component
from tests.support.wait import wait_for

pytestmark = pytest.mark.realapi

START = parse_time(NOW) or 0.0


def policy_version(realapi: RealApi) -> str:
    """The PodDisruptionBudget version the server serves: policy/v1 from 1.21, else v1beta1."""
    status, _ = request(realapi.client, "GET", "/apis/policy/v1")
    return "policy/v1" if status == 200 else "policy/v1beta1"


@pytest.fixture
def world(
    realapi: RealApi, realapi_namespace: str, realapi_controller_manager: Component | None
) -> Iterator[dict[str, Any]]:
    """Two running, ready pods on a node, owned by a ConfigMap (an owner the garbage collector
    finds, that no controller replaces pods for): `guarded-*` under a budget that allows no
    disruption (`minAvailable: 2`: a budget on pods of a controller without a scale subresource
    counts pods only with an integer minAvailable), `free-*` under none."""
    realapi.install_crds("podmigrationjobs", "reservations")
    node = f"migrate-{realapi.run_id}"
    realapi.add_node(node)
    pods = {}
    for app in ("guarded", "free"):
        owner = realapi.core.create_namespaced_config_map(realapi_namespace, {"metadata": {"name": app}})
        uid = owner.metadata.uid
        reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": app, "uid": uid, "controller": True}
        for replica in range(2):  # a workload of one replica is never migrated (expected replicas)
            name = f"{app}-{replica}"
            pod = make_pod(name, realapi_namespace, labels={"app": app}, node=node, requests={"cpu": "100m"})
            pod["metadata"]["ownerReferences"] = [reference]
            realapi.apply([pod])
            pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            pods[name] = realapi.write_status(pod, realapi_namespace)
    version = policy_version(realapi)
    budget = {
        "apiVersion": version,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"selector": {"matchLabels": {"app": "guarded"}}, "minAvailable": 2},
    }
    realapi.apply([budget], realapi_namespace)
    try:
        yield {"node": node, "pods": pods, "pdb_version": version}
    finally:
        realapi.core.delete_node(node)


async def test_a_job_evicts_through_the_served_eviction_api_and_a_budget_keeps_its_pod(
    realapi: RealApi, realapi_namespace: str, world: dict[str, Any]
) -> None:
    def budget_status() -> Any:
        found = realapi.get(world["pdb_version"], "PodDisruptionBudget", "guarded", realapi_namespace)
        return (found or {}).get("status") or {}

    status = await wait_for(
        lambda: asyncio.to_thread(budget_status),
        until=lambda s: s.get("expectedPods") == 2 and s.get("currentHealthy") == 2,
        timeout=60,
        interval=0.2,
        message="the disruption controller to count the guarded pods",
    )
    assert status["disruptionsAllowed"] == 0

    client = api_client(realapi.kubeconfig)
    backend = ApiMigrationBackend(ObjectClient(client))
    reconciler = Reconciler(
        backend,
        EvictionClient(client),
        Limits(MigrationLimits(), lambda: START),
        lambda: START,
        default_mode=pmj.MODE_EVICT_DIRECTLY,
        default_grace=0,  # no kubelet here finishes a graceful deletion: the pod goes at once
    )
    for name in ("guarded-0", "free-0"):
        pod = world["pods"][name]
        job = pmj.new_job(
            f"job-{name}",
            pod,
            mode=pmj.MODE_EVICT_DIRECTLY,
            ttl_seconds=300,
            reason="node is overutilized",
            trigger="LowNodeLoad",
            created_by="test",
            now=START,
        )
        await asyncio.to_thread(backend.create_job, job)

    def pods() -> dict[str, Any]:
        listed = call(client, "GET", f"/api/v1/namespaces/{realapi_namespace}/pods")["items"]
        return {
            f"{realapi_namespace}/{p['metadata']['name']}": p
            for p in listed
            if not p["metadata"].get("deletionTimestamp")
        }

    def jobs_after_a_pass() -> dict[str, Any]:
        return {pmj.pod_key_of(job).split("/")[-1].rsplit("-", 1)[0]: job for job in reconciler.reconcile_all(pods())}

    def said(job: Any) -> str:
        status = (job or {}).get("status") or {}
        return f"{status.get('reason', '')} {status.get('message', '')}".lower()

    jobs = await wait_for(
        lambda: asyncio.to_thread(jobs_after_a_pass),
        until=lambda found: (
            pmj.phase_of(found.get("free", {})) == pmj.SUCCEEDED and "disruption budget" in said(found.get("guarded"))
        ),
        timeout=60,
        interval=0.5,
        message="the free pod's job to succeed and the guarded pod's to say why it waits",
    )
    remaining = await asyncio.to_thread(pods)

    assert f"{realapi_namespace}/free-0" not in remaining  # evicted: deleted through the Eviction API
    assert f"{realapi_namespace}/guarded-0" in remaining  # its budget allows no disruption
    assert pmj.phase_of(jobs["guarded"]) != pmj.SUCCEEDED
