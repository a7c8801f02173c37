"""Anomaly detection (Koordinator's `pkg/descheduler/utils/anomaly/`): N consecutive abnormal rounds
are tolerated, the (N+1)-th acts."""

from __future__ import annotations

from typing import Any

from scheduler_plugins.descheduler.plugins.lownodeload.anomaly import (
    Detector,
    DetectorCache,
    State,
    filter_real_abnormal,
)
from scheduler_plugins.descheduler.plugins.lownodeload.args import AnomalyCondition
from tests.scheduler_plugins.descheduler.helpers import FakeEvictions, config, evicted, run_rounds
from tests.scheduler_plugins.descheduler.test_lownodeload import EXAMPLE_ARGS, worked_example


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_two_tolerated_abnormalities_mean_the_third_round_acts() -> None:
    cache = DetectorCache(300, Clock())
    condition = AnomalyCondition(60, 2, 3)
    assert [filter_real_abnormal(["n1"], cache, condition) for _ in range(3)] == [[], [], ["n1"]]


def test_one_abnormality_acts_at_once_without_a_detector() -> None:
    cache = DetectorCache(300, Clock())
    assert filter_real_abnormal(["n1"], cache, AnomalyCondition(60, 1, 3)) == ["n1"]
    assert cache.existing("n1") is None


def test_a_normal_round_resets_the_count() -> None:
    detector = Detector(AnomalyCondition(60, 2, 3), Clock())
    for normal in (False, False, True, False, False):
        detector.mark(normal)
    assert detector.state is State.OK
    assert detector.mark(False) is State.ANOMALY


def test_an_anomaly_ends_after_enough_normal_rounds_or_the_timeout() -> None:
    clock = Clock()
    detector = Detector(AnomalyCondition(0, 1, 2), clock)
    detector.mark(False), detector.mark(False)
    assert detector.state is State.ANOMALY
    for _ in range(2):
        detector.mark(True)
    assert detector.state is State.ANOMALY
    detector.mark(True)
    assert detector.state is State.OK
    detector.mark(False), detector.mark(False)
    clock.now += 60  # the detector's own timeout when the condition gives none
    assert detector.state is State.OK


def test_a_detector_unused_for_the_cache_timeout_starts_over() -> None:
    clock = Clock()
    cache = DetectorCache(300, clock)
    condition = AnomalyCondition(60, 2, 3)
    filter_real_abnormal(["n1"], cache, condition), filter_real_abnormal(["n1"], cache, condition)
    clock.now += 301
    assert filter_real_abnormal(["n1"], cache, condition) == []


def test_by_default_a_hot_node_is_relieved_on_the_sixth_consecutive_round() -> None:
    args: dict[str, Any] = {**EXAMPLE_ARGS}
    del args["anomalyCondition"]
    backend = FakeEvictions()
    reports = run_rounds(config(args), worked_example(), rounds=6, backend=backend)
    assert [len(r.evictions) for r in reports] == [0, 0, 0, 0, 0, 4]
    assert evicted(reports) == backend.evicted
