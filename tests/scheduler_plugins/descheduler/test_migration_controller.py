"""The MigrationController's reconciler settings against the API-server stand-in, with the real
`kubernetes` client: a `SoftEviction` job waits for the pod's owner to remove it
(`evictor_soft_test.go` `TestSoftEvictor`, `controller_test.go` `TestEvictPodDirectly`),
`maxConcurrentReconciles` reconciles jobs at once and no more (controller-runtime's
`MaxConcurrentReconciles`), the scavenger deletes old jobs with their Reservations
(`controller_test.go` `TestDoScavenge`), and a job's own `reservationOptions` shape its Reservation
(`reservation/util_test.go` `TestCreateOrUpdateReservationOptions`, `TestCreateReservation`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from colocate.cluster.client import api_client
from colocate.cluster.eviction import EvictionClient, EvictionResult
from colocate.cluster.rest import ObjectClient
from policies.apis.constants import ANNOTATION_SOFT_EVICTION, POD_MIGRATION_JOB_KIND, RESERVATION_KIND
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import format_time
from scheduler_plugins.descheduler.framework.config import parse_config
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.metrics import DeschedulerMetrics
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.backend import ApiMigrationBackend
from scheduler_plugins.descheduler.migration.controller import PREEMPTION_NOT_SUPPORTED
from scheduler_plugins.descheduler.registry import in_tree_registry
from tests.scheduler_plugins.descheduler.helpers import FakeEvents, view_of
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW, make_node, make_pod

START = parse_time(NOW) or 0.0


def web_pod(name: str, owner: str = "web-rs", node: str = "node-a") -> dict[str, Any]:
    pod = make_pod(name, "shop", labels={"app": owner}, node=node, requests={"cpu": "1"})
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": f"{owner}-uid", "controller": True}
    ]
    pod["spec"]["schedulerName"] = "koord-scheduler"
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


class World:
    """A descheduler whose only plugin is the MigrationController, over the stand-in; the test
    moves the clock and runs the passes Koordinator's requeues would."""

    def __init__(
        self,
        api: ApiServer,
        kubeconfig: Path,
        args: dict[str, Any],
        wrap_evictions: Callable[[EvictionClient], Any] = lambda e: e,
        events: FakeEvents | None = None,
    ) -> None:
        self.api, self.now = api, START
        client = api_client(kubeconfig)
        raw = {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerConfiguration",
            "profiles": [{"name": "p", "pluginConfig": [{"name": "MigrationController", "args": args}]}],
        }
        self.descheduler = Descheduler(
            parse_config(raw, in_tree_registry()),
            in_tree_registry(),
            lambda: self.now,
            wrap_evictions(EvictionClient(client)),
            events,
            dry_run=False,
            migrations=ApiMigrationBackend(ObjectClient(client)),
        )
        self.passes = 0

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return self.api.store.list(self.api.by_kind[kind])

    async def step(self) -> dict[str, dict[str, Any]]:
        """One pass over a fresh view of the stand-in's pods; the jobs afterwards, by name."""
        self.passes += 1
        view = view_of([make_node("node-a"), make_node("node-b"), *self.objects("Pod")])
        for profile in self.descheduler.profiles:
            profile.handle.snapshot = view.snapshot()
            profile.handle.evictor.report = RoundReport(self.passes)
        await asyncio.to_thread(self.descheduler.reconcile_migrations)
        return {j["metadata"]["name"]: j for j in self.objects(POD_MIGRATION_JOB_KIND)}

    def add_job(self, name: str, pod: dict[str, Any], mode: str = pmj.MODE_EVICT_DIRECTLY, **kw: Any) -> None:
        job = pmj.new_job(
            name,
            pod,
            mode=mode,
            ttl_seconds=kw.pop("ttl", 300.0),
            reason="node is overutilized",
            trigger="LowNodeLoad",
            created_by="",
            now=kw.pop("created", self.now),
        )
        job.setdefault("status", {}).update(kw.pop("status", {}))
        job["spec"].update(kw.pop("spec", {}))
        self.api.apply(job)


