"""The embedded metric cache: timestamped samples per series, bounded by age and count, with the
window queries the strategies and the reporter ask (latest, average, percentiles).

Series are named `node/cpu`, `pod/<uid>/memory`, `be/cpu_request`...: CPU in millicores, memory
in bytes. Nothing a series holds outlives `retention` seconds, and no series keeps more than
`max_points` samples, whatever the collect interval. A series that stops receiving samples (its pod
was deleted) is dropped by `expire` once its newest sample is older than `retention`, as
koordlet's metric cache drops data past its retention: pod churn does not grow the cache.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (`p` in 0..100) of `values` (not empty)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


class MetricCache:
    def __init__(self, retention: float = 1800.0, max_points: int = 4096) -> None:
        self.retention, self.max_points = retention, max_points
        self._series: dict[str, deque[tuple[float, float]]] = {}
        self._lock = threading.Lock()
        #: when `expire` last swept every series (it sweeps at most every `retention / 4` seconds)
        self._swept: float | None = None

    def add(self, series: str, at: float, value: float) -> None:
        with self._lock:
            samples = self._series.get(series)
            if samples is None:
                samples = self._series[series] = deque(maxlen=self.max_points)
            samples.append((at, value))
            while samples and samples[0][0] < at - self.retention:
                samples.popleft()

    def expire(self, now: float) -> int:
        """Drop the samples older than `retention` from every series, and the series left empty;
        the number of series dropped. Sweeps at most every `retention / 4` seconds, so calling it
        on every collection round costs nothing in between."""
        if self._swept is not None and self._swept <= now < self._swept + self.retention / 4:
            return 0
        self._swept = now
        horizon = now - self.retention
        dropped = 0
        with self._lock:
            for name in list(self._series):
                samples = self._series[name]
                while samples and samples[0][0] < horizon:
                    samples.popleft()
                if not samples:
                    del self._series[name]
                    dropped += 1
        return dropped

    def __len__(self) -> int:
        """The number of series held."""
        return len(self._series)

    def names(self, prefix: str = "") -> list[str]:
        with self._lock:
            return [n for n in self._series if n.startswith(prefix)]

    def window(self, series: str, now: float, seconds: float) -> list[float]:
        with self._lock:
            samples = list(self._series.get(series, ()))
        return [v for t, v in samples if now - seconds <= t <= now]

    def latest(self, series: str, now: float, max_age: float) -> float | None:
        with self._lock:
            samples = self._series.get(series)
            if not samples:
                return None
            at, value = samples[-1]
        return value if now - at <= max_age else None

    def average(self, series: str, now: float, seconds: float) -> float | None:
        values = self.window(series, now, seconds)
        return sum(values) / len(values) if values else None

    def percentiles(self, series: str, now: float, seconds: float, ps: Sequence[float]) -> dict[float, float] | None:
        values = self.window(series, now, seconds)
        return {p: percentile(values, p) for p in ps} if values else None
