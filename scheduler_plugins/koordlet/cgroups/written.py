"""What the koordlet last wrote to each kernel file, and the one way it writes one.

The cgroup executor and the host files both skip a write of the text they wrote last to a file
until that entry is older than a time to live: kernel files are cheap to read but a write can
reset state (a cgroup's throttling, a sysctl's side effects), and a strategy asks for the same
value every round.
"""

from __future__ import annotations

import os


class WrittenCache:
    """The text last written to each path and when; a path that failed is forgotten."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._last: dict[str, tuple[str, float]] = {}

    def fresh(self, path: str, text: str, now: float) -> bool:
        """`text` was written to `path` less than `ttl` ago: writing it again can be skipped."""
        last = self._last.get(path)
        return last is not None and last[0] == text and now - last[1] < self.ttl

    def knows(self, path: str) -> bool:
        return path in self._last

    def remember(self, path: str, text: str, now: float) -> None:
        self._last[path] = (text, now)

    def forget(self, path: str) -> None:
        self._last.pop(path, None)


def overwrite(path: str, text: str) -> None:
    """Write `text` over an existing kernel file in one write() (never creating it: a missing
    file is an OSError, as the kernel's interface is not ours to make)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
