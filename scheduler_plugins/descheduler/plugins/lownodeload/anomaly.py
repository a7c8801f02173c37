"""Anomaly detection (Koordinator's `pkg/descheduler/utils/anomaly/`): a node is acted on only after
it has been hot for more than `consecutiveAbnormalities` rounds in a row, so a short spike evicts
nothing.

A detector is OK or Anomaly. In OK an abnormal mark counts (a normal one resets the count) and the
state turns Anomaly when the count exceeds `consecutiveAbnormalities` — on the (N+1)-th round. In
Anomaly normal marks count, and the state returns to OK once they exceed `consecutiveNormalities`
or `timeout` has passed since the last transition. Detectors live in a cache per plugin and pool
kind; one not used for `detectorCacheTimeout` is dropped (the node starts over).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

from scheduler_plugins.clock import Clock
from scheduler_plugins.descheduler.plugins.lownodeload.args import AnomalyCondition

#: the detector's own timeout when the condition gives none
DETECTOR_DEFAULT_TIMEOUT: Final = 60.0


class State(enum.Enum):
    OK = "OK"
    ANOMALY = "Anomaly"


class Detector:
    def __init__(self, condition: AnomalyCondition, clock: Clock) -> None:
        self.condition, self.clock = condition, clock
        self.timeout = condition.timeout or DETECTOR_DEFAULT_TIMEOUT
        self._state = State.OK
        self.abnormal = self.normal = 0
        self.transitioned = clock()

    def _move(self, state: State) -> None:
        self._state, self.abnormal, self.normal, self.transitioned = state, 0, 0, self.clock()

    @property
    def state(self) -> State:
        if self._state is State.ANOMALY and self.clock() - self.transitioned >= self.timeout:
            self._move(State.OK)
        return self._state

    def mark(self, normal: bool) -> State:
        if self.state is State.OK:
            if normal:
                self.abnormal = 0
            else:
                self.abnormal += 1
                if self.abnormal > self.condition.consecutive_abnormalities:
                    self._move(State.ANOMALY)
        elif normal:
            self.normal += 1
            if self.normal > self.condition.consecutive_normalities:
                self._move(State.OK)
        else:
            self.normal = 0
        return self._state

    def reset(self) -> None:
        self._move(State.OK)


class DetectorCache:
    """Detectors by node name; an entry unused for `ttl` seconds is forgotten."""

    def __init__(self, ttl: float, clock: Clock) -> None:
        self.ttl, self.clock = ttl, clock
        self._entries: dict[str, tuple[Detector, float]] = {}

    def get(self, node: str, condition: AnomalyCondition) -> Detector:
        now = self.clock()
        found = self._entries.get(node)
        if found is None or now - found[1] >= self.ttl or found[0].condition != condition:
            found = (Detector(condition, self.clock), now)
        self._entries[node] = (found[0], now)
        return found[0]

    def existing(self, node: str) -> Detector | None:
        found = self._entries.get(node)
        return found[0] if found is not None and self.clock() - found[1] < self.ttl else None

    def reset(self, nodes: Sequence[str]) -> None:
        for node in nodes:
            detector = self.existing(node)
            if detector is not None:
                detector.reset()

    def prune(self) -> None:
        now = self.clock()
        for node in [n for n, (_, used) in self._entries.items() if now - used >= self.ttl]:
            del self._entries[node]


def filter_real_abnormal(nodes: Sequence[str], cache: DetectorCache, condition: AnomalyCondition | None) -> list[str]:
    """The nodes (already known hot this round) whose anomaly is confirmed."""
    if condition is None or condition.consecutive_abnormalities == 1:
        return list(nodes)
    return [node for node in nodes if cache.get(node, condition).mark(normal=False) is State.ANOMALY]
