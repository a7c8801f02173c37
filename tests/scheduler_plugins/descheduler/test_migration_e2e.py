"""The whole migration against the stand-in API server, with the real `kubernetes` client: a
PodMigrationJob → its Reservation scheduled → the pod evicted through policy/v1 → the replacement
bound to the Reservation; and a job whose Reservation cannot be scheduled fails and evicts nothing
(Koordinator's `pkg/descheduler/controllers/migration/controller_test.go`: `TestMigrate`,
`TestAbortJobIfTimeout`, `TestEvictPodDirectly`). The test plays the scheduler and the ReplicaSet
controller: it writes what they would write (the Reservation's status, the replacement pod)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from colocate.cluster.client import api_client
from colocate.cluster.eviction import EvictionClient
from colocate.cluster.rest import ObjectClient
from policies.apis.constants import ANNOTATION_RESERVATION_ALLOCATED, POD_MIGRATION_JOB_KIND, RESERVATION_KIND
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.backend import ApiMigrationBackend
from scheduler_plugins.descheduler.migration.controller import Reconciler
from scheduler_plugins.descheduler.migration.limits import Limits, MigrationLimits
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW, make_pod

START = parse_time(NOW) or 0.0


def web_pod(name: str, node: str, **extra: Any) -> dict[str, Any]:
    pod = make_pod(name, "shop", labels={"app": "web"}, node=node, requests={"cpu": "1"}, **extra)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-uid", "controller": True}
    ]
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


class World:
    """The controller over the stand-in, with a clock the test moves."""

    def __init__(self, api: ApiServer, kubeconfig: Path) -> None:
        self.api = api
        self.now = START
        client = api_client(kubeconfig)
        self.objects = ObjectClient(client)
        self.backend = ApiMigrationBackend(self.objects)
        self.reconciler = Reconciler(
            self.backend,
            EvictionClient(client),
            Limits(MigrationLimits(), lambda: self.now),
            lambda: self.now,
            default_mode=pmj.MODE_RESERVATION_FIRST,
        )

    def pods(self) -> dict[str, Any]:
        return {f"shop/{p['metadata']['name']}": p for p in self.api.store.list(self.api.by_kind["Pod"], "shop")}

    async def step(self) -> dict[str, Any]:
        """One pass of the controller (off the loop: the client blocks); the job afterwards."""
        jobs = await asyncio.to_thread(self.reconciler.reconcile_all, self.pods())
        (job,) = jobs
        return job

    def reservation(self, name: str) -> dict[str, Any] | None:
        """What the API server holds (read from its store: the loop must not block on a request)."""
        found = [r for r in self.api.store.list(self.api.by_kind[RESERVATION_KIND]) if r["metadata"]["name"] == name]
        return copy.deepcopy(found[0]) if found else None


async def start(api: ApiServer, kubeconfig: Path, ttl: float = 300.0) -> World:
    for i in range(3):
        api.apply(web_pod(f"web-{i}", "node-a"))
    world = World(api, kubeconfig)
    pod = world.pods()["shop/web-0"]
    job = pmj.new_job(
        "job-1",
        pod,
        mode=pmj.MODE_RESERVATION_FIRST,
        ttl_seconds=ttl,
        reason="node is overutilized",
        trigger="LowNodeLoad",
        created_by="test",
        now=world.now,
    )
    await asyncio.to_thread(world.backend.create_job, job)
    return world


def schedule_reservation(api: ApiServer, reservation: dict[str, Any], node: str) -> None:
    """What the scheduler's Reservation plugin writes when it binds a reserve pod."""
    reservation["status"] = {
        "phase": "Available",
        "nodeName": node,
        "conditions": [
            {"type": "Scheduled", "status": "True", "reason": "Scheduled"},
            {"type": "Ready", "status": "True", "reason": "Available"},
        ],
    }
    api.apply(reservation)


