"""CPU lists as the kernel writes them (`0-3,8,10-11`)."""
from __future__ import annotations

from collections.abc import Iterable


def parse_cpuset(text: str) -> frozenset[int]:
    """`0-3,8` -> {0, 1, 2, 3, 8}; empty text is the empty set. Raises ValueError on bad text."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.strip().split(","))):
        low, sep, high = part.partition("-")
        if sep:
            first, last = int(low), int(high)
            if last < first:
                raise ValueError(f"bad cpu range {part!r}")
            cpus.update(range(first, last + 1))
        else:
            cpus.add(int(low))
    return frozenset(cpus)


def format_cpuset(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 3, 8} -> `0-3,8`."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
