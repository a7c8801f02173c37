"""The MigrationController's limits and its arbitration between competing jobs
(`pkg/descheduler/controllers/migration/arbitrator/{filter.go,sort.go,arbitrator.go}`,
`controller.go` object limiters; tests `TestFilterMaxMigratingPerNode`,
`TestFilterMaxMigratingOrUnavailablePerWorkload`, `TestSort*`).

A pod may be migrated when, not counting its own job:

* non-retryable (the job fails `ForbiddenMigratePod`): its workload has more than one replica and
  not exactly `maxMigrating` or `maxUnavailable` of them (`filterExpectedReplicas`, unless
  `skipCheckExpectedReplicas`);
* retryable (the job waits for a later arbitration): fewer than `maxMigratingGlobally` jobs run,
  fewer than `maxMigratingPerNode` on its node, fewer than `maxMigratingPerNamespace` in its
  namespace; fewer than `maxMigratingPerWorkload` of its workload's pods are migrating, and its
  workload's unavailable pods (not Ready) plus migrating ones stay under `maxUnavailablePerWorkload`;
  and its workload's (or namespace's) object limiter has a token: `maxMigrating` evictions per
  `duration`, a token bucket with `burst`.

`maxMigratingPerWorkload` and `maxUnavailablePerWorkload` are an int or a percentage of the
workload's replicas, rounded down, at least 1; unset: 10% above 10 replicas, 2 for 4..10, else 1
(`util.GetMaxUnavailable`). A workload's replicas are the pods the descheduler sees with the same
controller (Koordinator reads the controller's scale; we do not watch workloads).

Jobs compete in arbitration in Koordinator's order: newest first, then by their pods (the
descheduler's pod sorter: lower priority first), jobs of one controller together, then batch Jobs
with more migrating pods first; each passing job counts against the limits of the next.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import ANNOTATION_PASSED_ARBITRATION
from policies.apis.field_errors import ConfigError, Fields
from policies.apis.objects import annotations_of, metadata_of, name_of, namespace_of, node_name_of, status_of
from scheduler_plugins.descheduler.migration import job as pmj

WORKLOAD: Final = "workload"
NAMESPACE: Final = "namespace"
LIMITER_TYPES: Final = (WORKLOAD, NAMESPACE)


@dataclass(frozen=True)
class ObjectLimiter:
    duration_seconds: float
    #: an int or "N%" of the workload's replicas; None: maxMigratingPerWorkload
    max_migrating: int | str | None = None
    burst: int = 1


@dataclass(frozen=True)
class MigrationLimits:
    max_migrating_globally: int | None = None
    max_migrating_per_node: int | None = 2
    max_migrating_per_namespace: int | None = None
    max_migrating_per_workload: int | str | None = None
    max_unavailable_per_workload: int | str | None = None
    skip_check_expected_replicas: bool = False
    object_limiters: Mapping[str, ObjectLimiter] = field(
        default_factory=lambda: {WORKLOAD: ObjectLimiter(300.0)}  # defaults.go: workload, 5m
    )


def scaled_limit(replicas: int, value: int | str | None) -> int:
    """`util.GetMaxUnavailable` / `GetMaxMigrating`."""
    limit = 0
    if value is not None:
        limit = _scaled(value, replicas) or 1
    if limit == 0:
        if replicas > 10:
            limit = _scaled("10%", replicas)
        elif replicas >= 4:
            limit = 2
        else:
            limit = 1
    return min(limit, replicas)


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.floor(int(value[:-1]) * total / 100)
    return int(value)


def controller_of(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in metadata_of(pod).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _owner_key(pod: Mapping[str, Any]) -> str:
    ref = controller_of(pod)
    if ref is None:
        return ""
    return str(ref.get("uid") or f"{namespace_of(pod)}/{ref.get('kind')}/{ref.get('name')}")


def _ready(pod: Mapping[str, Any]) -> bool:
    status = status_of(pod)
    return status.get("phase") in ("Running", None) and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()
    )


def _key(pod: Mapping[str, Any]) -> str:
    return f"{namespace_of(pod) or 'default'}/{name_of(pod)}"


class PodIndex(dict[str, Mapping[str, Any]]):
    """Pods by `namespace/name`, with their workloads indexed on first use (a round asks about the
    workload of every candidate: without the index each question is a scan of every pod)."""

    _by_owner: dict[str, list[Mapping[str, Any]]] | None = None
    _members: dict[str, tuple[frozenset[str], frozenset[str]]] | None = None

    def members(self, workload: str) -> tuple[frozenset[str], frozenset[str]]:
        """The keys of a workload's pods, and of those not Ready."""
        if self._members is None:
            self._members = {}
        found = self._members.get(workload)
        if found is None:
            pods = self.by_owner().get(workload, [])
            found = frozenset(map(_key, pods)), frozenset(_key(p) for p in pods if not _ready(p))
            self._members[workload] = found
        return found

    def by_owner(self) -> dict[str, list[Mapping[str, Any]]]:
        if self._by_owner is None:
            index: dict[str, list[Mapping[str, Any]]] = {}
            for pod in self.values():
                owner = _owner_key(pod)
                if owner:
                    index.setdefault(f"{namespace_of(pod) or 'default'}/{owner}", []).append(pod)
            self._by_owner = index
        return self._by_owner