async def test_a_job_reserves_then_evicts_and_the_replacement_takes_the_reservation(
    api: ApiServer, kubeconfig: Path
) -> None:
    world = await start(api, kubeconfig)
    job = await world.step()  # arbitration passes it; it starts
    assert pmj.phase_of(job) == pmj.RUNNING
    job = await world.step()  # it creates the Reservation
    assert pmj.condition_true(job, pmj.COND_RESERVATION_CREATED)
    reservation = world.reservation(pmj.reservation_name(job))
    assert reservation is not None
    assert reservation["spec"]["owners"] == [
        {
            "controller": {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-rs",
                "uid": "rs-uid",
                "controller": True,
                "namespace": "shop",
            }
        }
    ]
    required = reservation["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-a"]}]}
    ]
    assert reservation["spec"]["allocateOnce"] is True and "nodeName" not in reservation["spec"]["template"]["spec"]

    writes = api.writes(POD_MIGRATION_JOB_KIND)
    job = await world.step()  # the scheduler has not placed it: nothing is evicted yet
    assert api.evictions == [] and pmj.phase_of(job) == pmj.RUNNING
    assert api.writes(POD_MIGRATION_JOB_KIND) == writes  # waiting costs no write

    schedule_reservation(api, reservation, "node-b")
    job = await world.step()  # scheduled: now it evicts
    assert job["status"]["nodeName"] == "node-b" and pmj.condition_true(job, pmj.COND_RESERVATION_SCHEDULED)
    assert api.evictions == [("shop", "web-0")]
    assert pmj.condition(job, pmj.COND_EVICTION)["reason"] == pmj.REASON_EVICTING  # type: ignore[index]

    job = await world.step()  # the pod is gone; waiting for the replacement
    assert pmj.condition_true(job, pmj.COND_EVICTION)
    assert job["status"]["reason"] == pmj.REASON_WAIT_FOR_POD_BIND_RESERVATION

    replacement = web_pod("web-3", "node-b", annotations={ANNOTATION_RESERVATION_ALLOCATED: '{"name": "r"}'})
    stored = api.apply(replacement)
    reservation = world.reservation(pmj.reservation_name(job)) or {}
    reservation["status"]["phase"] = "Succeeded"
    reservation["status"]["currentOwners"] = [{"namespace": "shop", "name": "web-3", "uid": stored["metadata"]["uid"]}]
    api.apply(reservation)
    job = await world.step()
    assert pmj.phase_of(job) == pmj.SUCCEEDED
    assert job["status"]["podRef"]["name"] == "web-3"
    assert job["status"]["message"] == f'Bind Pod "shop/web-3" in Reservation "{pmj.reservation_name(job)}"'
    (stored_job,) = api.store.list(api.by_kind[POD_MIGRATION_JOB_KIND])
    assert stored_job["status"]["phase"] == pmj.SUCCEEDED  # written to the API server, not only returned
    assert api.evictions == [("shop", "web-0")]


async def test_a_reservation_that_cannot_be_scheduled_fails_the_job_and_evicts_nothing(
    api: ApiServer, kubeconfig: Path
) -> None:
    world = await start(api, kubeconfig, ttl=300.0)
    await world.step()
    job = await world.step()
    name = pmj.reservation_name(job)
    reservation = world.reservation(name) or {}
    message = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity."
    reservation["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "Scheduled", "status": "False", "reason": "Unschedulable", "message": message}],
    }
    api.apply(reservation)
    job = await world.step()
    cond = pmj.condition(job, pmj.COND_RESERVATION_SCHEDULED) or {}
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", pmj.REASON_UNSCHEDULABLE, message)
    assert pmj.phase_of(job) == pmj.RUNNING and api.evictions == []

    world.now += 301  # the job's TTL runs out while the scheduler still cannot place the Reservation
    job = await world.step()
    assert pmj.phase_of(job) == pmj.FAILED and job["status"]["reason"] == pmj.REASON_TIMEOUT
    assert (pmj.condition(job, pmj.COND_RESERVATION_SCHEDULED) or {})["message"] == message  # why, kept
    assert world.reservation(name) is None  # its Reservation is deleted
    assert api.evictions == [] and "shop/web-0" in world.pods()
