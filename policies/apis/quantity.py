"""Kubernetes `resource.Quantity`: parsing, arithmetic and canonical text, and the integer scalars
the scheduler compares.

Values are kept as an exact integer count of nano-units (Kubernetes rounds anything finer up to
1n), plus the format the text was written in, which decides how the canonical text is rendered:
`1000` -> `1k`, `1.5` -> `1500m`, `1073741824` written in binary form -> `1Gi`.

`milli_value` and `value` round up like `resource.Quantity.MilliValue()/Value()`. CPU is always
handled in millicores and every other resource in base units, which `scalar_of` encodes: the one
place that decides the unit of a resource.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Final

from policies.apis.constants import RESOURCE_CPU

NANO: Final = 10**9

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_DECIMAL_EXPONENT_TO_SUFFIX: Final = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_EXPONENT_TO_SUFFIX: Final = {exp // 10: suffix for suffix, exp in _BINARY_SUFFIXES.items()}
#: Kubernetes' quantities have at most ~19 significant digits and exponents of +-18; these bounds
#: only keep a hostile value from costing seconds of big-integer arithmetic
MAX_TEXT: Final = 64
MAX_EXPONENT: Final = 64
_QUANTITY_RE: Final = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?([a-zA-Z]*|[eE][+-]?\d+)$")
_EXPONENT_RE: Final = re.compile(r"[+-]?\d+")  # what follows the e of a suffix such as e3 (not "EE", "e")


class QuantityFormat(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


def _ceil_div(numerator: int, denominator: int) -> int:
    return -((-numerator) // denominator)


@dataclass(frozen=True, slots=True)
class Quantity:
    nanos: int
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    @classmethod
    def parse(cls, value: object) -> Quantity:
        """Parse a quantity as it appears in JSON: a string, or a bare number."""
        if isinstance(value, Quantity):
            return value
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise QuantityError(f"quantities must be strings or numbers, got {value!r}")
        return _parse(value)

    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> Quantity:
        return cls(value * NANO, fmt)

    def milli_value(self) -> int:
        """Value in thousandths, rounded up (Kubernetes `MilliValue`)."""
        return _ceil_div(self.nanos, 10**6)

    def value(self) -> int:
        """Value in whole units, rounded up (Kubernetes `Value`)."""
        return _ceil_div(self.nanos, NANO)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos + other.nanos, self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos, self.format)

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos

    # The dataclass's own equality and hash, written out: compiled with mypyc (colocate/cluster/compiled.py),
    # a class that orders itself keeps only identity for ==, and no hash, unless it says so.
    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Quantity)
        return self.nanos == other.nanos and self.format is other.format

    def __hash__(self) -> int:
        return hash((self.nanos, self.format))

    def same_value(self, other: Quantity) -> bool:
        return self.nanos == other.nanos

    def canonical(self) -> str:
        """The text Kubernetes emits for this quantity (`Quantity.String()`)."""
        return canonical_text(self.nanos, self.format)

    def __str__(self) -> str:
        return self.canonical()


@lru_cache(maxsize=4096, typed=True)
def _parse(value: str | int | float) -> Quantity:
    """`Quantity.parse` of a string or number (cached: a Quantity is immutable, and pods and the
    cluster repeat a few values; an error is raised again on every call, never cached)."""
    if isinstance(value, int) and not -(10**MAX_TEXT) < value < 10**MAX_TEXT:
        raise QuantityError(f"quantities must have at most {MAX_TEXT} digits")
    text = repr(value) if isinstance(value, float) else str(value)
    if len(text) > MAX_TEXT:
        raise QuantityError(f"quantities must be at most {MAX_TEXT} characters, got {len(text)}")
    if text.isascii() and text.isdigit():  # a plain integer ("25000"): what the regex below reads
        return Quantity(int(text) * NANO, QuantityFormat.DECIMAL_SI)
    match = _QUANTITY_RE.match(text)
    if match is None or not (match.group(2) or match.group(3)):
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    digits = int((whole or "0") + fraction)
    # value = digits * 10^-len(fraction) * multiplier; computed exactly, rounded up to nanos.
    if suffix in _BINARY_SUFFIXES:
        fmt = QuantityFormat.BINARY_SI
        numerator, denominator = digits * 2 ** _BINARY_SUFFIXES[suffix] * NANO, 10 ** len(fraction)
    elif suffix in _DECIMAL_SUFFIXES:
        fmt = QuantityFormat.DECIMAL_SI
        exponent = _DECIMAL_SUFFIXES[suffix] - len(fraction) + 9
        numerator, denominator = (digits * 10**exponent, 1) if exponent >= 0 else (digits, 10**-exponent)
    elif suffix[:1] in ("e", "E") and _EXPONENT_RE.fullmatch(suffix, 1):
        fmt = QuantityFormat.DECIMAL_EXPONENT
        if abs(int(suffix[1:])) > MAX_EXPONENT:
            raise QuantityError(f"quantity exponents must be within +-{MAX_EXPONENT}, got {text!r}")
        exponent = int(suffix[1:]) - len(fraction) + 9
        numerator, denominator = (digits * 10**exponent, 1) if exponent >= 0 else (digits, 10**-exponent)
    else:
        raise QuantityError(f"unable to parse quantity's suffix in {text!r}")
    nanos = _ceil_div(numerator, denominator)
    return Quantity(-nanos if sign == "-" else nanos, fmt)


def canonical_text(nanos: int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> str:
    """`Quantity(nanos, fmt).canonical()` without making the Quantity (for text written every round)."""
    if nanos == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI:
        if -1024 * NANO < nanos < 1024 * NANO or nanos % NANO:
            fmt = QuantityFormat.DECIMAL_SI
        else:
            return _canonical_binary(nanos // NANO)
    return _canonical_decimal(nanos, fmt)


def _canonical_binary(value: int) -> str:
    exponent = 0
    while value % 1024 == 0 and exponent < 6:
        value //= 1024
        exponent += 1
    return f"{value}{_BINARY_EXPONENT_TO_SUFFIX.get(exponent, '')}"


def _canonical_decimal(nanos: int, fmt: QuantityFormat) -> str:
    mantissa, exponent = nanos, -9
    if mantissa % NANO == 0:  # a whole number (the usual case): its nine zeros at once
        mantissa, exponent = mantissa // NANO, 0
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3  # Python's modulo: lowers the exponent to a multiple of three
    mantissa *= 10**shift
    exponent -= shift
    if fmt is QuantityFormat.DECIMAL_SI and exponent in _DECIMAL_EXPONENT_TO_SUFFIX:
        return f"{mantissa}{_DECIMAL_EXPONENT_TO_SUFFIX[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


@lru_cache(maxsize=4096)
def _canonical_cached(value: str | int | float) -> str:
    return Quantity.parse(value).canonical()


@lru_cache(maxsize=4096)
def _milli_integer_cached(value: str | int | float) -> str:
    return Quantity.from_int(Quantity.parse(value).milli_value()).canonical()


def canonical(value: object) -> str:
    """Canonical text of a quantity given as JSON text or number (cached: pods repeat a few values)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _canonical_cached(value)
    return Quantity.parse(value).canonical()


