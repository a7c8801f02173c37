"""Object times are read one way everywhere (policies.apis.timestamps)."""

from __future__ import annotations

import pytest

from policies.apis.timestamps import parse_time


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1970-01-01T00:00:10Z", 10.0),
        ("1970-01-01T00:00:10.000001Z", 10.000001),
        ("1970-01-01T01:00:10+01:00", 10.0),
        ("1970-01-01T00:00:10", 10.0),  # no zone: UTC
        (" 1970-01-01T00:00:10z ", 10.0),
    ],
)
def test_rfc3339_times_are_epoch_seconds(text: str, expected: float) -> None:
    assert parse_time(text) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("text", [None, "", "yesterday", "0001-01-01T00:00:00Z"])
def test_missing_unreadable_and_go_zero_times_are_none(text: str | None) -> None:
    assert parse_time(text) is None
