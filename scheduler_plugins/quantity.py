"""Kubernetes quantities and Go durations, parsed once at the boundary.

`milli_value` and `value` round up like `resource.Quantity.MilliValue()/Value()`. CPU is always
handled in millicores and every other resource in base units (spec conventions), which
`scalar_of` encodes: the one place that decides the unit of a resource.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from scheduler_plugins.apis import CPU

_SUFFIXES = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[A-Za-z]*)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    if isinstance(text, bool):
        raise QuantityError(f"invalid quantity {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(text).limit_denominator(10**9)
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise QuantityError(f"invalid quantity {text!r}")
    number, suffix = match.groups()
    try:
        base = Fraction(number)
    except ValueError as exc:
        raise QuantityError(f"invalid quantity {text!r}") from exc
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return base * Fraction(10) ** int(suffix[1:])
    if suffix not in _SUFFIXES:
        raise QuantityError(f"invalid quantity suffix in {text!r}")
    return base * _SUFFIXES[suffix]


@lru_cache(maxsize=4096)
def milli_value(text: str | int | float) -> int:
    return math.ceil(parse_quantity(text) * 1000)


@lru_cache(maxsize=4096)
def value(text: str | int | float) -> int:
    return math.ceil(parse_quantity(text))


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