class JobCounts:
    """The jobs that count against the limits (`counts`), summed by pod, node and namespace; a
    caller adds each job it creates, so a round's checks cost nothing per existing job."""

    def __init__(self, pods: Mapping[str, Mapping[str, Any]]) -> None:
        self.pods = pods
        self.keys: set[str] = set()
        #: pods with an active job, counted or not (a pod gets one job at a time)
        self.active: set[str] = set()
        self.by_node: Counter[str] = Counter()
        self.by_namespace: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return len(self.keys)

    @classmethod
    def of(cls, jobs: Sequence[Mapping[str, Any]], pods: Mapping[str, Mapping[str, Any]]) -> JobCounts:
        out = cls(pods)
        for job in jobs:
            out.add(job)
        return out

    def add(self, job: Mapping[str, Any]) -> None:
        key = pmj.pod_key_of(job)
        if pmj.is_active(job):
            self.active.add(key)
        if not counts(job):
            return
        if key in self.keys:
            return
        self.keys.add(key)
        self.by_node[node_name_of(self.pods.get(key) or {})] += 1
        self.by_namespace[str(pmj.pod_ref(job).get("namespace") or "")] += 1


class TokenBucket:
    """golang.org/x/time/rate.Limiter as the object limiters use it: `rate` tokens a second, at
    most `burst`, full at first."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst, self.tokens, self.at = rate, burst, float(burst), now

    def available(self, now: float) -> float:
        return min(float(self.burst), self.tokens + max(0.0, now - self.at) * self.rate)

    def take(self, now: float) -> None:
        self.tokens, self.at = self.available(now) - 1.0, now


class Limits:
    """The limits over one view of the cluster: its pods (by key) and its jobs."""

    def __init__(self, limits: MigrationLimits, clock: Callable[[], float]) -> None:
        self.limits = limits
        self.clock = clock
        #: object limiters by type and key (a workload's owner UID, a namespace), bounded by the
        #: workloads and namespaces evicted from within the last 1.5 × duration
        self.buckets: dict[str, dict[str, TokenBucket]] = {t: {} for t in limits.object_limiters}

    # --- the workload of a pod -------------------------------------------------------------------
    @staticmethod
    def workload_pods(pod: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        owner = _owner_key(pod)
        if not owner:
            return []
        namespace = namespace_of(pod) or "default"
        if isinstance(pods, PodIndex):
            return pods.by_owner().get(f"{namespace}/{owner}", [])
        return [p for p in pods.values() if (namespace_of(p) or "default") == namespace and _owner_key(p) == owner]

    # --- the filters -----------------------------------------------------------------------------
    def non_retryable(self, pod: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> str | None:
        """`filterExpectedReplicas`: why the pod may never be migrated, or None."""
        if self.limits.skip_check_expected_replicas or controller_of(pod) is None:
            return None
        replicas = len(self.workload_pods(pod, pods))
        max_migrating = scaled_limit(replicas, self.limits.max_migrating_per_workload)
        max_unavailable = scaled_limit(replicas, self.limits.max_unavailable_per_workload)
        if replicas == 1 or replicas in (max_migrating, max_unavailable):
            return (
                f"workload of {replicas} replica(s) with maxMigrating {max_migrating} and maxUnavailable "
                f"{max_unavailable}: migrating would leave it without a replica"
            )
        return None

    def retryable(
        self,
        pod: Mapping[str, Any],
        pods: Mapping[str, Mapping[str, Any]],
        jobs: Sequence[Mapping[str, Any]] | JobCounts,
    ) -> str | None:
        """Why the pod may not be migrated now (a limit reached), or None. `jobs` may be a
        `JobCounts` kept up to date by the caller (a round asks once per candidate pod)."""
        key = _key(pod)
        counted = jobs if isinstance(jobs, JobCounts) else JobCounts.of(jobs, pods)
        own = 1 if key in counted.keys else 0
        limits = self.limits
        if limits.max_migrating_globally and counted.total - own >= limits.max_migrating_globally:
            return f"maxMigratingGlobally={limits.max_migrating_globally} jobs are migrating"
        node = node_name_of(pod)
        if node and limits.max_migrating_per_node:
            if counted.by_node[node] - own >= limits.max_migrating_per_node:
                return f"maxMigratingPerNode={limits.max_migrating_per_node} pods of node {node} are migrating"
        namespace = namespace_of(pod) or "default"
        if limits.max_migrating_per_namespace:
            if counted.by_namespace[namespace] - own >= limits.max_migrating_per_namespace:
                return (
                    f"maxMigratingPerNamespace={limits.max_migrating_per_namespace} pods of namespace "
                    f"{namespace} are migrating"
                )
        others = counted.keys - {key}
        workload = self.workload_pods(pod, pods)
        if workload:
            replicas = len(workload)
            if isinstance(pods, PodIndex):
                members, not_ready = pods.members(f"{namespace}/{_owner_key(pod)}")
            else:
                members = frozenset(map(_key, workload))
                not_ready = frozenset(_key(p) for p in workload if not _ready(p))
            migrating = members & others
            max_migrating = scaled_limit(replicas, limits.max_migrating_per_workload)
            if migrating and len(migrating) >= max_migrating:
                return f"maxMigratingPerWorkload={max_migrating}: {len(migrating)} pod(s) of its workload are migrating"
            unavailable = not_ready | migrating
            max_unavailable = scaled_limit(replicas, limits.max_unavailable_per_workload)
            if len(unavailable) >= max_unavailable:
                return (
                    f"maxUnavailablePerWorkload={max_unavailable}: {len(unavailable)} pod(s) of its workload are "
                    "unavailable or migrating"
                )
        return self.limiter_refusal(pod, pods)

    def _limiter_keys(self, pod: Mapping[str, Any]) -> dict[str, str]:
        keys = {WORKLOAD: _owner_key(pod), NAMESPACE: namespace_of(pod) or "default"}
        return {t: keys[t] for t in self.limits.object_limiters if keys.get(t)}

    def limiter_refusal(self, pod: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> str | None:
        """`checkPodExceedObjectLimiter`: a limiter with no token left refuses."""
        now = self.clock()
        for kind, key in self._limiter_keys(pod).items():
            bucket = self.buckets[kind].get(key)
            if bucket is not None and bucket.available(now) - 1 < 0:
                window = self.limits.object_limiters[kind].duration_seconds
                return f"objectLimiters.{kind}: the {kind}'s migrations in the last {window:g}s used its tokens"
        return None

    def track_eviction(self, pod: Mapping[str, Any], pods: Mapping[str, Mapping[str, Any]]) -> None:
        """`trackEvictedPod`: take a token of each limiter of the pod."""
        now = self.clock()
        for kind, key in self._limiter_keys(pod).items():
            limiter = self.limits.object_limiters[kind]
            if limiter.duration_seconds <= 0:
                continue
            if kind == NAMESPACE:
                allowed = int(limiter.max_migrating) if isinstance(limiter.max_migrating, int) else 0
            else:
                replicas = len(self.workload_pods(pod, pods))
                allowed = scaled_limit(
                    replicas,
                    limiter.max_migrating
                    if limiter.max_migrating is not None
                    else self.limits.max_migrating_per_workload,
                )
            if allowed == 0:
                continue
            buckets = self.buckets[kind]
            for stale in [k for k, b in buckets.items() if now - b.at > 1.5 * limiter.duration_seconds]:
                del buckets[stale]
            bucket = buckets.get(key)
            if bucket is None:
                bucket = buckets[key] = TokenBucket(allowed / limiter.duration_seconds, max(1, limiter.burst), now)
            bucket.rate = allowed / limiter.duration_seconds
            bucket.take(now)


def counts(job: Mapping[str, Any]) -> bool:
    """Whether a job counts against the limits: running, or pending and past arbitration."""
    phase = pmj.phase_of(job)
    if phase == pmj.RUNNING:
        return True
    passed = annotations_of(job).get(ANNOTATION_PASSED_ARBITRATION) == "true"
    return phase == pmj.PENDING and passed


def arbitration_order(
    jobs: Sequence[Mapping[str, Any]],
    pods: Mapping[str, Mapping[str, Any]],
    pod_sorter: Callable[[list[Mapping[str, Any]]], list[Mapping[str, Any]]],
) -> list[Mapping[str, Any]]:
    """The arbitrator's sorts, applied in turn, each stable: newest job first; by the pod sorter
    (jobs whose pod is gone first); jobs of one controller next to the first of them."""
    ordered = sorted(jobs, key=lambda j: str(metadata_of(j).get("creationTimestamp") or ""), reverse=True)
    ranked = pod_sorter([p for j in ordered if (p := pods.get(pmj.pod_key_of(j))) is not None])
    rank = {_key(p): i for i, p in enumerate(ranked)}
    ordered = sorted(ordered, key=lambda j: rank.get(pmj.pod_key_of(j), -1))
    first: dict[str, int] = {}
    position = {}
    for i, j in enumerate(ordered):
        owner = _owner_key(pods.get(pmj.pod_key_of(j)) or {})
        position[id(j)] = first.setdefault(owner, i) if owner else i
    return sorted(ordered, key=lambda j: position[id(j)])


def _int_or_percent(fields: Fields, key: str) -> int | str | None:
    value = fields.raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(fields.at(key), f"must be an integer or a percentage, got {value!r}")
    if isinstance(value, str):
        digits = value[:-1] if value.endswith("%") else ""
        if not digits.isdigit():
            raise ConfigError(fields.at(key), f'must be an integer or a percentage ("10%"), got {value!r}')
    elif value < 0:
        raise ConfigError(fields.at(key), f"must be greater than or equal to 0, got {value}")
    return value


def parse_limits(fields: Fields) -> MigrationLimits:
    """The limit fields of `MigrationControllerArgs`, defaulted as `SetDefaults_MigrationControllerArgs`."""
    limiters: dict[str, ObjectLimiter] = {}
    raw = fields.raw.get("objectLimiters")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise ConfigError(fields.at("objectLimiters"), "must be a mapping of workload/namespace to a limiter")
        block = fields.sub("objectLimiters")
        for kind in raw:
            if kind not in LIMITER_TYPES:
                raise ConfigError(
                    block.at(str(kind)), f"unsupported object limiter (supported: {', '.join(LIMITER_TYPES)})"
                )
            entry = block.sub(str(kind))
            limiters[str(kind)] = ObjectLimiter(
                entry.duration("duration"), _int_or_percent(entry, "maxMigrating"), entry.int("burst", 1) or 1
            )
    per_node = fields.int("maxMigratingPerNode", 2)
    return MigrationLimits(
        max_migrating_globally=fields.int("maxMigratingGlobally", None),
        max_migrating_per_node=per_node,
        max_migrating_per_namespace=fields.int("maxMigratingPerNamespace", None),
        max_migrating_per_workload=_int_or_percent(fields, "maxMigratingPerWorkload"),
        max_unavailable_per_workload=_int_or_percent(fields, "maxUnavailablePerWorkload"),
        skip_check_expected_replicas=fields.bool("skipCheckExpectedReplicas", False),
        object_limiters=limiters or {WORKLOAD: ObjectLimiter(300.0)},
    )
