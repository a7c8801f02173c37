"""`pod_classes` (the manager's one read of a pod's classes) answers what `defaulted_qos_class` and
`defaulted_priority_class` answer apart, for every way a pod states or implies its classes."""

import itertools
from typing import Any

import pytest

from policies.apis.constants import PriorityClass, QoSClass
from policies.apis.qos import defaulted_priority_class, defaulted_qos_class, pod_classes

QOS_LABELS = [None, "LS", "BE", "LSE", "LSR", "SYSTEM", "bogus", ""]
PRIORITY_LABELS = [None, "koord-prod", "koord-batch", "koord-mid", "koord-free", "bogus"]
PRIORITIES = [None, 9500, 7500, 5500, 3500, 100, True, "9500"]
RESOURCES: list[dict[str, Any]] = [
    {},
    {"requests": {"cpu": "1", "memory": "1Gi"}},
    {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
]


def make_pod(
    qos: str | None, priority_label: str | None, priority: object, resources: dict[str, Any]
) -> dict[str, Any]:
    labels = {}
    if qos is not None:
        labels["koordinator.sh/qosClass"] = qos
    if priority_label is not None:
        labels["koordinator.sh/priority-class"] = priority_label
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": "p", "labels": labels}, "spec": spec}


@pytest.mark.parametrize(
    "qos, priority_label, priority, resources",
    list(itertools.product(QOS_LABELS, PRIORITY_LABELS, PRIORITIES, RESOURCES)),
)
def test_pod_classes_are_the_defaulted_classes(
    qos: str | None, priority_label: str | None, priority: object, resources: dict[str, Any]
) -> None:
    pod = make_pod(qos, priority_label, priority, resources)
    assert pod_classes(pod) == (defaulted_qos_class(pod), defaulted_priority_class(pod))


def test_an_empty_pod_is_best_effort_hence_batch() -> None:
    assert pod_classes({}) == (QoSClass.BE, PriorityClass.BATCH)
