"""ElasticQuotaArgs (Koordinator's `pkg/scheduler/apis/config/types.go`, `v1/defaults.go`): named
defaults, validated with the field path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.field_errors import ConfigError, Fields
from policies.apis.quantity import QuantityError, scalar_of

DEFAULT_QUOTA_GROUP_MAX_VALUE: Final = 1844674407370955161  # MaxInt64 / 5, as Koordinator
DEFAULT_QUOTA_GROUP_NAMESPACE: Final = "koordinator-system"
DEFAULT_DELAY_EVICT_TIME: Final = 120.0
DEFAULT_REVOKE_POD_INTERVAL: Final = 1.0
DEFAULT_QUOTA_SNAPSHOT_UPDATE_INTERVAL: Final = 120.0


def _default_max() -> dict[str, int]:
    return {
        RESOURCE_CPU: scalar_of(RESOURCE_CPU, str(DEFAULT_QUOTA_GROUP_MAX_VALUE)),
        RESOURCE_MEMORY: DEFAULT_QUOTA_GROUP_MAX_VALUE,
    }


@dataclass(frozen=True)
class ElasticQuotaArgs:
    default_quota_group_max: Mapping[str, int]
    system_quota_group_max: Mapping[str, int]
    quota_group_namespace: str = DEFAULT_QUOTA_GROUP_NAMESPACE
    delay_evict_time: float = DEFAULT_DELAY_EVICT_TIME
    revoke_pod_interval: float = DEFAULT_REVOKE_POD_INTERVAL
    monitor_all_quotas: bool = False
    enable_check_parent_quota: bool = False
    enable_runtime_quota: bool = True
    enable_min_quota_scale: bool = True
    disable_default_quota_preemption: bool = True
    enable_queue_hint: bool = False
    quota_snapshot_update_interval: float = DEFAULT_QUOTA_SNAPSHOT_UPDATE_INTERVAL


def _resource_list(fields: Fields, key: str) -> dict[str, int] | None:
    raw = fields.raw.get(key)
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(fields.at(key), "must be a mapping of resource name to quantity")
    out = {}
    for name, value in raw.items():
        try:
            out[str(name)] = scalar_of(str(name), value)
        except (QuantityError, TypeError) as exc:
            raise ConfigError(f"{fields.at(key)}.{name}", f"not a quantity: {value!r}") from exc
        if out[str(name)] < 0:
            raise ConfigError(f"{fields.at(key)}.{name}", f"must not be negative, got {value!r}")
    return out


def _duration(fields: Fields, key: str, default: float) -> float:
    value = fields.duration(key, default)
    if value < 0:
        raise ConfigError(fields.at(key), f"must not be negative, got {fields.raw.get(key)!r}")
    return value


def parse_args(raw: Mapping[str, Any] | None, path: str) -> ElasticQuotaArgs:
    fields = Fields(raw, path)
    if fields.raw.get("hookPlugins"):
        raise ConfigError(fields.at("hookPlugins"), "quota hook plugins are not supported")
    return ElasticQuotaArgs(
        default_quota_group_max=_resource_list(fields, "defaultQuotaGroupMax") or _default_max(),
        system_quota_group_max=_resource_list(fields, "systemQuotaGroupMax") or _default_max(),
        quota_group_namespace=fields.str("quotaGroupNamespace", DEFAULT_QUOTA_GROUP_NAMESPACE),
        delay_evict_time=_duration(fields, "delayEvictTime", DEFAULT_DELAY_EVICT_TIME),
        revoke_pod_interval=_duration(fields, "revokePodInterval", DEFAULT_REVOKE_POD_INTERVAL),
        monitor_all_quotas=fields.bool("monitorAllQuotas", False),
        enable_check_parent_quota=fields.bool("enableCheckParentQuota", False),
        enable_runtime_quota=fields.bool("enableRuntimeQuota", True),
        enable_min_quota_scale=fields.bool("enableMinQuotaScale", True),
        disable_default_quota_preemption=fields.bool("disableDefaultQuotaPreemption", True),
        enable_queue_hint=fields.bool("enableQueueHint", False),
        quota_snapshot_update_interval=_duration(
            fields, "quotaSnapshotUpdateInterval", DEFAULT_QUOTA_SNAPSHOT_UPDATE_INTERVAL
        ),
    )
