"""A profile's `Framework` over the scheduler's cluster state: what the simulator, `explain` and the
extender build before they schedule.

It lives above both the framework and `cluster` (the framework knows the cluster state only as
`ClusterView`): the in-memory API client, used unless a real one is given, is the cluster's.
"""

from __future__ import annotations

from policies.apis.feature_gates import FeatureGates
from scheduler_plugins.clock import Clock, system_clock
from scheduler_plugins.scheduler.cluster.client import InMemoryClient
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import SchedulerConfig
from scheduler_plugins.scheduler.framework.features import scheduler_gates
from scheduler_plugins.scheduler.framework.handle import ClusterClient, Handle
from scheduler_plugins.scheduler.framework.registry import Registry
from scheduler_plugins.scheduler.framework.runtime import Framework


def build_framework(
    config: SchedulerConfig,
    registry: Registry,
    cluster: ClusterState,
    clock: Clock = system_clock,
    client: ClusterClient | None = None,
    scheduler_name: str | None = None,
    features: FeatureGates | None = None,
) -> Framework:
    """The framework of the profile for `scheduler_name` (the first profile when None)."""
    handle = Handle(
        cluster=cluster,
        client=client or InMemoryClient(cluster, clock),
        clock=clock,
        features=features or scheduler_gates(),
    )
    return Framework(config.profile(scheduler_name), registry, handle)
