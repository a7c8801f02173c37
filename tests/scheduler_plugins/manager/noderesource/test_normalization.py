"""CPU normalization and resource amplification (`cpunormalization/plugin_test.go`,
`resourceamplification/plugin_test.go`): the ratio annotations, batch-cpu scaled by the ratio."""

from __future__ import annotations

import json

import pytest

from policies.apis.constants import BATCH_CPU
from policies.apis.slo_config.cpu_normalization import load_normalization
from policies.apis.slo_config.resource_amplification import load_amplification
from scheduler_plugins.manager.noderesource.plugins.cpunormalization.normalization import normalization_ratio
from scheduler_plugins.manager.noderesource.plugins.resourceamplification.amplification import amplification_ratio
from tests.scheduler_plugins.manager.noderesource.builders import config, default_metric, node, nrt, run

RATIO = "node.koordinator.sh/cpu-normalization-ratio"
AMPLIFICATION = "node.koordinator.sh/resource-amplification-ratio"
BASIC_INFO = "node.koordinator.sh/cpu-basic-info"
MODEL = {
    "enable": True,
    "ratioModel": {
        "Intel Xeon": {
            "baseRatio": 1.5,
            "hyperThreadEnabledRatio": 1.0,
            "turboEnabledRatio": 1.8,
            "hyperThreadTurboEnabledRatio": 1.2,
        }
    },
}


def info(ht: bool, turbo: bool, model: str = "Intel Xeon") -> dict[str, str]:
    return {BASIC_INFO: json.dumps({"cpuModel": model, "hyperThreadEnabled": ht, "turboEnabled": turbo})}


def test_disabled_writes_one() -> None:
    assert normalization_ratio(load_normalization(None), {}, None) == "1.00"


@pytest.mark.parametrize(
    ("ht", "turbo", "expected"),
    [(False, False, "1.50"), (True, False, "1.00"), (False, True, "1.80"), (True, True, "1.20")],
)
def test_model_ratio_by_hyper_threading_and_turbo(ht: bool, turbo: bool, expected: str) -> None:
    assert normalization_ratio(load_normalization(json.dumps(MODEL)), {}, info(ht, turbo)) == expected


def test_default_ratio_bounds_and_failures() -> None:
    cfg = load_normalization(json.dumps({**MODEL, "defaultRatio": 1.1}))
    assert normalization_ratio(cfg, {}, info(False, False, "unknown")) == "1.10"
    assert normalization_ratio(cfg, {}, None) is None  # no NodeResourceTopology: no result this round
    too_big = load_normalization(json.dumps({"enable": True, "defaultRatio": 6}))
    assert normalization_ratio(too_big, {}, info(False, False, "unknown")) is None
    # the node label overrides the strategy (Go's ParseBool spellings)
    assert normalization_ratio(cfg, {"node.koordinator.sh/cpu-normalization-enabled": "F"}, None) == "1.00"
    assert normalization_ratio(cfg, {"node.koordinator.sh/cpu-normalization-enabled": "maybe"}, None) is None


def test_ratio_scales_batch_cpu_on_the_node_and_the_zones() -> None:
    cfg = config(cpu_normalization_config=MODEL)
    topology = nrt(("node-0", "100", "120G"))
    topology["metadata"]["annotations"] = info(False, False)
    plan = run(cfg, node(), the_metric=default_metric(), nrt=topology)
    assert plan.allocatable[BATCH_CPU] == "37500"  # 25000 × 1.5
    assert plan.zones is not None and plan.zones["node-0"][BATCH_CPU] == "37500"
    assert plan.prepared is not None and plan.prepared["annotations"][RATIO] == "1.50"


def test_amplification() -> None:
    """ "normalization alone yields cpu 1.50"; configured ratios when enabled; < 1 refused; none removes."""
    off = load_amplification(None)
    assert amplification_ratio(off, {}, "1.50") == '{"cpu":1.50}'
    assert amplification_ratio(off, {}, "1.00") is None
    on = load_amplification(json.dumps({"enable": True, "resourceAmplificationRatio": {"cpu": 1.2, "memory": 1.1}}))
    assert amplification_ratio(on, {}, "1.50") == '{"cpu":1.80,"memory":1.10}'
    low = load_amplification(json.dumps({"enable": True, "resourceAmplificationRatio": {"memory": 0.5}}))
    assert amplification_ratio(low, {}, None) is None


def test_a_stale_amplification_annotation_is_removed_and_written() -> None:
    the_node = node(annotations={AMPLIFICATION: '{"cpu":2.00}', RATIO: "1.00"})
    plan = run(config(), the_node, the_metric=default_metric(), last_write="2026-01-01T00:09:50Z")
    assert plan.prepared is not None and AMPLIFICATION not in plan.prepared["annotations"]
    assert plan.decision is not None and plan.decision.meta
