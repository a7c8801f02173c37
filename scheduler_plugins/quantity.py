"""Kubernetes quantities and Go durations, parsed once at the boundary.

`milli_value` and `value` round up like `resource.Quantity.MilliValue()/Value()`. CPU is always
handled in millicores and every other resource in base units (spec conventions), which
`scalar_of` encodes: the one place that decides the unit of a resource.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from policies.quantity import NANO, Quantity, QuantityError
from scheduler_plugins.apis import CPU

__all__ = ["QuantityError", "parse_quantity", "milli_value", "value", "scalar_of", "resource_list",
           "parse_duration", "format_duration"]

@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a quantity (parsed by the one parser the code base has)."""
    return Fraction(Quantity.parse(text.strip() if isinstance(text, str) else text).nanos, NANO)


@lru_cache(maxsize=4096)
def milli_value(text: str | int | float) -> int:
    return Quantity.parse(text.strip() if isinstance(text, str) else text).milli_value()


@lru_cache(maxsize=4096)
def value(text: str | int | float) -> int:
    return Quantity.parse(text.strip() if isinstance(text, str) else text).value()


def scalar_of(resource: str, text: str | int | float) -> int:
    """The integer a plugin compares: millicores for `cpu`, base units for everything else."""
    return milli_value(text) if resource == CPU else value(text)


def resource_list(raw: dict | None) -> dict[str, int]:
    """A v1.ResourceList as {name: scalar}; zero entries are kept (explicit 0 differs from absent)."""
    return {name: scalar_of(name, q) for name, q in (raw or {}).items()}


_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | int | float | None) -> float:
    """A Go `time.Duration` string ("5m", "1h30m", "0s", "300ms") in seconds."""
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
    """Render seconds as a Prometheus-style duration ("5m", "90s", "1h")."""
    whole = int(seconds)
    if whole == seconds and whole % 3600 == 0 and whole:
        return f"{whole // 3600}h"
    if whole == seconds and whole % 60 == 0 and whole:
        return f"{whole // 60}m"
    if whole == seconds:
        return f"{whole}s"
    return f"{int(seconds * 1000)}ms"
