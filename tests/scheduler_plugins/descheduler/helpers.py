"""Building descheduler rounds in tests: a store of objects, a configuration, a fake eviction backend."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from colocate.cluster.eviction import EvictionResult, Outcome
from colocate.cluster.store import ClusterStore
from policies.apis.field_errors import Fields
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import fixed_clock
from scheduler_plugins.descheduler.cluster import DESCHEDULER_KINDS, DeschedulerView
from scheduler_plugins.descheduler.framework.config import DeschedulerConfig, parse_config
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.plugins.lownodeload.args import LowNodeLoadArgs, parse_args
from scheduler_plugins.descheduler.registry import in_tree_registry
from tests.support.builders import NOW, make_metric, make_pod, pod_metric

UNSERVED_EVICTION_VERSION = (
    "the API version in the data (policy/v1) does not match the expected API version (policy/v1beta1)"
)


class FakeEvictions:
    """Records evictions; `refuse` maps pod keys to the outcome the API server would give."""

    def __init__(self, refuse: Mapping[str, Outcome] | None = None) -> None:
        self.evicted: list[str] = []
        self.refuse = dict(refuse or {})

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        key = f"{namespace}/{name}"
        outcome = self.refuse.get(key)
        if outcome is Outcome.FAILED:  # what Kubernetes 1.20 answers a policy/v1 Eviction
            return EvictionResult(outcome, UNSERVED_EVICTION_VERSION, 400)
        if outcome is not None:
            return EvictionResult(outcome, "Cannot evict pod as it would violate the pod's disruption budget.", 429)
        self.evicted.append(key)
        return EvictionResult(Outcome.EVICTED, "", 201)


class FakeEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((involved["metadata"]["name"], reason, message))


def lownodeload_args(**fields: Any) -> LowNodeLoadArgs:
    return parse_args(Fields(fields, "args"))


def config(lownodeload: Mapping[str, Any] | None = None, **top: Any) -> DeschedulerConfig:
    """A single-profile configuration balancing with LowNodeLoad."""
    raw: dict[str, Any] = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerConfiguration",
        "deschedulingInterval": "0s",
        **top,
    }
    raw.setdefault(
        "profiles",
        [
            {
                "name": "test",
                "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
                "pluginConfig": [{"name": "LowNodeLoad", "args": dict(lownodeload or {})}],
            }
        ],
    )
    return parse_config(raw, in_tree_registry())


def view_of(objects: Iterable[Mapping[str, Any]]) -> DeschedulerView:
    store = ClusterStore(DESCHEDULER_KINDS)
    view = DeschedulerView(store)
    by_kind: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in DESCHEDULER_KINDS}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    for kind, items in by_kind.items():
        store.replace(kind, items)
    return view


def run_rounds(
    cfg: DeschedulerConfig,
    objects: Iterable[Mapping[str, Any]],
    rounds: int = 1,
    backend: FakeEvictions | None = None,
    events: FakeEvents | None = None,
    dry_run: bool | None = None,
    now: str = NOW,
) -> list[RoundReport]:
    view = view_of(objects)
    at = parse_time(now)
    assert at is not None
    descheduler = Descheduler(
        cfg, in_tree_registry(), fixed_clock(at), backend or FakeEvictions(), events, dry_run=dry_run
    )
    return [descheduler.run_round(i + 1, view.snapshot()) for i in range(rounds)]


def loaded_node(
    name: str,
    pods: list[tuple[str, str]],
    *,
    owner: str | None = "ReplicaSet",
    namespace: str = "default",
    **pod_fields: Any,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Pods (name, cpu) on `name` requesting and using that cpu, and the node's NodeMetric."""
    made = [
        make_pod(pod, namespace, node=name, owner_kind=owner, requests={"cpu": cpu}, **pod_fields) for pod, cpu in pods
    ]
    metric = make_metric(
        name,
        cpu="0",
        memory="0",
        update_time="2024-05-01T10:00:30Z",
        pods=[pod_metric(pod, namespace, cpu=cpu) for pod, cpu in pods],
    )
    return made, metric


def evicted(reports: list[RoundReport]) -> list[str]:
    return [e.pod for r in reports for e in r.evictions]
