"""Which pods the DefaultEvictor semantics let go (sigs.k8s.io/descheduler's `defaultevictor`)."""

from __future__ import annotations

from typing import Any

import pytest

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.descheduler.plugins.evictable import (
    EvictableArgs,
    cost_annotation,
    parse_evictable,
    why_not_evictable,
)
from scheduler_plugins.descheduler.plugins.evictor_args import (
    parse_default_evictor_args,
    parse_migration_controller_args,
)
from tests.support.builders import make_pod


def pod(**fields: Any) -> dict[str, Any]:
    fields.setdefault("owner_kind", "ReplicaSet")
    return make_pod("p", node="n1", **fields)


def with_metadata(made: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    made["metadata"].update(metadata)
    return made


@pytest.mark.parametrize(
    ("made", "reason"),
    [
        (pod(), None),
        (pod(owner_kind="DaemonSet"), "DaemonSet"),
        (pod(owner_kind=None), "ownerRefs"),
        (pod(annotations={"kubernetes.io/config.mirror": "x"}), "mirror"),
        (pod(annotations={"kubernetes.io/config.source": "file"}), "static"),
        (with_metadata(pod(), deletionTimestamp="2024-05-01T10:00:00Z"), "terminating"),
        (pod(volumes=[{"name": "v", "emptyDir": {}}]), "local storage"),
        (pod(volumes=[{"name": "v", "hostPath": {"path": "/x"}}]), "local storage"),
        (pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]), None),
        (pod(priority=2_000_000_000), "system critical"),
        (pod(priorityClassName="system-node-critical"), "system critical"),
        (pod(owner_kind=None, annotations={"descheduler.alpha.kubernetes.io/evict": ""}), None),
        (pod(owner_kind="DaemonSet", labels={"koordinator.sh/eviction-enabled": "true"}), None),
    ],
)
def test_default_semantics(made: dict[str, Any], reason: str | None) -> None:
    found = why_not_evictable(made, EvictableArgs())
    assert (found is None) if reason is None else (found is not None and reason in found)


def test_options_widen_or_narrow_what_may_be_evicted() -> None:
    args = parse_evictable(
        Fields(
            {
                "evictLocalStoragePods": True,
                "evictSystemCriticalPods": True,
                "ignorePvcPods": True,
                "evictFailedBarePods": True,
                "labelSelector": {"matchLabels": {"app": "web"}},
            },
            "args",
        )
    )
    web = {"app": "web"}
    assert why_not_evictable(pod(labels=web, volumes=[{"name": "v", "emptyDir": {}}]), args) is None
    assert why_not_evictable(pod(labels=web, priority=2_000_000_000), args) is None
    assert why_not_evictable(pod(labels=web, owner_kind=None, phase="Failed"), args) is None
    assert "PVC" in str(why_not_evictable(pod(labels=web, volumes=[{"name": "v", "persistentVolumeClaim": {}}]), args))
    assert "labelSelector" in str(why_not_evictable(pod(labels={"app": "db"}), args))


def test_a_priority_threshold_keeps_pods_at_or_above_it() -> None:
    args = parse_evictable(Fields({"priorityThreshold": {"value": 9000}}, "args"))
    assert why_not_evictable(pod(priority=8999), args) is None
    assert "threshold" in str(why_not_evictable(pod(priority=9000), args))


def test_evict_all_bare_pods_lets_a_pod_without_owners_go_for_the_migration_controller_only() -> None:
    """`arbitrator/filter.go`: `evictAllBarePods` is MigrationControllerArgs', not DefaultEvictor's."""
    bare = pod(owner_kind=None)
    args = parse_migration_controller_args(Fields({"evictAllBarePods": True}, "args"))
    assert why_not_evictable(bare, args.evictable) is None
    assert why_not_evictable(bare, parse_migration_controller_args(Fields({}, "args")).evictable) is not None
    with pytest.raises(ConfigError):
        parse_default_evictor_args(Fields({"evictAllBarePods": True}, "args"))


@pytest.mark.parametrize(
    ("value", "cost"),
    [("10", 10), ("-5", -5), ("0", 0), ("+10", 0), ("008", 0), ("1.5", 0), ("1e3", 0), ("", 0), ("2147483648", 0)],
)
def test_cost_annotations_are_read_as_go_reads_an_int32(value: str, cost: int) -> None:
    """`GetEvictionCost` / `GetDeletionCostFromPodAnnotations`: no plus sign, no leading zeros, int32."""
    pod = make_pod(annotations={"scheduling.koordinator.sh/eviction-cost": value})
    assert cost_annotation(pod, "scheduling.koordinator.sh/eviction-cost") == cost
