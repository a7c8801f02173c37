"""A tiny progress bar on stderr for long work (`scheduler simulate`, `audit`); silent when disabled.

Shown only where a person watches: `enabled(flag, stream)` is the flag when given (`--progress`,
`--no-progress`), else whether the stream is a terminal, so a pipe or a CI log never gets one."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
MIN_INTERVAL_SECONDS = 0.1


def enabled(flag: bool | None, stream: TextIO | None = None) -> bool:
    """`--progress`/`--no-progress` when given, else: is `stream` (stderr) a terminal?"""
    return (stream or sys.stderr).isatty() if flag is None else flag


class Progress:
    def __init__(self, total: int, enabled: bool, stream: TextIO | None = None, label: str = "scheduling") -> None:
        self.total = max(total, 1)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.label = label
        self._last = 0.0
        self.done = 0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= MIN_INTERVAL_SECONDS or self.done >= self.total:
            self._last = now
            filled = WIDTH * self.done // self.total
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