def milli_integer(value: object) -> str:
    """The quantity's milli-value as an integer quantity: `1` -> `1k`, `500m` -> `500` (batch-cpu)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _milli_integer_cached(value)
    return Quantity.from_int(Quantity.parse(value).milli_value()).canonical()


def quantity_list(raw: object) -> dict[str, Quantity]:
    """A v1.ResourceList as exact quantities ({} for anything but a mapping); raises QuantityError
    on a malformed quantity."""
    if not isinstance(raw, Mapping):
        return {}
    return {name: Quantity.parse(value) for name, value in raw.items()}


def _strip(text: str | int | float) -> str | int | float:
    return text.strip() if isinstance(text, str) else text


@lru_cache(maxsize=4096)
def milli_value(text: str | int | float) -> int:
    """The quantity in thousandths, rounded up (cached: pods repeat a few values)."""
    return Quantity.parse(_strip(text)).milli_value()


@lru_cache(maxsize=4096)
def value(text: str | int | float) -> int:
    """The quantity in whole units, rounded up (cached: pods repeat a few values)."""
    return Quantity.parse(_strip(text)).value()


def scalar_of(resource: str, text: str | int | float) -> int:
    """The integer the scheduler compares: millicores for `cpu`, base units for everything else."""
    return milli_value(text) if resource == RESOURCE_CPU else value(text)


def resource_list(raw: Mapping[str, Any] | None) -> dict[str, int]:
    """A v1.ResourceList as {name: scalar}; zero entries are kept (explicit 0 differs from absent).
    Raises QuantityError on a malformed quantity."""
    return {name: scalar_of(name, q) for name, q in (raw or {}).items()}


#: Resources whose amounts are bytes: printed in binary units (`1Gi`), as Kubernetes builds them.
_BYTE_RESOURCES: Final = frozenset(
    {
        "memory",
        "ephemeral-storage",
        "kubernetes.io/batch-memory",
        "kubernetes.io/mid-memory",
        "koordinator.sh/gpu-memory",
    }
)


def scalar_text(resource: str, amount: int) -> str:
    """The quantity text of a scheduler scalar (the inverse of `scalar_of`): millicores for `cpu`
    (`1500` -> `1500m`), binary units for byte amounts (`1073741824` -> `1Gi`), decimal otherwise."""
    if resource == RESOURCE_CPU:
        return Quantity(amount * 10**6).canonical()
    binary = resource in _BYTE_RESOURCES or resource.startswith("hugepages-")
    return Quantity.from_int(amount, QuantityFormat.BINARY_SI if binary else QuantityFormat.DECIMAL_SI).canonical()
