"""How the MigrationController takes a pod off its node: its `evictionPolicy`
(`pkg/descheduler/controllers/migration/evictor`: `evictor_native.go`, `evictor_delete.go`,
`evictor_soft.go`, `interpreter.go`; test `TestSoftEvictor`).

* `Eviction` (the default): a `policy/v1` Eviction, so PodDisruptionBudgets hold.
* `Delete`: DELETE the pod, with the job's delete options — no budget is consulted.
* `SoftEviction`: evict nothing; annotate the pod `scheduling.koordinator.sh/soft-eviction` with
  `{timestamp, deleteOptions, initiator, reason}` for whoever owns the pod's lifecycle to act on.
  The job waits (`Evicting`) until the pod is gone, or times out.

A pod's label `koordinator.sh/evict-policy` (else the job's) picks another of these for that pod; an
unknown value falls back to the configured policy, as Koordinator's interpreter does. `evictQPS` /
`evictBurst`, when set, bound how fast evictions go (a token bucket): an eviction over the rate is
refused for now (`TooManyEvictions`) and retried on a later pass.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from colocate.cluster.eviction import EvictionResult, Outcome
from policies.apis.constants import ANNOTATION_SOFT_EVICTION, LABEL_EVICT_POLICY
from policies.apis.objects import labels_of, name_of, namespace_of
from scheduler_plugins.clock import format_time
from scheduler_plugins.descheduler.framework.handle import EvictionBackend
from scheduler_plugins.descheduler.migration.limits import TokenBucket

EVICTION: Final = "Eviction"
DELETE: Final = "Delete"
SOFT_EVICTION: Final = "SoftEviction"
EVICTION_POLICIES: Final = (EVICTION, DELETE, SOFT_EVICTION)
TOO_MANY_EVICTIONS: Final = "TooManyEvictions"


class PodWriter(Protocol):
    """What the `Delete` and `SoftEviction` policies need besides the Eviction API (the migration
    backend: the API server, or the store offline)."""

    def delete_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult: ...

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> EvictionResult: ...


@dataclass(frozen=True)
class EvictRate:
    """`evictQPS` evictions a second, at most `evictBurst` at once."""

    qps: float
    burst: int


class PolicyEvictor:
    """Koordinator's evictor interpreter: one policy by default, another per pod by label."""

    def __init__(
        self,
        policy: str,
        evictions: EvictionBackend,
        writer: PodWriter | None,
        clock: Callable[[], float],
        rate: EvictRate | None = None,
    ) -> None:
        if policy not in EVICTION_POLICIES:
            raise ValueError(f"unsupported eviction policy {policy!r}")
        self.policy, self.evictions, self.writer, self.clock = policy, evictions, writer, clock
        self._bucket = TokenBucket(rate.qps, rate.burst, clock()) if rate is not None else None
        self._lock = threading.Lock()  # jobs may be reconciled concurrently

    def policy_for(self, pod: Mapping[str, Any], job: Mapping[str, Any] | None = None) -> str:
        for labels in (labels_of(pod), labels_of(job or {})):
            chosen = labels.get(LABEL_EVICT_POLICY)
            if chosen:
                return chosen if chosen in EVICTION_POLICIES else self.policy
        return self.policy

    def evict(
        self,
        pod: Mapping[str, Any],
        grace_period_seconds: int | None,
        *,
        trigger: str,
        reason: str,
        job: Mapping[str, Any] | None = None,
    ) -> EvictionResult:
        if self._bucket is not None:
            with self._lock:
                now = self.clock()
                if self._bucket.available(now) < 1.0:
                    return EvictionResult(Outcome.BLOCKED, f"{TOO_MANY_EVICTIONS}: evictQPS/evictBurst reached")
                self._bucket.take(now)
        namespace, name = namespace_of(pod) or "default", name_of(pod)
        policy = self.policy_for(pod, job)
        if policy == EVICTION:
            return self.evictions.evict(namespace, name, grace_period_seconds)
        if self.writer is None:
            return EvictionResult(Outcome.FAILED, f"evictionPolicy {policy} needs a pod writer", 0)
        if policy == DELETE:
            return self.writer.delete_pod(namespace, name, grace_period_seconds)
        spec: dict[str, Any] = {"timestamp": format_time(self.clock())}
        if grace_period_seconds is not None:
            spec["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        spec["initiator"] = trigger
        spec["reason"] = reason or trigger or "NotSet"
        return self.writer.annotate_pod(namespace, name, {ANNOTATION_SOFT_EVICTION: json.dumps(spec)})
