"""Time is injected: plugins call a `Clock` (epoch seconds) rather than reading the system time,
so `--now` and tests can fix it. RFC 3339 parsing lives here too."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from policies.field_errors import ConfigError

Clock = Callable[[], float]


def system_clock() -> float:
    return time.time()


def fixed_clock(at: float) -> Clock:
    return lambda: at


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 timestamp as epoch seconds; None for missing or zero (`0001-01-01...`)."""
    if not text:
        return None
    raw = str(text).strip()
    if raw.endswith("Z"):
        raw = raw[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if parsed.year <= 1:
        return None
    return parsed.timestamp()


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clock_at(now: str | None, flag: str = "--now") -> Clock:
    """The clock a command's `--now` asks for: fixed at that RFC 3339 time, else the system's."""
    if now is None:
        return system_clock
    at = parse_time(now)
    if at is None:
        raise ConfigError(flag, f"not an RFC 3339 time: {now!r}")
    return fixed_clock(at)
