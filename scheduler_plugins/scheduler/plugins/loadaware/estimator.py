"""defaultEstimator (`pkg/scheduler/plugins/loadaware/estimator/default_estimator.go`): how much an
incoming or recently placed pod is expected to use.

Estimates are vectors aligned with the plugin's sorted resource list, in scheduler units
(millicores for cpu; batch-cpu is already millicores and read as a plain value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.apis.constants import (
    ANNOTATION_LOAD_SCALING_FACTORS,
    ANNOTATION_LOAD_SECONDS_AFTER_INITIALIZED,
    ANNOTATION_LOAD_SECONDS_AFTER_SCHEDULED,
    ANNOTATION_RAW_ALLOCATABLE,
    BATCH_CPU,
    BATCH_MEMORY,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
)
from policies.apis.objects import annotations_of
from policies.apis.qos import translate_resource_name
from policies.apis.quantity import resource_list
from scheduler_plugins.scheduler.podinfo import PodInfo

DEFAULT_MILLI_CPU = 250
DEFAULT_MEMORY = 200 * 1024 * 1024


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def estimate_resource(pod: PodInfo, resource: str, factor: int) -> int:
    real = translate_resource_name(pod.priority_class, resource)
    request = pod.requests.get(real, 0) if real else 0
    limit = pod.limits.get(real, 0) if real else 0
    quantity = limit if limit > request else request
    if quantity == 0:
        if real in (RESOURCE_CPU, BATCH_CPU):
            return DEFAULT_MILLI_CPU
        if real in (RESOURCE_MEMORY, BATCH_MEMORY):
            return DEFAULT_MEMORY
        return 0  # NOTE: mid-cpu / mid-memory get 0, not the defaults
    estimate = go_round(quantity * factor / 100)
    if limit > 0 and estimate > limit:
        estimate = limit
    return estimate


def scaling_factors(pod: PodInfo, defaults: Mapping[str, int], allow_customize: bool) -> Mapping[str, int]:
    if not allow_customize:
        return defaults
    raw = pod.annotations.get(ANNOTATION_LOAD_SCALING_FACTORS)
    if not raw:
        return defaults
    try:
        custom = json.loads(raw)
    except ValueError:
        return defaults
    if not isinstance(custom, dict):
        return defaults
    merged = dict(defaults)
    merged.update({k: int(v) for k, v in custom.items() if isinstance(v, (int, float))})
    return merged


def estimate_pod(pod: PodInfo, resources: Sequence[str], factors: Mapping[str, int]) -> list[int]:
    return [estimate_resource(pod, name, factors[name]) if name in factors else 0 for name in resources]


def estimate_node(node_obj: Mapping[str, Any], allocatable: Mapping[str, int], resources: Sequence[str]) -> list[int]:
    """Allocatable, overlaid per resource by the raw-allocatable annotation when present."""
    raw = annotations_of(node_obj).get(ANNOTATION_RAW_ALLOCATABLE)
    overlay: Mapping[str, int] = {}
    if raw:
        try:
            overlay = resource_list(json.loads(raw))
        except (ValueError, TypeError, AttributeError):
            overlay = {}
    return [overlay.get(name, allocatable.get(name, 0)) for name in resources]


@dataclass(frozen=True)
class EstimationWindows:
    after_pod_scheduled: int
    after_initialized: int


def estimation_windows(
    pod: PodInfo, after_scheduled: int | None, after_initialized: int | None, allow_customize: bool
) -> EstimationWindows:
    scheduled, initialized = after_scheduled or 0, after_initialized or 0
    if allow_customize:
        scheduled = _int_annotation(pod, ANNOTATION_LOAD_SECONDS_AFTER_SCHEDULED, scheduled)
        initialized = _int_annotation(pod, ANNOTATION_LOAD_SECONDS_AFTER_INITIALIZED, initialized)
    return EstimationWindows(scheduled, initialized)


def _int_annotation(pod: PodInfo, key: str, default: int) -> int:
    try:
        return int(pod.annotations[key])
    except (KeyError, ValueError):
        return default
