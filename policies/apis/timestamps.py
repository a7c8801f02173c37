"""RFC 3339 timestamps as the API server writes them (`metav1.Time`, `metav1.MicroTime`), read once.

Every component reads object times through `parse_time` (creation and condition times, a
Reservation's `expires`, a NodeMetric's `updateTime`, a Lease's `renewTime`, a `--now` flag), so
they agree on what a time is: seconds since the epoch, a time without a zone is UTC, and a missing,
unreadable or zero time (`0001-01-01T00:00:00Z`, Go's zero `metav1.Time`) is None, which each
caller gives its own meaning ("never", "expired").
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 timestamp as epoch seconds (microseconds kept); None for missing, bad or zero."""
    if not text:
        return None
    raw = str(text).strip()
    if raw[-1:] in ("Z", "z"):
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
