"""KubeSchedulerConfiguration loading: merging with defaults, weights, args defaults and errors."""

import pytest

from policies.apis.field_errors import ConfigError
from scheduler_plugins.scheduler.framework.config import load_config, parse_config
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.support.paths import REPO
from tests.support.scheduling import make_config


def names(profile, point):
    return [(r.name, r.weight) for r in profile.enabled(point)]


def test_no_file_gives_the_default_profile():
    profile = load_config(None, in_tree_registry()).profile()
    assert profile.scheduler_name == "koord-scheduler"
    assert names(profile, "score") == [("LoadAwareScheduling", 1), ("NodeResourcesFit", 1), ("Reservation", 5000)]
    assert names(profile, "queueSort") == [("PrioritySort", 1)]


def test_enabled_plugins_merge_with_defaults_and_weight_zero_means_one():
    profile = make_config(
        plugins={
            "score": {
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 3},
                    {"name": "ScarceResourceAvoidance"},
                    {"name": "NodeResourcesFitPlus", "weight": 0},
                ],
                "disabled": [{"name": "LoadAwareScheduling"}],
            },
        }
    ).profile()
    assert names(profile, "score") == [
        ("NodeResourcesFit", 3),
        ("Reservation", 5000),
        ("ScarceResourceAvoidance", 1),
        ("NodeResourcesFitPlus", 1),
    ]


def test_star_disables_every_default_of_a_point():
    profile = make_config(
        plugins={"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "LoadAwareScheduling"}]}}
    ).profile()
    assert names(profile, "filter") == [("LoadAwareScheduling", 1)]


def test_loadaware_defaulting_quirks():
    cfg = make_config(
        {
            "LoadAwareScheduling": {
                "dominantResourceWeight": 1,
                "usageThresholds": {"memory": 0},
                "estimatedScalingFactors": {"memory": 50},
            }
        }
    )
    args = cfg.profile().args["LoadAwareScheduling"]
    assert args.resource_weights == {}  # not defaulted: dominant weight is set
    assert args.usage_thresholds == {"memory": 0}  # explicit, not empty: no default
    assert args.estimated_scaling_factors == {"memory": 50, "cpu": 85}


def test_args_may_carry_apiversion_and_kind():
    cfg = make_config(
        {
            "LoadAwareScheduling": {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "LoadAwareSchedulingArgs",
                "nodeMetricExpirationSeconds": 60,
            }
        }
    )
    assert cfg.profile().args["LoadAwareScheduling"].node_metric_expiration_seconds == 60


@pytest.mark.parametrize(
    "doc, path",
    [
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "LoadAwareScheduling", "args": {"usageThresholds": {"cpu": 101}}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.usageThresholds.cpu",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "LoadAwareScheduling", "args": {"nodeMetricExpirationSeconds": 0}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.nodeMetricExpirationSeconds",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "LoadAwareScheduling", "args": {"resourceWeights": {"cpu": 0}}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.resourceWeights.cpu",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "LoadAwareScheduling", "args": {"resourceWeights": {"nvidia.com/gpu": 1}}}
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.resourceWeights.nvidia.com/gpu",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "LoadAwareScheduling", "args": {"aggregated": {"usageAggregationType": "p42"}}}
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.aggregated.usageAggregationType",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "LoadAwareScheduling", "args": {"filterExpiredNodeMetrics": "yes"}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.filterExpiredNodeMetrics",
        ),
        (
            {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}]},
            "profiles[0].plugins.filter.enabled[0].name",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "NodeNUMAResource", "args": {"defaultCPUBindPolicy": "Full"}}]}]},
            "profiles[0].pluginConfig[0].args.defaultCPUBindPolicy",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeNUMAResource",
                                "args": {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "ElasticQuota", "args": {"defaultQuotaGroupMax": {"cpu": "-1"}}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.defaultQuotaGroupMax.cpu",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "ElasticQuota", "args": {"delayEvictTime": "-5s"}}]}]},
            "profiles[0].pluginConfig[0].args.delayEvictTime",
        ),
        (
            {"profiles": [{"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": -1}]}}}]},
            "profiles[0].plugins.score.enabled[0].weight",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "NetworkTraffic", "args": {"timeRangeInMinutes": 0}}]}]},
            "profiles[0].pluginConfig[0].args.timeRangeInMinutes",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "NodeResourcesFitPlus",
                                "args": {"resources": {"cpu": {"type": "Most", "weight": 1}}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.resources.cpu.type",
        ),
        ({"kind": "Nope"}, "kind"),
        ({"percentageOfNodesToScore": 200}, "percentageOfNodesToScore"),
        ({"profiles": [{"percentageOfNodesToScore": -1}]}, "profiles[0].percentageOfNodesToScore"),
    ],
)
def test_errors_name_the_field(doc, path):
    with pytest.raises(ConfigError) as info:
        parse_config(doc, in_tree_registry())
    assert info.value.path == path
    assert str(info.value).startswith(path + ": ")


def test_the_manifest_configurations_parse(tmp_path):
    root = REPO / "manifests" / "scheduler"
    configs = sorted(root.glob("*config*.yaml"))
    assert configs, "no scheduler configuration manifests found"
    for path in configs:
        import yaml

        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for doc in docs:
            if doc.get("kind") == "KubeSchedulerConfiguration" and "extender" not in path.name:
                parse_config(doc, in_tree_registry())


@pytest.mark.parametrize(
    "profile, message",
    [
        (
            {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}},
            "profiles[0].plugins.score.enabled[0].name: unknown plugin 'Nope' (registered: ",
        ),
        (
            {"plugins": {"score": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]}}},
            "profiles[0].plugins.score.enabled[1].name: plugin 'NodeResourcesFit' enabled twice",
        ),
        ({"pluginConfig": [{"name": "Nope", "args": {}}]}, "profiles[0].pluginConfig[0].name: unknown plugin 'Nope'"),
        (
            {"pluginConfig": [{"name": "NodeResourcesFit", "args": {}}, {"name": "NodeResourcesFit", "args": {}}]},
            "profiles[0].pluginConfig[1].name: duplicate pluginConfig for 'NodeResourcesFit'",
        ),
    ],
)
def test_a_plugin_is_named_as_registered_and_once(profile, message):
    with pytest.raises(ConfigError) as info:
        parse_config({"profiles": [{"schedulerName": "koord-scheduler", **profile}]}, in_tree_registry())
    assert str(info.value).startswith(message)
    assert message.endswith("(registered: ") or str(info.value) == message
