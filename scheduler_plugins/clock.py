"""Time is injected: plugins call a `Clock` (epoch seconds) rather than reading the system time,
so `--now` and tests can fix it. Timestamps are read by `policies.apis.timestamps.parse_time`."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache

from policies.apis.field_errors import ConfigError
from policies.apis.timestamps import parse_time

#: `parse_time` is `policies.apis.timestamps`' (the one reader of object times); re-exported for the
#: callers that import it with the clock
__all__ = ["Clock", "clock_at", "fixed_clock", "format_time", "parse_time", "system_clock"]

Clock = Callable[[], float]


def system_clock() -> float:
    return time.time()


def fixed_clock(at: float) -> Clock:
    return lambda: at


@lru_cache(maxsize=1024)
def format_time(epoch: float) -> str:
    """RFC 3339 in UTC, whole seconds (cached: a step's components stamp the same instants)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clock_at(now: str | None, flag: str = "--now") -> Clock:
    """The clock a command's `--now` asks for: fixed at that RFC 3339 time, else the system's."""
    if now is None:
        return system_clock
    at = parse_time(now)
    if at is None:
        raise ConfigError(flag, f"not an RFC 3339 time: {now!r}")
    return fixed_clock(at)
