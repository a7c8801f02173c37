import pytest

from policies.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("0s", 0),
        ("5m", 300),
        ("1h30m", 5400),
        ("300ms", 0.3),
        ("5m0s", 300),
        ("", 0),
    ],
)
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_bad_duration_is_rejected():
    with pytest.raises(ValueError):
        parse_duration("five minutes")


@pytest.mark.parametrize("seconds, text", [(180, "3m"), (3600, "1h"), (90, "90s")])
def test_prometheus_durations(seconds, text):
    assert format_duration(seconds) == text
