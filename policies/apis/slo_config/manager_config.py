"""The whole slo-controller-config as the manager holds it, and how a new ConfigMap replaces it.

`pkg/slo-controller/config/colocation_cm_event_handler.go` (colocation), `nodeslo_cm_event_handler.go`
(NodeSLO documents), `cpunormalization/configmap_event_handler.go`: a document that fails to load
keeps the previous one, and the failure is reported (an Event and a metric, by the caller). Before
any colocation config ever loaded, a failure leaves the config *unavailable*: the manager then
writes no node at all, never a zero or a garbage allocatable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from policies.apis.constants import (
    COLOCATION_CONFIG_KEY,
    CPU_NORMALIZATION_CONFIG_KEY,
    RESOURCE_AMPLIFICATION_CONFIG_KEY,
)
from policies.apis.slo_config.colocation import DEFAULT_CONFIG, ColocationConfig, ColocationDecodeError, load_colocation
from policies.apis.slo_config.cpu_normalization import NormalizationConfig, NormalizationDecodeError, load_normalization
from policies.apis.slo_config.nodeslo_config import SLOConfig, default_slo_config, load_slo_config
from policies.apis.slo_config.resource_amplification import (
    AmplificationConfig,
    AmplificationDecodeError,
    load_amplification,
)

REASON_COLOCATION_FAILED: Final = "ColocationCfgUnmarshalFailed"
REASON_SLO_FAILED: Final = "SLOCfgUnmarshalFailed"
REASON_NORMALIZATION_FAILED: Final = "CPUNormalizationCfgUnmarshalFailed"
REASON_AMPLIFICATION_FAILED: Final = "ResourceAmplificationCfgUnmarshalFailed"


@dataclass(frozen=True, slots=True)
class ManagerConfig:
    """`available` False: no colocation config ever loaded (no node is written);
    `error` True: the last colocation load failed or there was no ConfigMap (NodeMetrics keep their spec)."""

    colocation: ColocationConfig = DEFAULT_CONFIG
    slo: SLOConfig = field(default_factory=default_slo_config)
    normalization: NormalizationConfig = NormalizationConfig()
    amplification: AmplificationConfig = AmplificationConfig()
    available: bool = True
    error: bool = False


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """A document that failed to load: the Event reason Koordinator emits and a message."""

    reason: str
    message: str


def load_manager_config(
    configmap: Mapping[str, Any] | None, previous: ManagerConfig | None = None
) -> tuple[ManagerConfig, list[ConfigIssue]]:
    """The config after seeing `configmap` (None: there is none). `previous` None: the manager just started."""
    if configmap is None:
        if previous is not None:
            return previous, []  # a deleted ConfigMap changes nothing until restart
        return ManagerConfig(error=True), []
    raw = configmap.get("data")
    data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    issues: list[ConfigIssue] = []
    text = data.get(COLOCATION_CONFIG_KEY)
    try:
        colocation = load_colocation(text if isinstance(text, str) else None)
        available, error = True, False
    except ColocationDecodeError as exc:
        issues.append(ConfigIssue(REASON_COLOCATION_FAILED, f"failed to unmarshal colocation config, err: {exc}"))
        colocation = previous.colocation if previous is not None else DEFAULT_CONFIG
        available, error = (previous.available if previous is not None else False), True
    slo, slo_errors = load_slo_config(data, previous.slo if previous is not None else None)
    issues.extend(ConfigIssue(REASON_SLO_FAILED, message) for message in slo_errors)
    text = data.get(CPU_NORMALIZATION_CONFIG_KEY)
    try:
        normalization = load_normalization(text if isinstance(text, str) else None)
    except NormalizationDecodeError as exc:
        issues.append(
            ConfigIssue(REASON_NORMALIZATION_FAILED, f"failed to unmarshal cpu normalization config, err: {exc}")
        )
        normalization = previous.normalization if previous is not None else NormalizationConfig()
    text = data.get(RESOURCE_AMPLIFICATION_CONFIG_KEY)
    try:
        amplification = load_amplification(text if isinstance(text, str) else None)
    except AmplificationDecodeError as exc:
        issues.append(ConfigIssue(REASON_AMPLIFICATION_FAILED, f"failed to unmarshal amplification config, err: {exc}"))
        amplification = previous.amplification if previous is not None else AmplificationConfig()
    config = ManagerConfig(colocation, slo, normalization, amplification, available, error)
    return config, issues


def with_error(config: ManagerConfig, error: bool) -> ManagerConfig:
    return replace(config, error=error)
