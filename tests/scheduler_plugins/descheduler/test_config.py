"""DeschedulerConfiguration and LowNodeLoadArgs: defaults, plugin-set merging, field-path errors."""

from __future__ import annotations

from typing import Any

import pytest

from policies.apis.field_errors import ConfigError
from scheduler_plugins.descheduler.framework.config import merge_plugin_set, parse_config
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.plugins.lownodeload.args import AnomalyCondition
from scheduler_plugins.descheduler.registry import in_tree_registry
from tests.scheduler_plugins.descheduler.helpers import FakeEvictions, lownodeload_args

HEADER = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration"}


def parse(**fields: Any) -> Any:
    return parse_config({**HEADER, **fields}, in_tree_registry())


def test_an_empty_configuration_has_one_default_profile_with_the_default_plugins() -> None:
    config = parse()
    assert config.descheduling_interval == 120.0 and not config.dry_run
    assert config.max_per_node is None and config.leader_election.resource_name == "koord-descheduler"
    [profile] = config.profiles
    assert profile.name == "koord-descheduler"
    assert profile.plugins["evict"] == ("MigrationController",) == profile.plugins["filter"]
    assert profile.plugins["balance"] == ()
    assert profile.args["MigrationController"].eviction_policy == "Eviction"


def test_enabled_plugins_get_defaulted_args() -> None:
    [profile] = parse(profiles=[{"plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}}}]).profiles
    args = profile.args["LowNodeLoad"]
    assert args.node_fit and args.node_metric_expiration_seconds == 180 and args.detector_cache_timeout == 300
    [pool] = args.node_pools
    assert pool.name == "__default_node_pool__" and pool.anomaly_condition == AnomalyCondition(60, 5, 3)


@pytest.mark.parametrize(
    ("defaults", "enabled", "disabled", "expected"),
    [
        (("M",), [], [], ("M",)),
        (("M",), ["X"], [], ("M", "X")),
        (("M",), ["X", "M"], [], ("M", "X")),
        (("M",), ["X"], ["*"], ("X",)),
        (("M",), ["X"], ["M"], ("X",)),
        (("M", "N"), ["N"], ["M"], ("N",)),
    ],
)
def test_plugin_set_merging(
    defaults: tuple[str, ...], enabled: list[str], disabled: list[str], expected: tuple[str, ...]
) -> None:
    assert merge_plugin_set(defaults, enabled, disabled) == expected


def test_default_evictor_can_replace_the_migration_controller() -> None:
    [profile] = parse(
        profiles=[{"plugins": {"evict": {"enabled": [{"name": "DefaultEvictor"}], "disabled": [{"name": "*"}]}}}]
    ).profiles
    assert profile.plugins["evict"] == ("DefaultEvictor",)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"apiVersion": "descheduler/v1alpha1"}, "apiVersion"),
        ({"deschedulingInterval": "soon"}, "deschedulingInterval"),
        ({"maxNoOfPodsToEvictPerNode": -1}, "maxNoOfPodsToEvictPerNode"),
        ({"dryrun": True}, "dryrun"),
        ({"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "nodeSelector"),
        (
            {"profiles": [{"plugins": {"balance": {"enabled": [{"name": "LowNodeLoads"}]}}}]},
            "profiles[0].plugins.balance.enabled[0].name",
        ),
        ({"profiles": [{"name": "a"}, {"name": "a"}]}, "profiles[1].name"),
        (
            {"profiles": [{"pluginConfig": [{"name": "LowNodeLoad", "args": {"kind": "OtherArgs"}}]}]},
            "profiles[0].pluginConfig[0].args.kind",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "LowNodeLoad", "args": {"lowThresholds": {"cpu": 120}}}]}]},
            "profiles[0].pluginConfig[0].args.lowThresholds.cpu",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "LowNodeLoad",
                                "args": {"lowThresholds": {"cpu": 80}, "highThresholds": {"cpu": 70}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.lowThresholds.cpu",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "LowNodeLoad",
                                "args": {"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.evictableNamespaces",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {"name": "LowNodeLoad", "args": {"nodePools": [{"lowThresholds": {"cpu": "x"}}]}}
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.nodePools[0].lowThresholds.cpu",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"evictionPolicy": "Kill"}}]}]},
            "profiles[0].pluginConfig[0].args.evictionPolicy",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"maxConcurrentReconciles": 0}}]}]},
            "profiles[0].pluginConfig[0].args.maxConcurrentReconciles",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "MigrationController", "args": {"maxConcurrentReconciles": 1000}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.maxConcurrentReconciles",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"evictQPS": "fast"}}]}]},
            "profiles[0].pluginConfig[0].args.evictQPS",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"evictBurst": 0}}]}]},
            "profiles[0].pluginConfig[0].args.evictBurst",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"nodeFit": True}}]}]},
            "profiles[0].pluginConfig[0].args.nodeFit",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"nodeSelector": "pool=a"}}]}]},
            "profiles[0].pluginConfig[0].args.nodeSelector",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "MigrationController", "args": {"arbitrationArgs": {"interval": "1s"}}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.arbitrationArgs.interval",
        ),
        (
            {
                "profiles": [
                    {"pluginConfig": [{"name": "MigrationController", "args": {"arbitrationArgs": {"enabled": False}}}]}
                ]
            },
            "profiles[0].pluginConfig[0].args.arbitrationArgs.enabled",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"arbitrationInterval": "1s"}}]}]},
            "profiles[0].pluginConfig[0].args.arbitrationInterval",
        ),
        (
            {
                "profiles": [
                    {
                        "pluginConfig": [
                            {
                                "name": "MigrationController",
                                "args": {"defaultDeleteOptions": {"propagationPolicy": "Foreground"}},
                            }
                        ]
                    }
                ]
            },
            "profiles[0].pluginConfig[0].args.defaultDeleteOptions.propagationPolicy",
        ),
        (
            {"profiles": [{"pluginConfig": [{"name": "MigrationController", "args": {"schedulerNames": [""]}}]}]},
            "profiles[0].pluginConfig[0].args.schedulerNames",
        ),
        ({"leaderElection": {"resourceLock": "configmapsleases"}}, "leaderElection.resourceLock"),
    ],
)
def test_errors_name_their_field(fields: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(**fields)
    assert caught.value.path == path


def test_resource_weights_are_completed_from_the_thresholds() -> None:
    args = lownodeload_args(
        lowThresholds={"cpu": 10, "pods": 10},
        highThresholds={"cpu": 20, "pods": 20},
        resourceWeights={"cpu": 3, "memory": 0},
    )
    assert dict(args.node_pools[0].resource_weights) == {"cpu": 3, "memory": 1, "pods": 1}


def test_an_anomaly_condition_given_defaults_only_the_missing_count() -> None:
    assert lownodeload_args(anomalyCondition={"consecutiveNormalities": 7}).node_pools[
        0
    ].anomaly_condition == AnomalyCondition(0, 5, 7)
    assert lownodeload_args(anomalyCondition={"consecutiveAbnormalities": 2}).node_pools[
        0
    ].anomaly_condition == AnomalyCondition(0, 2, 3)
    assert lownodeload_args(anomalyCondition={}).node_pools[0].anomaly_condition == AnomalyCondition(0, 5, 0)


def test_explicit_pools_inherit_what_they_leave_out_and_follow_the_default_pool() -> None:
    args = lownodeload_args(
        lowThresholds={"cpu": 30},
        highThresholds={"cpu": 60},
        anomalyCondition={"consecutiveAbnormalities": 2, "consecutiveNormalities": 4},
        nodePools=[
            {
                "nodeSelector": {"matchLabels": {"pool": "a"}},
                "highThresholds": {"cpu": 70},
                "anomalyCondition": {"consecutiveNormalities": 9},
            }
        ],
    )
    default, pool = args.node_pools
    assert default.name == "__default_node_pool__" and pool.name == "0"
    assert (dict(pool.low), dict(pool.high)) == ({"cpu": 30}, {"cpu": 70})
    assert pool.anomaly_condition == AnomalyCondition(0, 2, 9)


def test_a_plugin_enabled_at_a_point_it_does_not_extend_is_refused_when_the_profiles_are_built() -> None:
    config = parse(profiles=[{"plugins": {"deschedule": {"enabled": [{"name": "LowNodeLoad"}]}}}])
    with pytest.raises(ConfigError) as caught:
        Descheduler(config, in_tree_registry(), lambda: 0.0, FakeEvictions())
    assert caught.value.path == "profiles[0].plugins.deschedule.enabled[0].name"
