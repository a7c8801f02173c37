"""NodeSLO rendering (`pkg/slo-controller/nodeslo/resource_strategy_test.go`, `nodeslo_controller_test.go`)."""

from __future__ import annotations

import json
from typing import Any

from policies.apis.slo_config.nodeslo_config import default_slo_config, load_slo_config
from scheduler_plugins.manager.noderesource.nodeslo_spec import render_nodeslo_spec


def render(
    data: dict[str, Any],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    previous: Any = None,
) -> dict[str, Any]:
    config, _ = load_slo_config({k: json.dumps(v) if not isinstance(v, str) else v for k, v in data.items()}, previous)
    return render_nodeslo_spec(config, labels or {}, annotations or {})


def test_spec_without_configmap() -> None:
    """The defaults: threshold, an empty resourceQOSStrategy (not defaulted per class), CPU burst,
    system, empty extensions, no hostApplications."""
    assert render_nodeslo_spec(default_slo_config(), {}, {}) == {
        "resourceUsedThresholdWithBE": {
            "enable": False,
            "cpuSuppressThresholdPercent": 65,
            "cpuSuppressPolicy": "cpuset",
            "memoryEvictThresholdPercent": 70,
            "cpuEvictPolicy": "evictByRealLimit",
        },
        "resourceQOSStrategy": {},
        "cpuBurstStrategy": {
            "policy": "none",
            "cpuBurstPercent": 1000,
            "cfsQuotaBurstPercent": 300,
            "cfsQuotaBurstPeriodSeconds": -1,
            "sharePoolThresholdPercent": 50,
        },
        "systemStrategy": {"totalNetworkBandwidth": "0"},
        "extensions": {},
    }


def test_threshold_node_strategy() -> None:
    """Test_getResourceThresholdSpec "get node config correctly"."""
    data = {
        "resource-threshold-config": {
            "clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 60},
            "nodeStrategies": [{"nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "cpuSuppressThresholdPercent": 40}],
        }
    }
    on = render(data, {"xxx": "yyy"})["resourceUsedThresholdWithBE"]
    assert on == {
        "enable": True,
        "cpuSuppressThresholdPercent": 40,
        "cpuSuppressPolicy": "cpuset",
        "memoryEvictThresholdPercent": 70,
        "cpuEvictPolicy": "evictByRealLimit",
    }
    assert render(data)["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] == 60


def test_first_matching_node_strategy_wins() -> None:
    """Test_getResourceQOSSpec "get firstly-matched node config"."""
    data = {
        "resource-qos-config": {
            "clusterStrategy": {"lsClass": {"cpuQOS": {"enable": False}}},
            "nodeStrategies": [
                {
                    "nodeSelector": {"matchLabels": {"a": "b"}},
                    "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
                },
                {
                    "nodeSelector": {"matchLabels": {"a": "b"}},
                    "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 1}},
                },
            ],
        }
    }
    assert render(data, {"a": "b"})["resourceQOSStrategy"] == {
        "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}}
    }


def test_unparsable_key_keeps_previous_value() -> None:
    """Test_calculateResourceThresholdCfgMerged "throw error for configmap unmarshal failed": the
    document keeps its previous value; the other documents still load."""
    first, _ = load_slo_config({"cpu-burst-config": json.dumps({"clusterStrategy": {"policy": "auto"}})})
    config, errors = load_slo_config(
        {"cpu-burst-config": "{bad", "system-config": json.dumps({"clusterStrategy": {"minFreeKbytesFactor": 100}})},
        first,
    )
    assert errors and config.strategies["cpu-burst-config"].cluster["policy"] == "auto"
    assert config.strategies["system-config"].cluster["minFreeKbytesFactor"] == 100


def test_system_node_strategy_without_bandwidth_resets_it() -> None:
    """Q15: totalNetworkBandwidth is not a pointer in Go, so a node strategy that omits it gets "0"."""
    data = {
        "system-config": {
            "clusterStrategy": {"totalNetworkBandwidth": "10G"},
            "nodeStrategies": [{"nodeSelector": {"matchLabels": {"a": "b"}}, "minFreeKbytesFactor": 10}],
        }
    }
    assert render(data)["systemStrategy"]["totalNetworkBandwidth"] == "10G"
    assert render(data, {"a": "b"})["systemStrategy"]["totalNetworkBandwidth"] == "0"


def test_network_bandwidth_annotation() -> None:
    """Test_getSystemConfigSpec "use node-wise bandwidth config while use cluster strategy"; an
    unparsable annotation drops systemStrategy."""
    data = {"system-config": {"clusterStrategy": {"totalNetworkBandwidth": "10G"}}}
    key = "node.koordinator.sh/network-bandwidth"
    assert render(data, annotations={key: "1000M"})["systemStrategy"]["totalNetworkBandwidth"] == "1G"
    assert "systemStrategy" not in render(data, annotations={key: "fast"})


def test_host_applications_node_entry_replaces_the_list() -> None:
    data = {
        "host-application-config": {
            "applications": [{"name": "a"}],
            "nodeConfigs": [{"nodeSelector": {"matchLabels": {"x": "y"}}, "applications": [{"name": "b"}]}],
        }
    }
    assert render(data)["hostApplications"] == [{"name": "a"}]
    assert render(data, {"x": "y"})["hostApplications"] == [{"name": "b"}]
