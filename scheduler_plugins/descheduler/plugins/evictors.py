"""The Filter and Evict plugins: `MigrationController` (Koordinator's default for both points) and
`DefaultEvictor` (Kubernetes' name). Both filter with the DefaultEvictor semantics
(`plugins.evictable`) and evict through the handle's backend — `policy/v1` Eviction against the
API server — so PodDisruptionBudgets are honoured there. A refused eviction (429: a budget allows
no disruption now) is recorded as a skip with the server's reason; an evicted pod gets an Event.

MigrationController's PodMigrationJobs (reservation first, then evict) are not implemented: it
always evicts directly, as `evictionPolicy: Eviction` with `defaultJobMode: EvictDirectly` does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from cluster.eviction import Outcome
from policies.field_errors import ConfigError, Fields
from policies.objects import name_of, namespace_of, spec_of
from scheduler_plugins.descheduler.framework.config import check_fields
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.framework.handle import Handle
from scheduler_plugins.descheduler.framework.interfaces import EvictOptions, Object
from scheduler_plugins.descheduler.framework.report import EvictionEntry
from scheduler_plugins.descheduler.plugins.evictable import (
    FILTER_FIELDS,
    EvictableArgs,
    parse_evictable,
    why_not_evictable,
)

log = logging.getLogger("colocate.descheduler")

MIGRATION_CONTROLLER: Final = "MigrationController"
DEFAULT_EVICTOR: Final = "DefaultEvictor"
EVENT_REASON: Final = "Descheduled"
EVICTION_POLICIES: Final = ("Eviction",)
JOB_MODES: Final = ("ReservationFirst", "EvictDirectly")


@dataclass(frozen=True)
class MigrationControllerArgs:
    evictable: EvictableArgs = EvictableArgs()
    namespaces_include: tuple[str, ...] = ()
    namespaces_exclude: tuple[str, ...] = ()
    eviction_policy: str = "Eviction"
    default_job_mode: str = "ReservationFirst"
    grace_period_seconds: int | None = None
    scheduler_names: tuple[str, ...] = field(default=("koord-scheduler",))


_MIGRATION_FIELDS: Final = FILTER_FIELDS | frozenset(
    {
        "apiVersion",
        "kind",
        "paused",
        "dryRun",
        "namespaces",
        "nodeSelector",
        "maxConcurrentReconciles",
        "maxMigratingPerNode",
        "maxMigratingPerNamespace",
        "maxMigratingPerWorkload",
        "maxUnavailablePerWorkload",
        "skipCheckExpectedReplicas",
        "objectLimiters",
        "defaultJobMode",
        "defaultJobTTL",
        "evictionPolicy",
        "defaultDeleteOptions",
        "evictQPS",
        "evictBurst",
        "schedulerNames",
        "arbitrationInterval",
    }
)


def _choice(fields: Fields, key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = fields.str(key, default) or default
    if value not in allowed:
        raise ConfigError(
            fields.at(key), f'Unsupported value: "{value}": supported values: ' + ", ".join(f'"{a}"' for a in allowed)
        )
    return value


def parse_migration_controller_args(fields: Fields) -> MigrationControllerArgs:
    check_fields(fields, _MIGRATION_FIELDS)
    namespaces = fields.sub("namespaces")
    check_fields(namespaces, frozenset({"include", "exclude"}))
    include, exclude = namespaces.str_list("include"), namespaces.str_list("exclude")
    if include and exclude:
        raise ConfigError(namespaces.path, "only one of include or exclude may be set")
    for key in ("maxConcurrentReconciles", "maxMigratingPerNode", "maxMigratingPerNamespace", "evictBurst"):
        value = fields.int(key, None)
        if value is not None and value < 0:
            raise ConfigError(fields.at(key), f"must be greater than or equal to 0, got {value}")
    for key in ("defaultJobTTL", "arbitrationInterval"):
        fields.duration(key)
    grace = fields.sub("defaultDeleteOptions").int("gracePeriodSeconds", None)
    return MigrationControllerArgs(
        evictable=parse_evictable(fields),
        namespaces_include=tuple(include),
        namespaces_exclude=tuple(exclude),
        eviction_policy=_choice(fields, "evictionPolicy", "Eviction", EVICTION_POLICIES),
        default_job_mode=_choice(fields, "defaultJobMode", "ReservationFirst", JOB_MODES),
        grace_period_seconds=grace,
        scheduler_names=tuple(fields.str_list("schedulerNames") or ["koord-scheduler"]),
    )


def parse_default_evictor_args(fields: Fields) -> EvictableArgs:
    check_fields(fields, FILTER_FIELDS | {"apiVersion", "kind", "nodeSelector"})
    return parse_evictable(fields)


def evict_through_api(handle: Handle, pod: Object, options: EvictOptions, grace: int | None) -> bool:
    """Evict through the handle's backend; a refusal is a skip recorded with its reason."""
    namespace, name = namespace_of(pod) or "default", name_of(pod)
    node = str(spec_of(pod).get("nodeName") or "")
    result = handle.evictions.evict(namespace, name, options.grace_period_seconds or grace)
    if result.outcome is Outcome.EVICTED:
        if handle.events is not None:
            handle.events.record(
                pod,
                "Normal",
                EVENT_REASON,
                f"pod evicted from node {node} by koord-descheduler ({options.plugin_name}): {options.reason}",
            )
        return True
    reason = {
        Outcome.BLOCKED: "blocked by a PodDisruptionBudget",
        Outcome.GONE: "pod is gone",
        Outcome.FAILED: "eviction failed",
    }[result.outcome]
    detail = f"{reason}: {result.message}" if result.message else reason
    (log.info if result.outcome is not Outcome.FAILED else log.warning)("not evicted %s: %s", pod_key(pod), detail)
    handle.report.skipped.append(EvictionEntry(pod_key(pod), node, options.plugin_name, detail))
    return False


class MigrationController:
    name = MIGRATION_CONTROLLER

    def __init__(self, args: MigrationControllerArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    def filter(self, pod: Object) -> bool:
        namespace = namespace_of(pod) or "default"
        if self.args.namespaces_include and namespace not in self.args.namespaces_include:
            return False
        if namespace in self.args.namespaces_exclude:
            return False
        return why_not_evictable(pod, self.args.evictable) is None

    def pre_eviction_filter(self, pod: Object) -> bool:
        return True

    def evict(self, pod: Object, options: EvictOptions) -> bool:
        return evict_through_api(self.handle, pod, options, self.args.grace_period_seconds)


class DefaultEvictor:
    name = DEFAULT_EVICTOR

    def __init__(self, args: EvictableArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    def filter(self, pod: Object) -> bool:
        return why_not_evictable(pod, self.args) is None

    def pre_eviction_filter(self, pod: Object) -> bool:
        return True

    def evict(self, pod: Object, options: EvictOptions) -> bool:
        return evict_through_api(self.handle, pod, options, None)