async def test_a_soft_evicted_pod_is_annotated_and_its_job_waits_until_the_pod_is_gone(
    api: ApiServer, kubeconfig: Path
) -> None:
    for i in range(3):
        api.apply(web_pod(f"web-{i}"))
    world = World(api, kubeconfig, {"defaultJobMode": "EvictDirectly", "evictionPolicy": "SoftEviction"})
    world.add_job("job-1", api.store.get(api.by_kind["Pod"], "shop", "web-0"))

    jobs = await world.step()  # arbitrated, started, soft-evicted
    job = jobs["job-1"]
    assert pmj.phase_of(job) == pmj.RUNNING
    assert (pmj.condition(job, pmj.COND_EVICTION) or {}).get("reason") == pmj.REASON_EVICTING
    pod = api.store.get(api.by_kind["Pod"], "shop", "web-0")
    assert '"initiator": "LowNodeLoad"' in pod["metadata"]["annotations"][ANNOTATION_SOFT_EVICTION]
    assert '"reason": "node is overutilized"' in pod["metadata"]["annotations"][ANNOTATION_SOFT_EVICTION]
    assert api.evictions == [] and api.pod_deletions == []

    jobs = await world.step()  # the pod is still there: the job keeps waiting, nothing is evicted
    assert pmj.phase_of(jobs["job-1"]) == pmj.RUNNING and api.evictions == []

    api.delete("Pod", "web-0", "shop")  # whoever acts on the annotation removes the pod
    jobs = await world.step()
    assert pmj.phase_of(jobs["job-1"]) == pmj.SUCCEEDED
    assert api.evictions == [] and api.pod_deletions == []


class Rendezvous:
    """Wraps the Eviction client: the first `parties` evictions must be in flight together (a
    barrier, so a controller reconciling one job at a time fails here), and the most in flight at
    once is recorded."""

    def __init__(self, inner: EvictionClient, parties: int) -> None:
        self.inner, self.barrier = inner, threading.Barrier(parties, timeout=10)
        self.lock, self.calls, self.in_flight, self.most = threading.Lock(), 0, 0, 0

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        with self.lock:
            self.calls += 1
            first = self.calls <= self.barrier.parties
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            if first:
                self.barrier.wait()
            return self.inner.evict(namespace, name, grace_period_seconds)
        finally:
            with self.lock:
                self.in_flight -= 1


async def test_max_concurrent_reconciles_reconciles_that_many_jobs_at_once_and_no_more(
    api: ApiServer, kubeconfig: Path
) -> None:
    pods = [web_pod(f"web-{i}", owner=f"rs-{i}") for i in range(7)]
    for i, pod in enumerate(pods):
        api.apply(pod)
        api.apply(web_pod(f"other-{i}", owner=f"rs-{i}"))  # each workload has two replicas
    wrapped: list[Rendezvous] = []

    def wrap(inner: EvictionClient) -> Rendezvous:
        wrapped.append(Rendezvous(inner, 3))
        return wrapped[-1]

    args = {"defaultJobMode": "EvictDirectly", "maxConcurrentReconciles": 3, "maxMigratingPerNode": 10}
    world = World(api, kubeconfig, args, wrap)
    for i, pod in enumerate(pods):
        world.add_job(f"job-{i}", pod)
    jobs = await world.step()
    (rendezvous,) = wrapped
    assert rendezvous.calls == 7 and rendezvous.most == 3  # three at once, never more
    assert sorted(api.evictions) == sorted(("shop", f"web-{i}") for i in range(7))
    jobs = await world.step()
    assert {pmj.phase_of(j) for j in jobs.values()} == {pmj.SUCCEEDED}


