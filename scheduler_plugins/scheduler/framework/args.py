"""Reading plugin args and config blocks with a field path in every error.

Args are parsed once, at the boundary, into frozen dataclasses; the helpers here check the type of
one field and name it when it is wrong. Keys are matched exactly (the YAML spelling).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.durations import parse_duration
from scheduler_plugins.scheduler.errors import ConfigError

_MISSING = object()


class Fields:
    """A mapping under a path. `Fields(raw, "args").int("weight", 1)`."""

    def __init__(self, raw: Any, path: str) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(path, f"must be a mapping, got {type(raw).__name__}")
        self.raw = raw
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self.at(key), f"must be a boolean, got {value!r}")
        return value

    def int(self, key: str, default: int | None) -> int | None:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.at(key), f"must be an integer, got {value!r}")
        return value

    def str(self, key: str, default: str = "") -> str:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(self.at(key), f"must be a string, got {value!r}")
        return value

    def duration(self, key: str, default: float = 0.0) -> float:
        value = self.raw.get(key)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ConfigError(self.at(key), str(exc)) from exc

    def int_map(self, key: str) -> dict[str, int]:
        value = self.raw.get(key) or {}
        if not isinstance(value, Mapping):
            raise ConfigError(self.at(key), "must be a mapping of resource name to integer")
        out: dict[str, int] = {}
        for name, amount in value.items():
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise ConfigError(f"{self.at(key)}.{name}", f"must be an integer, got {amount!r}")
            out[str(name)] = amount
        return out

    def str_list(self, key: str) -> list[str]:
        value = self.raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(self.at(key), "must be a list of strings")
        return list(value)

    def sub(self, key: str) -> Fields:
        return Fields(self.raw.get(key), self.at(key))


def check_range(path: str, value: int | float, low: float, high: float, *, open_low: bool = False) -> None:
    """Raise unless value is in [low, high] (or (low, high] with open_low)."""
    ok = (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ConfigError(path, f"must be in {bracket}{low:g}, {high:g}], got {value}")
