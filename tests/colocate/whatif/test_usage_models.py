"""The usage models of a workload file, read as a user writes them."""

from __future__ import annotations

import random

from colocate.whatif.workload import parse_workload
from policies.apis.timestamps import parse_time

MIDNIGHT = parse_time("2026-01-01T00:00:00Z") or 0.0


def _model(usage: dict) -> object:  # type: ignore[type-arg]
    doc = {
        "kind": "Workload",
        "spec": {"arrivals": [{"name": "a", "template": {"spec": {}}, "usage": {"cpu": usage}}]},
    }
    return parse_workload([doc]).arrivals[0].usage["cpu"]


def _at(model: object, hours: float) -> int:
    return model.value(MIDNIGHT + hours * 3600, hours * 3600, random.Random(0))  # type: ignore[attr-defined]


def test_daily_peaks_at_peak_at_and_bottoms_twelve_hours_away() -> None:
    daily = _model({"daily": {"min": "1", "max": "5", "peakAt": "12:00"}})
    assert (_at(daily, 12), _at(daily, 0), _at(daily, 6)) == (5000, 1000, 3000)


def test_step_holds_the_last_entry_and_is_zero_before_the_first() -> None:
    step = _model({"step": [{"at": "1h", "value": "2"}, {"at": "3h", "value": "500m"}]})
    assert [_at(step, h) for h in (0, 1, 2, 3, 10)] == [0, 2000, 2000, 500, 500]


def test_series_steps_through_its_values_and_keeps_the_last() -> None:
    series = _model({"series": {"values": ["1", "2", "3"], "every": "1h"}})
    assert [_at(series, h) for h in (0, 1.5, 2, 9)] == [1000, 2000, 3000, 3000]


def test_noise_stays_within_its_percent() -> None:
    noisy = _model({"constant": "1", "noise": 10})
    rand = random.Random(3)
    values = {noisy.value(MIDNIGHT, 0, rand) for _ in range(200)}  # type: ignore[attr-defined]
    assert min(values) >= 900 and max(values) <= 1100 and len(values) > 50


def test_arrivals_repeat_every_until_the_end() -> None:
    doc = {
        "kind": "Workload",
        "spec": {"arrivals": [{"name": "a", "at": "1h", "every": "2h", "until": "6h", "template": {"spec": {}}}]},
    }
    assert parse_workload([doc]).arrivals[0].times(24 * 3600) == [3600, 3 * 3600, 5 * 3600]
