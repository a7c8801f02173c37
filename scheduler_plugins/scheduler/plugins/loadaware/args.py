"""LoadAwareSchedulingArgs: named defaults and validation (Koordinator's
`pkg/scheduler/apis/config/v1/defaults.go` and `validation/`), with their quirks kept:

* `resourceWeights` defaults to {cpu: 1, memory: 1} only when it is empty AND
  `dominantResourceWeight` is 0;
* `usageThresholds` defaults to {cpu: 65, memory: 95} only when empty (an explicit {memory: 0}
  leaves cpu unset, i.e. no cpu filtering);
* missing cpu/memory keys of `estimatedScalingFactors` are filled individually (85 / 70).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.field_errors import ConfigError, Fields, check_range

DEFAULT_FILTER_EXPIRED_NODE_METRICS = True
DEFAULT_NODE_METRIC_EXPIRATION_SECONDS = 180
DEFAULT_ENABLE_SCHEDULE_WHEN_NODE_METRICS_EXPIRED = False
DEFAULT_RESOURCE_WEIGHTS = {RESOURCE_CPU: 1, RESOURCE_MEMORY: 1}
DEFAULT_USAGE_THRESHOLDS = {RESOURCE_CPU: 65, RESOURCE_MEMORY: 95}
DEFAULT_ESTIMATED_SCALING_FACTORS = {RESOURCE_CPU: 85, RESOURCE_MEMORY: 70}
DEFAULT_ESTIMATOR = "defaultEstimator"
KNOWN_ESTIMATORS = ("", DEFAULT_ESTIMATOR)
AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")


@dataclass(frozen=True)
class AggregatedArgs:
    usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    usage_aggregation_type: str = ""
    usage_aggregated_duration: float = 0.0
    score_aggregation_type: str = ""
    score_aggregated_duration: float = 0.0


@dataclass(frozen=True)
class LoadAwareSchedulingArgs:
    filter_expired_node_metrics: bool = DEFAULT_FILTER_EXPIRED_NODE_METRICS
    node_metric_expiration_seconds: int = DEFAULT_NODE_METRIC_EXPIRATION_SECONDS
    enable_schedule_when_node_metrics_expired: bool = DEFAULT_ENABLE_SCHEDULE_WHEN_NODE_METRICS_EXPIRED
    resource_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RESOURCE_WEIGHTS))
    dominant_resource_weight: int = 0
    usage_thresholds: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE_THRESHOLDS))
    prod_usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    prod_usage_include_sys: bool = False
    score_according_prod_usage: bool = False
    estimator: str = ""
    estimated_scaling_factors: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_ESTIMATED_SCALING_FACTORS)
    )
    estimated_seconds_after_pod_scheduled: int | None = None
    estimated_seconds_after_initialized: int | None = None
    allow_customize_estimation: bool = False
    aggregated: AggregatedArgs = field(default_factory=AggregatedArgs)
    supported_resources: tuple[str, ...] = ()


def _aggregated(fields: Fields) -> AggregatedArgs:
    agg = AggregatedArgs(
        usage_thresholds=fields.int_map("usageThresholds"),
        usage_aggregation_type=fields.str("usageAggregationType"),
        usage_aggregated_duration=fields.duration("usageAggregatedDuration"),
        score_aggregation_type=fields.str("scoreAggregationType"),
        score_aggregated_duration=fields.duration("scoreAggregatedDuration"),
    )
    for key, kind in (
        ("usageAggregationType", agg.usage_aggregation_type),
        ("scoreAggregationType", agg.score_aggregation_type),
    ):
        if kind and kind not in AGGREGATION_TYPES:
            raise ConfigError(fields.at(key), f"must be one of {', '.join(AGGREGATION_TYPES)}, got {kind!r}")
    for key, seconds in (
        ("usageAggregatedDuration", agg.usage_aggregated_duration),
        ("scoreAggregatedDuration", agg.score_aggregated_duration),
    ):
        if seconds < 0:
            raise ConfigError(fields.at(key), "must not be negative")
    for name, threshold in agg.usage_thresholds.items():
        check_range(f"{fields.at('usageThresholds')}.{name}", threshold, 0, 100)
    return agg


def parse_args(raw: Mapping[str, Any] | None, path: str) -> LoadAwareSchedulingArgs:
    f = Fields(raw, path)
    dominant = f.int("dominantResourceWeight", 0)
    weights = f.int_map("resourceWeights")
    if not weights and dominant == 0:
        weights = dict(DEFAULT_RESOURCE_WEIGHTS)
    thresholds = f.int_map("usageThresholds") or dict(DEFAULT_USAGE_THRESHOLDS)
    factors = f.int_map("estimatedScalingFactors")
    for name, default in DEFAULT_ESTIMATED_SCALING_FACTORS.items():
        factors.setdefault(name, default)
    args = LoadAwareSchedulingArgs(
        filter_expired_node_metrics=f.bool("filterExpiredNodeMetrics", DEFAULT_FILTER_EXPIRED_NODE_METRICS),
        node_metric_expiration_seconds=f.int("nodeMetricExpirationSeconds", DEFAULT_NODE_METRIC_EXPIRATION_SECONDS),
        enable_schedule_when_node_metrics_expired=f.bool(
            "enableScheduleWhenNodeMetricsExpired", DEFAULT_ENABLE_SCHEDULE_WHEN_NODE_METRICS_EXPIRED
        ),
        resource_weights=weights,
        dominant_resource_weight=dominant,
        usage_thresholds=thresholds,
        prod_usage_thresholds=f.int_map("prodUsageThresholds"),
        prod_usage_include_sys=f.bool("prodUsageIncludeSys", False),
        score_according_prod_usage=f.bool("scoreAccordingProdUsage", False),
        estimator=f.str("estimator"),
        estimated_scaling_factors=factors,
        estimated_seconds_after_pod_scheduled=f.int("estimatedSecondsAfterPodScheduled", None),
        estimated_seconds_after_initialized=f.int("estimatedSecondsAfterInitialized", None),
        allow_customize_estimation=f.bool("allowCustomizeEstimation", False),
        aggregated=_aggregated(f.sub("aggregated")),
        supported_resources=tuple(f.str_list("supportedResources")),
    )
    _validate(args, f)
    return args


def _validate(args: LoadAwareSchedulingArgs, f: Fields) -> None:
    if args.node_metric_expiration_seconds <= 0:
        raise ConfigError(
            f.at("nodeMetricExpirationSeconds"), f"must be > 0, got {args.node_metric_expiration_seconds}"
        )
    for name, weight in args.resource_weights.items():
        check_range(f"{f.at('resourceWeights')}.{name}", weight, 0, 100, open_low=True)
        if name not in args.estimated_scaling_factors:
            raise ConfigError(f"{f.at('resourceWeights')}.{name}", "must also appear in estimatedScalingFactors")
    check_range(f.at("dominantResourceWeight"), args.dominant_resource_weight, 0, 100)
    for key, table in (("usageThresholds", args.usage_thresholds), ("prodUsageThresholds", args.prod_usage_thresholds)):
        for name, value in table.items():
            check_range(f"{f.at(key)}.{name}", value, 0, 100)
    for name, value in args.estimated_scaling_factors.items():
        check_range(f"{f.at('estimatedScalingFactors')}.{name}", value, 0, 100, open_low=True)
    if args.estimator not in KNOWN_ESTIMATORS:
        raise ConfigError(f.at("estimator"), f'unknown estimator {args.estimator!r} (known: "", {DEFAULT_ESTIMATOR})')
    for key, seconds in (
        ("estimatedSecondsAfterPodScheduled", args.estimated_seconds_after_pod_scheduled),
        ("estimatedSecondsAfterInitialized", args.estimated_seconds_after_initialized),
    ):
        if seconds is not None and seconds < 0:
            raise ConfigError(f.at(key), "must not be negative")


def resource_vector(args: LoadAwareSchedulingArgs) -> tuple[str, ...]:
    """`NewResourceVectorizerFromArgs` (`helper.go`): {cpu, memory} ∪ every resource named in the args, sorted."""
    names = {RESOURCE_CPU, RESOURCE_MEMORY}
    for table in (
        args.usage_thresholds,
        args.prod_usage_thresholds,
        args.aggregated.usage_thresholds,
        args.resource_weights,
        args.estimated_scaling_factors,
    ):
        names.update(table)
    names.update(args.supported_resources)
    return tuple(sorted(names))
