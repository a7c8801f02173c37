import pytest

from policies.apis.durations import format_duration, go_duration, parse_duration


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
def test_go_durations_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_bad_duration_is_rejected():
    with pytest.raises(ValueError):
        parse_duration("five minutes")


@pytest.mark.parametrize("seconds, text", [(180, "3m"), (3600, "1h"), (90, "90s")])
def test_prometheus_durations(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (90, "1m30s"),
        (300, "5m0s"),
        (600, "10m0s"),
        (1800, "30m0s"),
        (3600, "1h0m0s"),
        (90061, "25h1m1s"),
        (1.5, "1.5s"),
        (0.25, "250ms"),
        (-300, "-5m0s"),
    ],
)
def test_go_duration_text_is_what_go_writes(seconds: float, text: str) -> None:
    """Go's `time.Duration.String()`: whole seconds as a metav1.Duration in a NodeMetric, and fractions."""
    assert go_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
