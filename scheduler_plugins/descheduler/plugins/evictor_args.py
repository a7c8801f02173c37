"""The args of the Filter and Evict plugins (`MigrationControllerArgs`, `DefaultEvictorArgs`;
Koordinator's `pkg/descheduler/apis/config/types_pluginargs.go`, `v1alpha2/defaults.go`,
`validation/validation_pluginargs.go`): parsed, defaulted and validated once, every error at its
field path. Every arg acts; those Koordinator has and this controller cannot honour (the evictor's
`nodeFit` and `nodeSelector`, `skipEvictionGates`, `arbitrationArgs.interval`, turning arbitration
off) are refused with the reason, never accepted silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.descheduler.framework.config import check_fields
from scheduler_plugins.descheduler.migration.evictpolicy import EVICTION_POLICIES, EvictRate
from scheduler_plugins.descheduler.migration.limits import MigrationLimits, parse_limits
from scheduler_plugins.descheduler.plugins.evictable import FILTER_FIELDS, EvictableArgs, parse_evictable

MIGRATION_CONTROLLER: Final = "MigrationController"
DEFAULT_EVICTOR: Final = "DefaultEvictor"
#: bound on `maxConcurrentReconciles` (threads of one process)
MAX_WORKERS: Final = 64
JOB_MODES: Final = ("ReservationFirst", "EvictDirectly")
#: a pod without `spec.schedulerName` is kube-scheduler's
DEFAULT_SCHEDULER: Final = "default-scheduler"


@dataclass(frozen=True)
class MigrationControllerArgs:
    evictable: EvictableArgs = EvictableArgs()
    namespaces_include: tuple[str, ...] = ()
    namespaces_exclude: tuple[str, ...] = ()
    eviction_policy: str = "Eviction"
    default_job_mode: str = "ReservationFirst"
    grace_period_seconds: int | None = None
    scheduler_names: tuple[str, ...] = field(default=("koord-scheduler",))
    #: whether evictions become PodMigrationJobs (`defaultJobMode` was given)
    migrate: bool = False
    default_job_ttl: float = 300.0
    limits: MigrationLimits = MigrationLimits()
    paused: bool = False
    #: the plugin's own dry run: reports what it would do, writes nothing
    dry_run: bool = False
    #: `maxConcurrentReconciles`: jobs reconciled at once
    workers: int = 1
    #: `evictQPS`/`evictBurst`; None: not rate-limited
    evict_rate: EvictRate | None = None


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
        "arbitrationArgs",
        "maxMigratingGlobally",
        "skipEvictionGates",
        "evictAllBarePods",
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
    for key in ("maxMigratingPerNode", "maxMigratingPerNamespace"):
        value = fields.int(key, None)
        if value is not None and value < 0:
            raise ConfigError(fields.at(key), f"must be greater than or equal to 0, got {value}")
    workers = fields.int("maxConcurrentReconciles", 1)
    if workers is None or not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(fields.at("maxConcurrentReconciles"), f"must be between 1 and {MAX_WORKERS}, got {workers}")
    _refuse_unsupported(fields)
    delete_options = fields.sub("defaultDeleteOptions")
    check_fields(delete_options, frozenset({"gracePeriodSeconds"}))
    grace = delete_options.int("gracePeriodSeconds", None)
    scheduler_names = fields.str_list("schedulerNames") or ["koord-scheduler"]
    if any(not name for name in scheduler_names):
        raise ConfigError(fields.at("schedulerNames"), "Invalid value: a scheduler name must not be empty")
    return MigrationControllerArgs(
        evictable=replace(parse_evictable(fields), evict_all_bare_pods=fields.bool("evictAllBarePods", False)),
        namespaces_include=tuple(include),
        namespaces_exclude=tuple(exclude),
        eviction_policy=_choice(fields, "evictionPolicy", "Eviction", EVICTION_POLICIES),
        default_job_mode=_choice(fields, "defaultJobMode", "ReservationFirst", JOB_MODES),
        grace_period_seconds=grace,
        scheduler_names=tuple(scheduler_names),
        migrate=bool(fields.str("defaultJobMode")),
        default_job_ttl=fields.duration("defaultJobTTL", 300.0),
        limits=parse_limits(fields),
        paused=fields.bool("paused", False),
        dry_run=fields.bool("dryRun", False),
        workers=workers,
        evict_rate=_evict_rate(fields),
    )


def _evict_rate(fields: Fields) -> EvictRate | None:
    """`evictQPS` (a number or a numeric string, as Koordinator's Float64OrString) and
    `evictBurst` (default 1, as Koordinator's); neither set: no rate limit."""
    if not fields.has("evictQPS") and not fields.has("evictBurst"):
        return None
    raw = fields.raw.get("evictQPS", 10)
    try:
        qps = float(raw) if not isinstance(raw, bool) else -1.0
    except (TypeError, ValueError):
        raise ConfigError(fields.at("evictQPS"), f"Invalid value: {raw!r}: must be a number") from None
    if not qps > 0:
        raise ConfigError(fields.at("evictQPS"), f"Invalid value: {raw!r}: must be greater than 0")
    burst = fields.int("evictBurst", 1)
    if burst is None or burst < 1:
        raise ConfigError(fields.at("evictBurst"), f"Invalid value: {burst}: must be greater than or equal to 1")
    return EvictRate(qps, burst)


def _refuse_node_fit(fields: Fields) -> None:
    """The evictor's `nodeFit` and the `nodeSelector` of the nodes it fits pods on."""
    if fields.raw.get("nodeFit"):
        raise ConfigError(
            fields.at("nodeFit"),
            "not supported: the evictor does not check that a pod fits another node; "
            "LowNodeLoad's own nodeFit (on by default) does",
        )
    if fields.raw.get("nodeSelector"):
        raise ConfigError(
            fields.at("nodeSelector"),
            "not supported: the evictor's node selector serves its nodeFit; select nodes with the "
            "profile's or LowNodeLoad's nodeSelector",
        )


def _refuse_unsupported(fields: Fields) -> None:
    """Koordinator's args this controller cannot honour: an error that says why, never silence."""
    if fields.raw.get("skipEvictionGates"):
        raise ConfigError(fields.at("skipEvictionGates"), "eviction gates cannot be skipped here: every limit applies")
    _refuse_node_fit(fields)
    arbitration = fields.sub("arbitrationArgs")
    check_fields(arbitration, frozenset({"enabled", "interval"}))
    if not arbitration.bool("enabled", True):
        raise ConfigError(arbitration.at("enabled"), "arbitration cannot be turned off here: every job passes it")
    if arbitration.has("interval"):
        raise ConfigError(
            arbitration.at("interval"),
            "not supported: jobs are arbitrated at the start of every reconcile pass (after each round and every 3s)",
        )


def parse_default_evictor_args(fields: Fields) -> EvictableArgs:
    check_fields(fields, FILTER_FIELDS | {"apiVersion", "kind", "nodeSelector"})
    _refuse_node_fit(fields)
    return parse_evictable(fields)
