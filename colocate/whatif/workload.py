"""The workload file of `colocate whatif`: who arrives when, and how much each pod uses over time.

Parsed once at the edge into frozen values; every error names the file and the field
(`workload.yaml: spec.arrivals[0].every: not a duration`). Usage models are per resource and per pod,
in absolute amounts (cpu in millicores, memory in bytes): `constant`, `daily` (a cosine with its peak
at `peakAt`, UTC), `step` (the last entry at or before t) and `series` (recorded values, one per
`every`), each with an optional `noise` percent drawn from the run's one seeded generator.
See docs/whatif.md.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.durations import parse_duration
from policies.apis.field_errors import ConfigError, FieldError
from policies.apis.manifests import ManifestError, parse_documents
from policies.apis.names import dns1123_subdomain_error
from policies.apis.quantity import QuantityError, scalar_of
from policies.apis.selectors import InvalidSelector, LabelSelector, compile_selector
from policies.apis.suggestions import did_you_mean

API_VERSION: Final = "colocate.io/v1alpha1"
KIND: Final = "Workload"
DAY: Final = 86400.0
RESOURCES: Final = (RESOURCE_CPU, RESOURCE_MEMORY)
#: the most pods a run's arrivals may create, and the most steps a timeline may have: a run expands
#: both before it starts, so `every: 1ns` or `--duration 100y` is refused up front, not an out-of-memory
MAX_ARRIVING_PODS: Final = 200_000
MAX_STEPS: Final = 100_000

_ANY: Final = "any"
_MODEL: Final = {
    "constant": _ANY,
    "daily": {"min": _ANY, "max": _ANY, "peakAt": _ANY},
    "step": [{"at": _ANY, "value": _ANY}],
    "series": {"values": _ANY, "every": _ANY},
    "noise": _ANY,
}
_USAGE: Final = {RESOURCE_CPU: _MODEL, RESOURCE_MEMORY: _MODEL}
_ARRIVAL: Final = {
    "name": _ANY,
    "at": _ANY,
    "every": _ANY,
    "until": _ANY,
    "count": _ANY,
    "lifetime": _ANY,
    "template": _ANY,
    "usage": _USAGE,
}
#: every field a Workload document has: any other key is refused, with the spelling it was probably meant to be
WORKLOAD_FIELDS: Final = {
    "apiVersion": _ANY,
    "kind": _ANY,
    "metadata": _ANY,
    "spec": {"running": [{"selector": _ANY, "usage": _USAGE}], "arrivals": [_ARRIVAL]},
}


@dataclass(frozen=True)
class Model:
    """One resource's usage over time (millicores or bytes). `noise` is a percent."""

    kind: str
    constant: int = 0
    low: int = 0
    high: int = 0
    peak: float = 0.0  # seconds after midnight UTC
    steps: tuple[tuple[float, int], ...] = ()
    values: tuple[int, ...] = ()
    every: float = 0.0
    noise: float = 0.0

    def value(self, t: float, elapsed: float, rand: random.Random) -> int:
        """The amount at epoch `t`, `elapsed` seconds after the timeline started."""
        if self.kind == "constant":
            raw = float(self.constant)
        elif self.kind == "daily":
            phase = 2 * math.pi * ((t % DAY) - self.peak) / DAY
            raw = self.low + (self.high - self.low) * (1 + math.cos(phase)) / 2
        elif self.kind == "step":
            raw = 0.0
            for at, amount in self.steps:
                if at > elapsed:
                    break
                raw = float(amount)
        else:
            index = min(int(elapsed // self.every), len(self.values) - 1)
            raw = float(self.values[index])
        if self.noise:
            raw *= 1 + rand.uniform(-self.noise, self.noise) / 100
        return max(0, int(raw))


Usage = Mapping[str, Model]


@dataclass(frozen=True)
class Running:
    """Usage of the snapshot's running pods that `selector` matches (the first match wins)."""

    selector: LabelSelector
    usage: Usage


@dataclass(frozen=True)
class Arrival:
    name: str
    at: float
    every: float
    until: float | None
    count: int
    lifetime: float | None
    template: Mapping[str, Any]
    usage: Usage

    def occurrences(self, duration: float) -> int:
        """How many times it arrives before `duration`, counted without listing them."""
        end = duration if self.until is None else min(self.until, duration)
        if self.at >= end:
            return 0
        if self.every <= 0:
            return 1
        times = math.ceil(min((end - self.at) / self.every, float(sys.maxsize)))
        return max(times, 0)

    def times(self, duration: float) -> list[float]:
        """Offsets of the arrivals before `duration`."""
        return [self.at + i * self.every for i in range(self.occurrences(duration))]


@dataclass(frozen=True)
class Workload:
    running: tuple[Running, ...] = ()
    arrivals: tuple[Arrival, ...] = field(default_factory=tuple)

    def usage_of_running(self, labels: Mapping[str, str]) -> Usage | None:
        for entry in self.running:
            if entry.selector.matches(labels):
                return entry.usage
        return None


def _duration(value: Any, path: str) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise ConfigError(path, f"not a duration: {value!r}") from None
    if seconds < 0:
        raise ConfigError(path, f"must not be negative, got {value!r}")
    return seconds


def _amount(resource: str, value: Any, path: str) -> int:
    try:
        return scalar_of(resource, value)
    except (QuantityError, TypeError, ValueError):
        raise ConfigError(path, f"not a quantity: {value!r}") from None


def _peak(value: Any, path: str) -> float:
    text = str(value or "00:00")
    hours, _, minutes = text.partition(":")
    if not (hours.isdigit() and minutes.isdigit() and int(hours) < 24 and int(minutes) < 60):
        raise ConfigError(path, f"must be HH:MM, got {value!r}")
    return int(hours) * 3600.0 + int(minutes) * 60.0


def _model(resource: str, raw: Any, path: str) -> Model:
    if not isinstance(raw, Mapping):
        raise ConfigError(path, "must be an object with one of constant, daily, step, series")
    kinds = [k for k in ("constant", "daily", "step", "series") if k in raw]
    if len(kinds) != 1:
        raise ConfigError(path, "must have exactly one of constant, daily, step, series")
    noise = raw.get("noise", 0)
    if isinstance(noise, bool) or not isinstance(noise, int | float) or not 0 <= noise <= 100:
        raise ConfigError(f"{path}.noise", f"must be a percent 0..100, got {noise!r}")
    kind, body, where = kinds[0], raw[kinds[0]], f"{path}.{kinds[0]}"
    if kind == "constant":
        return Model(kind, constant=_amount(resource, body, where), noise=float(noise))
    if kind == "daily":
        if not isinstance(body, Mapping):
            raise ConfigError(where, "must be an object with min, max, peakAt")
        low, high = (
            _amount(resource, body.get("min"), f"{where}.min"),
            _amount(resource, body.get("max"), f"{where}.max"),
        )
        if high < low:
            raise ConfigError(f"{where}.max", "must not be below min")
        return Model(kind, low=low, high=high, peak=_peak(body.get("peakAt"), f"{where}.peakAt"), noise=float(noise))
    if kind == "step":
        if not isinstance(body, list) or not body:
            raise ConfigError(where, "must be a non-empty list of {at, value}")
        steps = []
        for i, entry in enumerate(body):
            if not isinstance(entry, Mapping):
                raise ConfigError(f"{where}[{i}]", "must be an object with at and value")
            at = _duration(entry.get("at"), f"{where}[{i}].at")
            steps.append((at, _amount(resource, entry.get("value"), f"{where}[{i}].value")))
        return Model(kind, steps=tuple(sorted(steps, key=lambda s: s[0])), noise=float(noise))
    if not isinstance(body, Mapping) or not isinstance(body.get("values"), list) or not body["values"]:
        raise ConfigError(where, "must be an object with a non-empty values list and every")
    every = _duration(body.get("every"), f"{where}.every")
    if every <= 0:
        raise ConfigError(f"{where}.every", "must be positive")
    values = tuple(_amount(resource, v, f"{where}.values[{i}]") for i, v in enumerate(body["values"]))
    return Model(kind, values=values, every=every, noise=float(noise))


def _usage(raw: Any, path: str) -> Usage:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(path, "must be an object of cpu and memory models")
    unknown = sorted(set(raw) - set(RESOURCES))
    if unknown:
        raise ConfigError(f"{path}.{unknown[0]}", "unknown resource (cpu, memory)")
    return {name: _model(name, raw[name], f"{path}.{name}") for name in RESOURCES if name in raw}


def _arrival(raw: Any, path: str) -> Arrival:
    if not isinstance(raw, Mapping):
        raise ConfigError(path, "must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.name", "is required")
    if why := dns1123_subdomain_error(name):  # its pods are named after it, and must be names an API server takes
        raise ConfigError(f"{path}.name", f"Invalid value: {name!r}: {why}")
    count = raw.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"{path}.count", f"must be a positive integer, got {count!r}")
    template = raw.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise ConfigError(f"{path}.template", "must be a Pod's metadata and spec")
    lifetime = _duration(raw["lifetime"], f"{path}.lifetime") if raw.get("lifetime") is not None else None
    return Arrival(
        name=name,
        at=_duration(raw.get("at", 0), f"{path}.at"),
        every=_duration(raw.get("every", 0), f"{path}.every"),
        until=_duration(raw["until"], f"{path}.until") if raw.get("until") is not None else None,
        count=count,
        lifetime=lifetime,
        template=template,
        usage=_usage(raw.get("usage"), f"{path}.usage"),
    )


def _unknown_fields(value: Any, shape: Any, path: str) -> list[FieldError]:
    """Every key of `value` that `shape` (a WORKLOAD_FIELDS part) does not know, found in one pass."""
    if isinstance(shape, list) and isinstance(value, list):
        return [e for i, item in enumerate(value) for e in _unknown_fields(item, shape[0], f"{path}[{i}]")]
    if not isinstance(shape, Mapping) or not isinstance(value, Mapping):
        return []
    errors = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key in shape:
            errors.extend(_unknown_fields(item, shape[key], where))
        else:
            errors.append(FieldError(where, f"unknown field{did_you_mean(str(key), shape)}"))
    return errors


def parse_workload(documents: Sequence[Any]) -> Workload:
    """The workload of a file's documents (their arrivals concatenated)."""
    running: list[Running] = []
    arrivals: list[Arrival] = []
    for index, doc in enumerate(documents):
        where = f"documents[{index}]" if len(documents) > 1 else ""
        prefix = f"{where}." if where else ""
        if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
            raise ConfigError(f"{prefix}kind", f"must be {KIND}")
        unknown = _unknown_fields(doc, WORKLOAD_FIELDS, where)
        if unknown:  # a typo must not answer a different question (`arivals:` is not "no arrivals")
            raise ConfigError.every(unknown)
        spec = doc.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{prefix}spec", "must be an object")
        for i, entry in enumerate(spec.get("running") or []):
            path = f"{prefix}spec.running[{i}]"
            if not isinstance(entry, Mapping):
                raise ConfigError(path, "must be an object with selector and usage")
            selector = compile_selector(entry.get("selector"), f"{path}.selector")
            if isinstance(selector, InvalidSelector):
                raise ConfigError(f"{path}.selector", selector.error)
            running.append(Running(selector, _usage(entry.get("usage"), f"{path}.usage")))
        arrivals.extend(_arrival(a, f"{prefix}spec.arrivals[{i}]") for i, a in enumerate(spec.get("arrivals") or []))
    names = [a.name for a in arrivals]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError("spec.arrivals", f"duplicate name {duplicates[0]!r}")
    return Workload(tuple(running), tuple(arrivals))


def load_workload(path: Path) -> Workload:
    """Read and parse the workload file; a ConfigError's message starts with the file's name."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("--workload", f"{path}: {exc.strerror or exc}") from None
    try:
        documents = [d for d in parse_documents(text, str(path)) if d is not None]
        return parse_workload(documents)
    except ManifestError as exc:
        raise ConfigError("--workload", str(exc)) from None
    except ConfigError as exc:
        raise ConfigError(str(path), str(exc)) from None


def check_size(workload: Workload, duration: float, step: float) -> None:
    """Refuse a run larger than whatif's limits before it expands anything: one line naming the limit."""
    steps = duration / step
    if steps > MAX_STEPS:
        raise ConfigError(
            "--duration", f"{duration:g}s in steps of {step:g}s is {steps:,.0f} steps, over the limit of {MAX_STEPS:,}"
        )
    total = 0
    for index, arrival in enumerate(workload.arrivals):
        total += arrival.count * arrival.occurrences(duration)
        if total > MAX_ARRIVING_PODS:
            raise ConfigError(
                f"--workload: spec.arrivals[{index}] ({arrival.name})",
                f"the arrivals create more than {MAX_ARRIVING_PODS:,} pods in {duration:g}s (the limit): "
                "fewer pods, a longer every, or a shorter --duration",
            )
