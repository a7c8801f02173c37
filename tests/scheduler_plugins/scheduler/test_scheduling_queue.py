"""kube-scheduler's scheduling queue (pkg/scheduler/internal/queue/scheduling_queue.go,
TestPriorityQueue_MoveAllToActiveOrBackoffQueue, TestPodTimestamp / flushUnschedulablePodsLeftover,
TestBackOffFlow): a pod a cycle found unschedulable waits until an event its rejecting plugins
registered, or the 5-minute flush, then out its backoff."""

from __future__ import annotations

from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.scheduler.framework.queue import (
    ADD,
    DELETE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_OTHER,
    SchedulingQueue,
)
from scheduler_plugins.scheduler.framework.status import Code, Status

FIT = Status(Code.Unschedulable, ("Insufficient cpu",), "NodeResourcesFit")
LOAD = Status(Code.Unschedulable, ("node(s) usage exceed threshold",), "LoadAwareScheduling")


def _rejected(queue: SchedulingQueue, key: str, by: Status, now: float) -> None:
    queue.begin_cycle()
    queue.attempted(key, Status(Code.Unschedulable), {"n1": by, "n2": by}, key, now)


def test_a_new_pod_is_ready_and_a_rejected_one_waits_for_an_event_it_registered() -> None:
    queue = SchedulingQueue()
    assert queue.ready("default/p", 0.0)
    _rejected(queue, "default/p", FIT, 0.0)
    assert not queue.ready("default/p", 60.0)
    queue.event((NODE_METRIC_KIND, UPDATE_OTHER))  # NodeResourcesFit registers no NodeMetric event
    assert not queue.ready("default/p", 120.0)
    queue.event(("Pod", ADD))  # nor an assigned pod's add
    assert not queue.ready("default/p", 180.0)
    queue.event(("Pod", DELETE))
    assert queue.ready("default/p", 240.0)


def test_a_node_allocatable_change_moves_what_fit_rejected_but_not_load_aware() -> None:
    queue = SchedulingQueue()
    _rejected(queue, "default/fit", FIT, 0.0)
    _rejected(queue, "default/load", LOAD, 0.0)
    queue.event(("Node", UPDATE_NODE_ALLOCATABLE))
    assert queue.ready("default/fit", 60.0)
    assert not queue.ready("default/load", 60.0)
    queue.event((NODE_METRIC_KIND, UPDATE_OTHER))
    assert queue.ready("default/load", 60.0)


def test_a_pod_moved_back_waits_out_its_backoff_doubling_to_ten_seconds() -> None:
    queue = SchedulingQueue()
    for attempt, backoff in enumerate((1.0, 2.0, 4.0, 8.0, 10.0, 10.0), start=1):
        now = attempt * 100.0
        _rejected(queue, "default/p", LOAD, now)
        queue.event((NODE_METRIC_KIND, UPDATE_OTHER))
        assert not queue.ready("default/p", now + backoff - 0.5)
        assert queue.ready("default/p", now + backoff)


def test_the_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    queue = SchedulingQueue()
    _rejected(queue, "default/p", FIT, 0.0)
    assert not queue.ready("default/p", 300.0)
    assert queue.ready("default/p", 301.0)


def test_an_event_while_its_cycle_ran_sends_the_pod_to_backoff_not_to_wait() -> None:
    queue = SchedulingQueue()
    queue.begin_cycle()
    queue.event(("Pod", ADD))  # another pod bound while this one was being scheduled
    queue.attempted("default/p", Status(Code.Unschedulable), {"n1": FIT}, None, 0.0)
    assert queue.ready("default/p", 1.0)


def test_a_plugin_without_registered_events_is_moved_by_any_event() -> None:
    queue = SchedulingQueue()
    _rejected(queue, "default/p", Status(Code.Unschedulable, ("no",), "SomeOutOfTreePlugin"), 0.0)
    assert not queue.ready("default/p", 60.0)
    queue.event(("Pod", ADD))
    assert queue.ready("default/p", 60.0)


def test_store_changes_are_the_events_kube_scheduler_sees() -> None:
    queue = SchedulingQueue()
    node = {"metadata": {"name": "n1", "annotations": {}}, "status": {"allocatable": {"cpu": "2"}}}
    _rejected(queue, "default/p", FIT, 0.0)
    queue.object_put("Node", ("", "n1"), {**node, "metadata": {"name": "n1", "annotations": {"a": "b"}}}, node, "")
    assert not queue.ready("default/p", 60.0)  # an annotation is no scheduling property
    pending = {"metadata": {"name": "q"}, "spec": {}}
    queue.object_deleted("Pod", ("default", "q"), pending)
    assert not queue.ready("default/p", 60.0)  # an unassigned pod's deletion frees nothing
    bound = {"metadata": {"name": "r"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    queue.object_put("Pod", ("default", "r"), {**bound, "status": {"phase": "Succeeded"}}, bound, "")
    assert queue.ready("default/p", 60.0)  # a pod that finished is a deletion


def test_backoff_stays_ten_seconds_however_many_attempts() -> None:
    queue = SchedulingQueue()
    for attempt in range(2000):  # a day of 1-minute steps and more: no overflow
        _rejected(queue, "default/p", LOAD, float(attempt))
    assert queue.pods["default/p"].backoff() == 10.0
