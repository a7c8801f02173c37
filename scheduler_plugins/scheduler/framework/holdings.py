"""The cluster events of a plugin that keeps what each pod holds on its node (its CPUs, its cards),
read from the pod's annotations: an Available reservation's reserve pod holds the same way, for
every pod but its owners, and NodeMetrics are none of its business."""

from __future__ import annotations

from typing import Any, Protocol

from scheduler_plugins.scheduler.podinfo import PodInfo


class _Touchable(Protocol):
    def touch(self, node_name: str) -> None: ...


class _KeepsHoldings(Protocol):
    @property
    def cluster(self) -> _Touchable: ...

    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None: ...

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None: ...


class ReservationsHoldLikePods:
    """The `ClusterListener`/`ReservationListener` hooks such a plugin shares; it writes
    `on_pod_assigned` and `on_pod_deleted`, and has the cluster view as `cluster`."""

    def on_node_metric(self, node_name: str, metric: dict[str, Any] | None) -> None:
        """NodeMetrics are none of this plugin's business."""

    def on_reservation_held(self: _KeepsHoldings, reserve_pod: PodInfo, node_name: str) -> None:
        """An Available reservation's holdings (its reserve pod's annotations) are taken for every other pod."""
        self.on_pod_assigned(reserve_pod, node_name)
        self.cluster.touch(node_name)

    def on_reservation_released(self: _KeepsHoldings, reserve_pod: PodInfo, node_name: str) -> None:
        self.on_pod_deleted(reserve_pod, node_name)
        self.cluster.touch(node_name)
