"""PodMigrationJobs in the descheduler: Balance plugins create jobs instead of evicting, the
MigrationController's limits and its arbitration between competing jobs
(`pkg/descheduler/controllers/migration/arbitrator/filter_test.go`: `TestFilterMaxMigratingPerNode`,
`TestFilterMaxMigratingPerNamespace`, `TestFilterMaxMigratingOrUnavailablePerWorkload`,
`TestFilterExpectedReplicas`; `arbitrator_test.go`: `TestDoOnceArbitrate`;
`controller_test.go`: `TestRequeueJobIfObjectLimiterFailed`)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from colocate.cluster.eviction import Outcome
from colocate.cluster.store import ClusterStore
from colocate.main import main
from policies.apis.constants import ANNOTATION_PASSED_ARBITRATION, POD_MIGRATION_JOB_KIND
from policies.apis.field_errors import ConfigError, Fields
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.framework.config import parse_config
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.migration import job as pmj
from scheduler_plugins.descheduler.migration.backend import StoreMigrationBackend
from scheduler_plugins.descheduler.migration.controller import Reconciler
from scheduler_plugins.descheduler.migration.limits import (
    Limits,
    MigrationLimits,
    ObjectLimiter,
    parse_limits,
    scaled_limit,
)
from scheduler_plugins.descheduler.registry import in_tree_registry
from tests.scheduler_plugins.descheduler.helpers import UNSERVED_EVICTION_VERSION, FakeEvictions, loaded_node, view_of
from tests.support.builders import NOW, make_node, make_pod
from tests.support.paths import REPO

START = parse_time(NOW) or 0.0
EXAMPLE = REPO / "manifests" / "descheduler" / "example-cluster"
MIGRATION_CONFIG = REPO / "manifests" / "descheduler" / "example-migration-config.yaml"


def pod(name: str, node: str = "node-a", owner: str | None = "rs", ready: bool = True, ns: str = "shop", **kw: Any):
    obj = make_pod(name, ns, node=node, requests={"cpu": "1"}, **kw)
    if owner:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner + "-uid", "controller": True}
        ]
    obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return obj


def keyed(*pods: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in pods}


def running_job(p: dict[str, Any], name: str = "") -> dict[str, Any]:
    job = pmj.new_job(
        name or "job-" + p["metadata"]["name"],
        p,
        mode=pmj.MODE_RESERVATION_FIRST,
        ttl_seconds=300,
        reason="",
        trigger="",
        created_by="",
        now=START,
    )
    job["status"]["phase"] = pmj.RUNNING
    return job


def limits(**fields: Any) -> Limits:
    return Limits(parse_limits(Fields(fields, "args")), lambda: START)


# --- Balance plugins create jobs --------------------------------------------------------------


def test_dry_run_lists_the_jobs_low_node_load_would_create(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["descheduler", "run", "--cluster", str(EXAMPLE), "--config", str(MIGRATION_CONFIG), "--dry-run"]
        + ["--now", "2024-05-01T10:01:00Z", "-o", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (round_,) = doc["rounds"]
    (migration,) = round_["migrations"]
    assert {k: migration[k] for k in ("pod", "mode", "phase")} == {
        "pod": "default/web-4",
        "mode": "ReservationFirst",
        "phase": "Pending",
    }
    assert migration["reservation"]  # the Reservation it would create
    skipped = {s["pod"]: s["reason"] for s in round_["skipped"]}
    assert "workload of 1 replica(s)" in skipped["default/batch-1"]  # a single replica never migrates
    web = [reason for pod, reason in skipped.items() if pod.startswith("default/web-")]
    assert web and all("maxMigratingPerWorkload=1" in r for r in web)  # web-4 of the same workload went first
    # nothing was written: the directory's pods are all still there on a real run's first read
    assert [e["pod"] for e in round_["evictions"]] == ["default/web-4"]


def test_the_dry_run_counts_the_jobs_already_in_the_cluster(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Koordinator's dry run (`evict.go` `Evict` with `DryRun`) still passes each pod through the
    arbitrator's Filter, whose limits count the PodMigrationJobs already stored
    (`TestFilterMaxMigratingOrUnavailablePerWorkload`): a job running for web-5 leaves its workload
    (maxMigratingPerWorkload=1) no room, so the dry run plans no migration, as the real round would."""
    shutil.copytree(EXAMPLE, tmp_path / "cluster")
    web_5 = pod("web-5", node="node-b", owner="web-5d4f", ns="default")
    (tmp_path / "cluster" / "jobs.json").write_text(json.dumps(running_job(web_5)))
    code = main(
        ["descheduler", "run", "--cluster", str(tmp_path / "cluster"), "--config", str(MIGRATION_CONFIG), "--dry-run"]
        + ["--now", "2024-05-01T10:01:00Z", "-o", "json"]
    )
    (round_,) = json.loads(capsys.readouterr().out)["rounds"]
    assert code == 0
    assert round_.get("migrations", []) == []  # an empty list is left out of the document
    skipped = {s["pod"]: s["reason"] for s in round_["skipped"]}
    assert "maxMigratingPerWorkload=1" in skipped["default/web-4"]


