"""LowNodeLoadArgs (`descheduler/v1alpha2`, Koordinator's `apis/config/types_loadaware.go`): parsed,
defaulted, converted, validated.

Conversion from v1alpha2 always turns the top-level node selector, deviation flag, thresholds,
weights and anomaly condition into a pool named `__default_node_pool__`, prepended to the
explicit pools (so it is processed first); each explicit pool inherits what it leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.field_errors import ConfigError, Fields
from policies.apis.selectors import LabelSelector
from scheduler_plugins.descheduler.framework.config import check_fields, selector

NAME: Final = "LowNodeLoad"
DEFAULT_POOL_NAME: Final = "__default_node_pool__"
DEFAULT_NODE_METRIC_EXPIRATION_SECONDS: Final = 180
DEFAULT_DETECTOR_CACHE_TIMEOUT: Final = 300.0
DEFAULT_ANOMALY_TIMEOUT: Final = 60.0
DEFAULT_CONSECUTIVE_ABNORMALITIES: Final = 5
DEFAULT_CONSECUTIVE_NORMALITIES: Final = 3
DEFAULT_RESOURCE_WEIGHTS: Final[Mapping[str, int]] = {RESOURCE_CPU: 1, RESOURCE_MEMORY: 1}

Thresholds = Mapping[str, float]

_POOL_FIELDS: Final = frozenset(
    {
        "name",
        "nodeSelector",
        "useDeviationThresholds",
        "lowThresholds",
        "highThresholds",
        "prodLowThresholds",
        "prodHighThresholds",
        "resourceWeights",
        "anomalyCondition",
    }
)
_ARGS_FIELDS: Final = (_POOL_FIELDS - {"name"}) | frozenset(
    {
        "apiVersion",
        "kind",
        "paused",
        "dryRun",
        "numberOfNodes",
        "nodeMetricExpirationSeconds",
        "evictableNamespaces",
        "podSelectors",
        "nodeFit",
        "detectorCacheTimeout",
        "nodePools",
    }
)


@dataclass(frozen=True)
class AnomalyCondition:
    #: seconds an anomaly lasts at most; 0 = the detector's own default (60 s)
    timeout: float = DEFAULT_ANOMALY_TIMEOUT
    consecutive_abnormalities: int = DEFAULT_CONSECUTIVE_ABNORMALITIES
    consecutive_normalities: int = DEFAULT_CONSECUTIVE_NORMALITIES


@dataclass(frozen=True)
class NodePool:
    name: str
    node_selector: LabelSelector | None
    use_deviation_thresholds: bool
    low: Thresholds
    high: Thresholds
    prod_low: Thresholds
    prod_high: Thresholds
    resource_weights: Mapping[str, int]
    anomaly_condition: AnomalyCondition


@dataclass(frozen=True)
class LowNodeLoadArgs:
    node_pools: tuple[NodePool, ...]
    paused: bool = False
    dry_run: bool = False
    number_of_nodes: int = 0
    node_metric_expiration_seconds: int = DEFAULT_NODE_METRIC_EXPIRATION_SECONDS
    namespaces_include: tuple[str, ...] = ()
    namespaces_exclude: tuple[str, ...] = ()
    pod_selectors: tuple[LabelSelector, ...] = ()
    node_fit: bool = True
    detector_cache_timeout: float = DEFAULT_DETECTOR_CACHE_TIMEOUT


def _thresholds(fields: Fields, key: str) -> dict[str, float]:
    raw = fields.raw.get(key) or {}
    if not isinstance(raw, Mapping):
        raise ConfigError(fields.at(key), "must be a mapping of resource name to percentage")
    out = {}
    for name, value in raw.items():
        path = f"{fields.at(key)}.{name}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"must be a number, got {value!r}")
        if not 0 <= value <= 100:
            raise ConfigError(path, f"Invalid value: {value}: percentage must be in [0, 100]")
        out[str(name)] = value
    return out


def _anomaly(fields: Fields, key: str) -> AnomalyCondition | None:
    """The given condition (zero counts left for the caller to default), None when absent."""
    if not fields.has(key):
        return None
    sub = fields.sub(key)
    check_fields(sub, frozenset({"timeout", "consecutiveAbnormalities", "consecutiveNormalities"}))
    counts = {}
    for name in ("consecutiveAbnormalities", "consecutiveNormalities"):
        counts[name] = sub.int(name, 0)
        if counts[name] < 0:
            raise ConfigError(sub.at(name), f"must be greater than or equal to 0, got {counts[name]}")
    timeout = sub.duration("timeout", 0.0)
    if timeout < 0:
        raise ConfigError(sub.at("timeout"), "must be greater than or equal to 0")
    return AnomalyCondition(timeout, counts["consecutiveAbnormalities"], counts["consecutiveNormalities"])


def _weights(fields: Fields, key: str) -> dict[str, int] | None:
    return fields.int_map(key) if fields.has(key) else None


def _pool(fields: Fields, name: str) -> NodePool:
    return NodePool(
        name=name,
        node_selector=selector(fields, "nodeSelector"),
        use_deviation_thresholds=fields.bool("useDeviationThresholds", False),
        low=_thresholds(fields, "lowThresholds"),
        high=_thresholds(fields, "highThresholds"),
        prod_low=_thresholds(fields, "prodLowThresholds"),
        prod_high=_thresholds(fields, "prodHighThresholds"),
        resource_weights=_weights(fields, "resourceWeights") or {},
        anomaly_condition=_anomaly(fields, "anomalyCondition") or AnomalyCondition(0, 0, 0),
    )


def _validate_pool(pool: NodePool, path: str) -> None:
    if pool.use_deviation_thresholds:
        return
    for low_key, high_key, low, high in (
        ("lowThresholds", "highThresholds", pool.low, pool.high),
        ("prodLowThresholds", "prodHighThresholds", pool.prod_low, pool.prod_high),
    ):
        for resource, value in low.items():
            if resource in high and value > high[resource]:
                raise ConfigError(
                    f"{path}.{low_key}.{resource}",
                    f"Invalid value: {value:g}: low threshold must not exceed the high threshold "
                    f"{high[resource]:g} ({high_key}.{resource})",
                )


def _default_weights(low: Thresholds, high: Thresholds, given: Mapping[str, int] | None) -> dict[str, int]:
    base = {**DEFAULT_RESOURCE_WEIGHTS, **{r: 1 for r in [*low, *high]}}
    if given is None:
        return base
    out = dict(given)
    for resource, weight in base.items():
        if out.get(resource, 0) <= 0:
            out[resource] = weight
    return out


def _default_anomaly(given: AnomalyCondition | None) -> AnomalyCondition:
    if given is None:
        return AnomalyCondition()
    if given.consecutive_abnormalities == 0:
        return replace(given, consecutive_abnormalities=DEFAULT_CONSECUTIVE_ABNORMALITIES)
    if given.consecutive_normalities == 0:
        return replace(given, consecutive_normalities=DEFAULT_CONSECUTIVE_NORMALITIES)
    return given


def _inherit(pool: NodePool, top: NodePool, given_weights: Mapping[str, int] | None) -> NodePool:
    own = pool.anomaly_condition
    anomaly = AnomalyCondition(
        own.timeout or top.anomaly_condition.timeout,
        own.consecutive_abnormalities or top.anomaly_condition.consecutive_abnormalities,
        own.consecutive_normalities or top.anomaly_condition.consecutive_normalities,
    )
    weights = dict(given_weights or {})
    for resource, weight in top.resource_weights.items():
        if weights.get(resource, 0) <= 0:
            weights[resource] = weight
    return replace(
        pool,
        low=pool.low or top.low,
        high=pool.high or top.high,
        prod_low=pool.prod_low or top.prod_low,
        prod_high=pool.prod_high or top.prod_high,
        resource_weights=weights,
        anomaly_condition=anomaly,
    )


def parse_args(fields: Fields) -> LowNodeLoadArgs:
    check_fields(fields, _ARGS_FIELDS)
    top = _pool(fields, DEFAULT_POOL_NAME)
    top = replace(
        top,
        resource_weights=_default_weights(top.low, top.high, _weights(fields, "resourceWeights")),
        anomaly_condition=_default_anomaly(_anomaly(fields, "anomalyCondition")),
    )
    _validate_pool(top, fields.path)
    pools = [top]
    raw_pools = fields.raw.get("nodePools") or []
    if not isinstance(raw_pools, list):
        raise ConfigError(fields.at("nodePools"), "must be a list of node pools")
    for index, raw in enumerate(raw_pools):
        pool_fields = Fields(raw, f"{fields.at('nodePools')}[{index}]")
        check_fields(pool_fields, _POOL_FIELDS)
        pool = _inherit(
            _pool(pool_fields, pool_fields.str("name") or str(index)), top, _weights(pool_fields, "resourceWeights")
        )
        _validate_pool(pool, pool_fields.path)
        pools.append(pool)
    number_of_nodes = fields.int("numberOfNodes", 0)
    if number_of_nodes < 0:
        raise ConfigError(fields.at("numberOfNodes"), f"must be greater than or equal to 0, got {number_of_nodes}")
    expiration = fields.int("nodeMetricExpirationSeconds", DEFAULT_NODE_METRIC_EXPIRATION_SECONDS)
    if expiration <= 0:
        raise ConfigError(fields.at("nodeMetricExpirationSeconds"), f"must be greater than 0, got {expiration}")
    namespaces = fields.sub("evictableNamespaces")
    check_fields(namespaces, frozenset({"include", "exclude"}))
    include, exclude = namespaces.str_list("include"), namespaces.str_list("exclude")
    if include and exclude:
        raise ConfigError(namespaces.path, "only one of include or exclude may be set")
    raw_selectors = fields.raw.get("podSelectors") or []
    if not isinstance(raw_selectors, list):
        raise ConfigError(fields.at("podSelectors"), "must be a list of {name, selector}")
    pod_selectors = []
    for index, raw in enumerate(raw_selectors):
        entry = Fields(raw, f"{fields.at('podSelectors')}[{index}]")
        check_fields(entry, frozenset({"name", "selector"}))
        pod_selectors.append(selector(entry, "selector") or LabelSelector())
    cache_timeout = fields.duration("detectorCacheTimeout", DEFAULT_DETECTOR_CACHE_TIMEOUT)
    if cache_timeout <= 0:
        raise ConfigError(fields.at("detectorCacheTimeout"), "must be greater than 0")
    return LowNodeLoadArgs(
        node_pools=tuple(pools),
        paused=fields.bool("paused", False),
        dry_run=fields.bool("dryRun", False),
        number_of_nodes=number_of_nodes,
        node_metric_expiration_seconds=expiration,
        namespaces_include=tuple(include),
        namespaces_exclude=tuple(exclude),
        pod_selectors=tuple(pod_selectors),
        node_fit=fields.bool("nodeFit", True),
        detector_cache_timeout=cache_timeout,
    )
