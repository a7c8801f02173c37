"""The test builders live in the test kit plugin authors import (`colocate.testing.builders`); this
module keeps the suite's imports short. One copy: nothing is defined here."""

from colocate.testing.builders import (
    KOORD_PRIORITY_CLASSES,
    METRIC_TIME,
    NOW,
    container_hash,
    make_container,
    make_metric,
    make_namespace,
    make_node,
    make_node_slo,
    make_pod,
    make_priority_class,
    make_profile,
    make_quota,
    make_reservation,
    make_slo_config,
    pod_metric,
    pod_uid,
)

__all__ = [
    "KOORD_PRIORITY_CLASSES",
    "METRIC_TIME",
    "NOW",
    "container_hash",
    "make_container",
    "make_metric",
    "make_namespace",
    "make_node",
    "make_node_slo",
    "make_pod",
    "make_priority_class",
    "make_profile",
    "make_quota",
    "make_reservation",
    "make_slo_config",
    "pod_metric",
    "pod_uid",
]