async def test_the_scavenger_deletes_jobs_past_their_age_with_their_reservations(
    api: ApiServer, kubeconfig: Path, caplog: pytest.LogCaptureFixture
) -> None:
    api.apply(web_pod("web-0"))
    world = World(api, kubeconfig, {"defaultJobMode": "ReservationFirst"})
    pod = api.store.get(api.by_kind["Pod"], "shop", "web-0")
    done = {"phase": pmj.SUCCEEDED}
    world.add_job("old-with-ttl", pod, ttl=300.0, created=START - 11 * 60, status=done)  # 11m > 5m + 5m
    world.add_job("young-with-ttl", pod, ttl=300.0, created=START - 9 * 60, status=done)  # 9m < 5m + 5m
    world.add_job("old-without-ttl", pod, ttl=0.0, created=START - 31 * 60, status=done)  # 31m > 30m
    world.add_job("young-without-ttl", pod, ttl=0.0, created=START - 28 * 60, status=done)
    old = api.store.get(api.by_kind[POD_MIGRATION_JOB_KIND], "", "old-with-ttl")
    old["spec"]["reservationOptions"] = {"reservationRef": {"name": "old-with-ttl"}}
    api.apply(old)
    api.apply({"apiVersion": pmj.API_VERSION, "kind": RESERVATION_KIND, "metadata": {"name": "old-with-ttl"}})
    assert api.store.get(api.by_kind[POD_MIGRATION_JOB_KIND], "", "old-without-ttl")["metadata"][
        "creationTimestamp"
    ] == format_time(START - 31 * 60)

    registry = CollectorRegistry()
    metrics = DeschedulerMetrics(registry)
    with caplog.at_level(logging.INFO, logger="colocate.descheduler.migration"):
        jobs = await world.step()
    metrics.observe_scavenged(world.descheduler.scavenged_total())
    assert set(jobs) == {"young-with-ttl", "young-without-ttl"}
    assert world.objects(RESERVATION_KIND) == []
    assert registry.get_sample_value("colocate_descheduler_migration_jobs_scavenged_total") == 2.0
    assert sum("scavenged PodMigrationJob old-" in r.getMessage() for r in caplog.records) == 2

    world.now += 59  # the scavenger runs once a minute
    assert set(await world.step()) == {"young-with-ttl", "young-without-ttl"}
    world.now += 1  # 60s after the first pass, 10m01s after young-with-ttl's creation + TTL
    assert set(await world.step()) == {"young-without-ttl"}
    metrics.observe_scavenged(world.descheduler.scavenged_total())
    assert registry.get_sample_value("colocate_descheduler_migration_jobs_scavenged_total") == 3.0


async def test_a_jobs_reservation_template_is_used_and_preemption_options_are_said_to_be_ignored(
    api: ApiServer, kubeconfig: Path
) -> None:
    for i in range(3):
        api.apply(web_pod(f"web-{i}"))
    events = FakeEvents()
    world = World(api, kubeconfig, {"defaultJobMode": "ReservationFirst"}, events=events)
    options = {
        "template": {"metadata": {"name": "my-reservation", "labels": {"team": "a"}}, "spec": {"ttl": "10m"}},
        "preemptionOptions": {},
    }
    world.add_job(
        "job-1",
        api.store.get(api.by_kind["Pod"], "shop", "web-0"),
        mode=pmj.MODE_RESERVATION_FIRST,
        spec={"reservationOptions": options},
    )
    await world.step()  # arbitrated, started
    jobs = await world.step()  # the Reservation is created
    (reservation,) = world.objects(RESERVATION_KIND)
    assert reservation["metadata"]["name"] == "my-reservation"
    assert reservation["metadata"]["labels"]["team"] == "a"
    assert reservation["metadata"]["labels"]["app.kubernetes.io/created-by"] == "koord-descheduler"
    assert reservation["spec"]["ttl"] == "10m"  # the template's, not the job's 5m
    assert reservation["spec"]["allocateOnce"] is True
    assert reservation["spec"]["owners"][0]["controller"]["name"] == "web-rs"  # filled from the pod
    assert "nodeName" not in reservation["spec"]["template"]["spec"]
    kept = jobs["job-1"]["spec"]["reservationOptions"]
    assert kept["reservationRef"]["name"] == "my-reservation" and kept["preemptionOptions"] == {}
    assert kept["template"] == options["template"]
    warned = [(reason, message) for name, reason, message in events.events if name == "job-1"]
    assert ("PreemptionNotSupported", PREEMPTION_NOT_SUPPORTED) in warned
