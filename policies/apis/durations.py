"""Go `time.Duration` text ("5m", "1h30m", "300ms"), as plugin args and annotations write it."""

from __future__ import annotations

import re
from typing import Final

_DURATION_PART: Final = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNIT: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str | int | float | None) -> float:
    """A Go `time.Duration` string in seconds; a bare number is already seconds, None or "" is 0.
    Raises ValueError on anything else."""
    if text is None or text == "":
        return 0.0
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    raw = str(text).strip()
    sign = -1.0 if raw.startswith("-") else 1.0
    body = raw.lstrip("+-")
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNIT[match.group(2)]
        pos = match.end()
    if pos != len(body) or not body:
        raise ValueError(f"invalid duration {text!r}")
    return sign * total


def format_duration(seconds: float) -> str:
    """Seconds as a Prometheus-style duration ("5m", "90s", "1h", "300ms")."""
    whole = int(seconds)
    if whole == seconds and whole % 3600 == 0 and whole:
        return f"{whole // 3600}h"
    if whole == seconds and whole % 60 == 0 and whole:
        return f"{whole // 60}m"
    if whole == seconds:
        return f"{whole}s"
    return f"{int(seconds * 1000)}ms"


def go_duration(seconds: float) -> str:
    """Seconds as Go's `time.Duration.String()` ("5m0s", "1h0m0s", "1.5s", "250ms"): how a Go
    component writes a duration (a `metav1.Duration` in JSON, a ColocationCfg field), to the nanosecond."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    nanos = round(abs(seconds) * 1e9)
    if nanos < 10**9:
        for unit, scale in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if nanos >= scale or unit == "ns":
                return f"{sign}{_trim(nanos, scale)}{unit}"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{_trim(rest, 10**9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _trim(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