def _descheduler(mode: str, store: ClusterStore, evictions: FakeEvictions, **args: Any) -> Descheduler:
    raw = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerConfiguration",
        "profiles": [
            {
                "name": "p",
                "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
                "pluginConfig": [
                    {
                        "name": "LowNodeLoad",
                        "args": {
                            "lowThresholds": {"cpu": 30},
                            "highThresholds": {"cpu": 60},
                            "anomalyCondition": {"consecutiveAbnormalities": 1},
                        },
                    },
                    {
                        "name": "MigrationController",
                        "args": {"defaultJobMode": mode, "maxMigratingPerWorkload": 2, **args},
                    },
                ],
            }
        ],
    }
    config = parse_config(raw, in_tree_registry())
    return Descheduler(
        config,
        in_tree_registry(),
        lambda: START,
        evictions,
        dry_run=False,
        migrations=StoreMigrationBackend(store),
    )


def _hot_cluster() -> list[dict[str, Any]]:
    hot, hot_metric = loaded_node("node-a", [(f"web-{i}", "1") for i in range(4)], namespace="shop")
    for p in hot:
        p["metadata"]["ownerReferences"][0].update({"uid": "rs-uid", "controller": True, "name": "web-rs"})
        p["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        p["spec"]["schedulerName"] = "koord-scheduler"  # a Reservation is koord-scheduler's to place
    cold, cold_metric = loaded_node("node-b", [], namespace="shop")
    nodes = [make_node(n, allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"}) for n in ("node-a", "node-b")]
    return [*nodes, *hot, hot_metric, cold_metric]


@pytest.mark.parametrize(
    ("mode", "pod_scheduler", "scheduler_names", "migrated"),
    [
        ("ReservationFirst", "koord-scheduler", None, 2),  # schedulerNames defaults to koord-scheduler
        ("ReservationFirst", "default-scheduler", None, 0),  # nobody would place its Reservation
        ("ReservationFirst", None, None, 0),  # no schedulerName: kube-scheduler's
        ("ReservationFirst", "default-scheduler", ["default-scheduler"], 2),
        ("EvictDirectly", "default-scheduler", None, 2),  # no Reservation: any scheduler
    ],
)
def test_reservation_first_migrates_only_pods_of_the_scheduler_names(
    mode: str, pod_scheduler: str | None, scheduler_names: list[str] | None, migrated: int
) -> None:
    """`arbitrator/filter.go` `reservationFilter` (Koordinator's `TestEvict` gives its pod
    `SchedulerName: koord-scheduler`): a Reservation is placed by the pod's scheduler, so only its
    pods can be migrated reservation-first."""
    objects = _hot_cluster()
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["spec"].pop("schedulerName", None)
            if pod_scheduler:
                obj["spec"]["schedulerName"] = pod_scheduler
    view = view_of(objects)
    args = {"schedulerNames": scheduler_names} if scheduler_names else {}
    report = _descheduler(mode, view.store, FakeEvictions(), **args).run_round(1, view.snapshot())
    assert len(report.migrations) == migrated
    assert len(view.store.objects(POD_MIGRATION_JOB_KIND)) == migrated


@pytest.mark.parametrize(("cost", "migrated"), [("2147483647", 0), ("2147483646", 2), ("+2147483647", 2)])
def test_a_pod_with_the_max_eviction_cost_is_never_migrated(cost: str, migrated: int) -> None:
    """`FilterPodWithMaxEvictionCost` (Koordinator's `TestFilterPodWithMaxEvictionCost`): an
    eviction cost of MaxInt32 keeps the pod in place; a cost Go cannot parse counts as 0."""
    objects = _hot_cluster()
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["metadata"].setdefault("annotations", {})["scheduling.koordinator.sh/eviction-cost"] = cost
    view = view_of(objects)
    report = _descheduler("ReservationFirst", view.store, FakeEvictions()).run_round(1, view.snapshot())
    assert len(report.migrations) == migrated


@pytest.mark.parametrize("mode", ["ReservationFirst", "EvictDirectly"])
def test_low_node_load_creates_jobs_instead_of_evicting(mode: str) -> None:
    view = view_of(_hot_cluster())
    store, evictions = view.store, FakeEvictions()
    report = _descheduler(mode, store, evictions).run_round(1, view.snapshot())
    jobs = store.objects(POD_MIGRATION_JOB_KIND)
    assert len(jobs) == 2 and len(report.migrations) == 2  # maxMigratingPerWorkload=2 of 4 replicas
    if mode == "ReservationFirst":
        assert evictions.evicted == []  # nothing is evicted before its Reservation is scheduled
        assert all(pmj.phase_of(j) == pmj.RUNNING for j in jobs)
        assert {m.reservation for m in report.migrations} == {j["metadata"]["name"] for j in jobs}
    else:
        # the workload's object limiter (defaults: 5m, burst 1) lets one eviction through now
        assert len(evictions.evicted) == 1 and evictions.evicted[0] in {pmj.pod_key_of(j) for j in jobs}
        reasons = sorted(
            str((pmj.condition(j, pmj.COND_EVICTION) or {}).get("reason"))
            for j in store.objects(POD_MIGRATION_JOB_KIND)
        )
        assert reasons == ["Evicting", "None"]  # one evicted (done once the pod is gone), one waiting


@pytest.mark.parametrize("outcome", [Outcome.FAILED, Outcome.BLOCKED])
def test_an_eviction_that_failed_is_never_reported_as_done_and_its_job_says_why(outcome: Outcome) -> None:
    """Against Kubernetes 1.20 a policy/v1 Eviction got a 400 and the round said `evicted`, its
    job Running without a reason. A refused request fails the job (FailedEvict); a budget keeps it
    running, asked again, with the reason on it."""
    view = view_of(_hot_cluster())
    evictions = FakeEvictions({f"shop/web-{i}": outcome for i in range(4)})
    report = _descheduler("EvictDirectly", view.store, evictions).run_round(1, view.snapshot())
    assert report.evictions == [] and evictions.evicted == []
    jobs = view.store.objects(POD_MIGRATION_JOB_KIND)
    assert jobs and all(j["status"]["reason"] == "FailedEvict" for j in jobs)
    assert all("caused by" in j["status"]["message"] for j in jobs)
    if outcome is Outcome.FAILED:
        assert all(j["status"]["phase"] == pmj.FAILED for j in jobs)
        assert all(UNSERVED_EVICTION_VERSION in j["status"]["message"] for j in jobs)
        skipped = {s.pod: s.reason for s in report.skipped}
        for job in jobs:
            assert skipped[pmj.pod_key_of(job)].startswith(f"PodMigrationJob {job['metadata']['name']} Failed: ")
    else:
        assert all(j["status"]["phase"] == pmj.RUNNING for j in jobs)


def test_a_job_that_evicted_its_pod_is_reported_as_an_eviction() -> None:
    view = view_of(_hot_cluster())
    evictions = FakeEvictions()
    report = _descheduler("EvictDirectly", view.store, evictions).run_round(1, view.snapshot())
    assert [e.pod for e in report.evictions] == evictions.evicted and len(evictions.evicted) == 1


# --- each limit -------------------------------------------------------------------------------


def test_max_migrating_per_node() -> None:
    a, b, c = pod("a", owner="x"), pod("b", owner="y"), pod("c", owner="z")
    pods = keyed(a, b, c)
    jobs = [running_job(a), running_job(b)]
    assert "maxMigratingPerNode=2" in (limits().retryable(c, pods, jobs) or "")
    assert limits(maxMigratingPerNode=3).retryable(c, pods, jobs) is None


def test_max_migrating_per_namespace_and_globally() -> None:
    a, b = pod("a", owner="x"), pod("b", owner="y", node="node-b")
    pods = keyed(a, b)
    jobs = [running_job(a)]
    assert "maxMigratingPerNamespace=1" in (limits(maxMigratingPerNamespace=1).retryable(b, pods, jobs) or "")
    assert "maxMigratingGlobally=1" in (limits(maxMigratingGlobally=1).retryable(b, pods, jobs) or "")
    assert limits(maxMigratingPerNamespace=2).retryable(b, pods, jobs) is None


def test_max_migrating_per_workload() -> None:
    replicas = [pod(f"w-{i}", node=f"node-{i}") for i in range(6)]
    pods = keyed(*replicas)
    jobs = [running_job(replicas[0])]
    assert "maxMigratingPerWorkload=1" in (limits(maxMigratingPerWorkload=1).retryable(replicas[1], pods, jobs) or "")
    assert limits(maxMigratingPerWorkload=2).retryable(replicas[1], pods, jobs) is None
    assert "maxMigratingPerWorkload=1" in (
        limits(maxMigratingPerWorkload="20%").retryable(replicas[1], pods, jobs) or ""  # 20% of 6, at least 1
    )


def test_max_unavailable_per_workload_counts_pods_not_ready() -> None:
    replicas = [pod(f"w-{i}", node=f"node-{i}", ready=i != 5) for i in range(6)]
    pods = keyed(*replicas)
    jobs = [running_job(replicas[0])]
    refused = limits(maxMigratingPerWorkload=3, maxUnavailablePerWorkload=2).retryable(replicas[1], pods, jobs)
    assert "maxUnavailablePerWorkload=2: 2 pod(s)" in (refused or "")  # one migrating + one not Ready
    assert limits(maxMigratingPerWorkload=3, maxUnavailablePerWorkload=3).retryable(replicas[1], pods, jobs) is None


def test_expected_replicas_a_single_replica_never_migrates() -> None:
    single = pod("only", owner="solo")
    assert "1 replica(s)" in (limits().non_retryable(single, keyed(single)) or "")
    assert limits(skipCheckExpectedReplicas=True).non_retryable(single, keyed(single)) is None
    pair = [pod("p-0", owner="duo"), pod("p-1", owner="duo")]
    assert limits(maxUnavailablePerWorkload=2).non_retryable(pair[0], keyed(*pair)) is not None  # all 2 may go


def test_the_workload_object_limiter_spends_a_token_per_eviction_and_refills_over_its_duration() -> None:
    now = [START]
    replicas = [pod(f"w-{i}", node=f"node-{i}") for i in range(6)]
    pods = keyed(*replicas)
    lim = Limits(MigrationLimits(object_limiters={"workload": ObjectLimiter(60.0, 1)}), lambda: now[0])
    assert lim.limiter_refusal(replicas[0], pods) is None
    lim.track_eviction(replicas[0], pods)
    assert "objectLimiters.workload" in (lim.limiter_refusal(replicas[1], pods) or "")
    assert lim.limiter_refusal(pod("other", owner="other"), pods) is None  # another workload is not limited
    now[0] += 60
    assert lim.limiter_refusal(replicas[1], pods) is None


def test_limit_fields_are_validated_with_their_path() -> None:
    assert scaled_limit(20, None) == 2 and scaled_limit(6, None) == 2 and scaled_limit(3, None) == 1
    with pytest.raises(ConfigError, match=r"args\.maxMigratingPerWorkload"):
        parse_limits(Fields({"maxMigratingPerWorkload": "ten"}, "args"))
    with pytest.raises(ConfigError, match=r"args\.objectLimiters\.cluster"):
        parse_limits(Fields({"objectLimiters": {"cluster": {"duration": "1m"}}}, "args"))


# --- arbitration ------------------------------------------------------------------------------


def test_arbitration_passes_competing_jobs_in_order_and_holds_the_rest() -> None:
    store = ClusterStore()
    backend = StoreMigrationBackend(store)
    low = pod("w-low", priority=5500, node="node-1")
    high = pod("w-high", priority=9500, node="node-2")
    replicas = [low, high, *(pod(f"w-{i}", node=f"node-{i + 3}") for i in range(4))]
    single = pod("single", owner="solo", node="node-9")
    for p in (high, low, single):
        backend.create_job(
            pmj.new_job(
                "job-" + p["metadata"]["name"],
                p,
                mode=pmj.MODE_EVICT_DIRECTLY,
                ttl_seconds=0,
                reason="",
                trigger="",
                created_by="",
                now=START,
            )
        )
    reconciler = Reconciler(
        backend,
        FakeEvictions(),
        limits(maxMigratingPerWorkload=1),
        lambda: START,
        default_mode=pmj.MODE_EVICT_DIRECTLY,
        pod_sorter=lambda pods: sorted(pods, key=lambda p: p["spec"].get("priority", 0)),
    )
    pods = keyed(*replicas, single)
    jobs = backend.list_jobs()
    reconciler.arbitrate(jobs, pods)
    by_pod = {pmj.pod_key_of(j): j for j in backend.list_jobs()}
    passed = lambda j: j["metadata"]["annotations"].get(ANNOTATION_PASSED_ARBITRATION) == "true"  # noqa: E731
    assert passed(by_pod["shop/w-low"]) and not passed(by_pod["shop/w-high"])  # the lower priority goes first
    assert pmj.phase_of(by_pod["shop/w-high"]) == pmj.PENDING  # held for a later arbitration
    assert pmj.phase_of(by_pod["shop/single"]) == pmj.FAILED
    assert by_pod["shop/single"]["status"]["reason"] == pmj.REASON_FORBIDDEN_MIGRATE_POD


async def test_jobs_advance_between_rounds_when_running_continuously(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job needs several passes (reserve, scheduled, evict, bound): with a round every 120s it
    would time out, so the jobs advance every few seconds between rounds, as Koordinator requeues."""
    import asyncio

    from scheduler_plugins.descheduler import service

    class Counting:
        passes = 0

        def between_rounds(self) -> list[Any]:
            self.passes += 1
            return []

    monkeypatch.setattr(service, "MIGRATION_REQUEUE_SECONDS", 0.01)
    counting = Counting()
    await service._between_rounds(counting, 0.2, None)  # type: ignore[arg-type]
    assert counting.passes >= 3
    paused = Counting()
    not_leading = asyncio.Event()
    await service._between_rounds(paused, 0.05, not_leading)  # type: ignore[arg-type]
    assert paused.passes == 0  # only the leader migrates


# --- hand-written jobs pass the evictor's protections -----------------------------------------


def _hand_written(p: dict[str, Any]) -> dict[str, Any]:
    """A PodMigrationJob as a user writes it: Pending, never arbitrated."""
    job = running_job(p, "hand-" + p["metadata"]["name"])
    job["spec"]["mode"] = pmj.MODE_EVICT_DIRECTLY
    job["status"] = {"phase": pmj.PENDING}
    return job


def _static(name: str) -> dict[str, Any]:
    """A control-plane static pod's mirror: the kubelet owns it through its Node (controller)."""
    obj = pod(name, node="node-3", owner=None, ns="kube-system", priority=2000001000)
    obj["spec"]["priorityClassName"] = "system-node-critical"
    obj["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "h-" + name, "kubernetes.io/config.source": "file"}
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "node-3", "uid": "node-3-uid", "controller": True}
    ]
    return obj


def _daemon(node: str) -> dict[str, Any]:
    obj = pod("agent-" + node, node=node, owner=None, ns="monitoring")
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "agent-uid", "controller": True}
    ]
    return obj


def test_hand_written_jobs_for_pods_the_evictor_protects_fail_forbidden() -> None:
    """Koordinator's arbitrator runs every new job's pod through the non-retryable filter
    (`arbitrator/filter.go`: the DefaultEvictor's rules, the eviction cost, the namespaces, the
    expected replicas; `arbitrator_test.go` `TestDoOnceArbitrate`) and fails a job whose pod it
    refuses `ForbiddenMigratePod`: a job written by hand does not get round the evictor. Three
    mirror pods share their Node owner and three DaemonSet pods their DaemonSet, so the expected
    replicas alone would let both through; an ordinary ReplicaSet pod is still migrated."""
    statics = [_static(n) for n in ("kube-apiserver", "etcd", "kube-scheduler")]
    daemons = [_daemon(n) for n in ("node-1", "node-2", "node-3")]
    replicas = [pod(f"web-{i}", node=f"node-{i + 1}", owner="web") for i in range(3)]
    nodes = [make_node(f"node-{i}", allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in (1, 2, 3)]
    view = view_of([*nodes, *statics, *daemons, *replicas])
    jobs = [_hand_written(p) for p in (statics[0], daemons[0], replicas[0])]
    for job in jobs:
        view.store.put(POD_MIGRATION_JOB_KIND, job, "test")
    evictions = FakeEvictions()
    _descheduler("EvictDirectly", view.store, evictions).run_round(1, view.snapshot())
    by_pod = {pmj.pod_key_of(j): j for j in view.store.objects(POD_MIGRATION_JOB_KIND)}
    for key, why in (("kube-system/kube-apiserver", "mirror pod"), ("monitoring/agent-node-1", "DaemonSet pod")):
        assert pmj.phase_of(by_pod[key]) == pmj.FAILED, key
        assert by_pod[key]["status"]["reason"] == pmj.REASON_FORBIDDEN_MIGRATE_POD
        assert why in by_pod[key]["status"]["message"]
    assert evictions.evicted == ["shop/web-0"]  # the ordinary replica was migrated
