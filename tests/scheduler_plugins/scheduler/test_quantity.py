import pytest

from scheduler_plugins.quantity import format_duration, milli_value, parse_duration, value


@pytest.mark.parametrize("text, milli, plain", [
    ("1", 1000, 1), ("250m", 250, 1), ("1.5", 1500, 2), ("2Ki", 2048000, 2048), ("1Gi", 1024**3 * 1000, 1024**3),
    ("1e3", 1000000, 1000), ("100M", 10**11, 10**8), (4, 4000, 4), ("0.1m", 1, 1),
])
def test_quantities_round_up_like_kubernetes(text, milli, plain):
    assert (milli_value(text), value(text)) == (milli, plain)


@pytest.mark.parametrize("text, seconds", [("0s", 0), ("5m", 300), ("1h30m", 5400), ("300ms", 0.3), ("5m0s", 300), ("", 0)])
def test_go_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_bad_duration_is_rejected():
    with pytest.raises(ValueError):
        parse_duration("five minutes")


@pytest.mark.parametrize("seconds, text", [(180, "3m"), (3600, "1h"), (90, "90s")])
def test_prometheus_durations(seconds, text):
    assert format_duration(seconds) == text
