"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.

Shared by every component that must act from one replica at a time (the webhook's certificate
rotation, the descheduler). `decide` is pure (the lease as read, who we are, the
time) and says what to write; `LeaseElector` reads and writes with optimistic concurrency, so two
contenders that both decide to take an expired lease cannot both win: the second write conflicts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from colocate.cluster.client import read_object
from policies.apis.timestamps import parse_time


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def micro_time(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Decision:
    leader: bool
    lease: dict[str, Any] | None  # the Lease to write (create when `create`), None: write nothing
    create: bool = False


def decide(
    lease: dict[str, Any] | None,
    identity: str,
    now: dt.datetime,
    duration: dt.timedelta,
    name: str,
    namespace: str = "",
) -> Decision:
    """Acquire a missing or expired lease, renew our own, keep off one another holds."""
    spec_now = micro_time(now)
    if lease is None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "holderIdentity": identity,
                "leaseDurationSeconds": int(duration.total_seconds()),
                "acquireTime": spec_now,
                "renewTime": spec_now,
                "leaseTransitions": 0,
            },
        }
        return Decision(True, body, create=True)
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    renewed = parse_time(spec.get("renewTime"))  # None (missing or unreadable): never renewed, expired
    held_for = int(spec.get("leaseDurationSeconds") or duration.total_seconds())
    if holder and holder != identity and renewed is not None and now.timestamp() < renewed + held_for:
        return Decision(False, None)
    new_spec = {
        **spec,
        "holderIdentity": identity,
        "leaseDurationSeconds": int(duration.total_seconds()),
        "renewTime": spec_now,
    }
    if holder != identity:
        new_spec.update(acquireTime=spec_now, leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
    return Decision(True, {**lease, "spec": new_spec})


class LeaseElector:
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        identity: str,
        *,
        name: str,
        duration: dt.timedelta = dt.timedelta(seconds=15),
        clock: Callable[[], dt.datetime] = utcnow,
    ) -> None:
        self.coordination = client.CoordinationV1Api(api)
        self.namespace, self.identity, self.name, self.duration, self.clock = namespace, identity, name, duration, clock

    def try_acquire_or_renew(self) -> bool:
        """True while we hold the lease. A conflicting write means someone else got there first."""
        lease = read_object(self.coordination.read_namespaced_lease, self.name, self.namespace)
        decision = decide(lease, self.identity, self.clock(), self.duration, self.name, self.namespace)
        if decision.lease is None:
            return decision.leader
        try:
            if decision.create:
                self.coordination.create_namespaced_lease(self.namespace, decision.lease, _preload_content=False)
            else:
                self.coordination.replace_namespaced_lease(
                    self.name, self.namespace, decision.lease, _preload_content=False
                )
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True
