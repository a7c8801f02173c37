"""Field errors: what is wrong with a document, and where (`k8s.io/apimachinery/pkg/util/validation/field`).

The one mechanism for every document parsed at the boundary: admitted objects, ClusterColocationProfiles,
the scheduler's configuration and its plugin args.

* `FieldError` — one error as a value, `<path>: <detail>`. `invalid`, `required`, `forbidden` and
  `unsupported` write Kubernetes' typed details (`Invalid value: "x": ...`), so users (and scripts)
  see the text Koordinator prints; a free detail (`must be an integer, got 'x'`) is a FieldError too.
* `aggregate` — several errors as Kubernetes prints an ErrorList: `[e1, e2]`, a single one bare.
* `ConfigError` — the exception a parser raises; it carries its FieldErrors.
* `Fields` — a typed reader of a mapping under a path; a wrong field raises ConfigError naming it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Self, overload

from policies.apis.durations import parse_duration
from policies.apis.suggestions import did_you_mean


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    body: str

    def __str__(self) -> str:
        return f"{self.path}: {self.body}" if self.path else self.body


def _format_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # Go's %q for plain text
    return str(value)


_OMITTED: Final = object()


def invalid(path: str, value: object = _OMITTED, detail: str = "") -> FieldError:
    """`Invalid value: <value>: <detail>`; the value is left out when the field has none to show
    (a wrong JSON type)."""
    text = "Invalid value" if value is _OMITTED else f"Invalid value: {_format_value(value)}"
    return FieldError(path, text + (f": {detail}" if detail else ""))


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def unsupported(path: str, value: object, supported: Iterable[str]) -> FieldError:
    return FieldError(
        path, f"Unsupported value: {_format_value(value)}: supported values: " + ", ".join(f'"{s}"' for s in supported)
    )


def aggregate(errors: list[FieldError]) -> str:
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


class ConfigError(ValueError):
    """A document parsed at the boundary has a wrong field: `<path>: <message>`.

    `errors` holds every FieldError found (one, unless a subclass collects several); `path` and
    `detail` are the first one's."""

    errors: tuple[FieldError, ...]

    def __init__(self, path: str, message: str) -> None:
        self.errors = (FieldError(path, message),)
        super().__init__(str(self.errors[0]))

    @classmethod
    def of(cls, error: FieldError) -> Self:
        return cls(error.path, error.body)

    @classmethod
    def every(cls, errors: Iterable[FieldError]) -> Self:
        """One error carrying all of `errors`, printed as Kubernetes prints an ErrorList (`[e1, e2]`),
        so that one run names every mistake of a document, as `kubectl apply --validate=strict` does."""
        found = tuple(errors)
        assert found, "every() needs at least one error"
        error = cls(found[0].path, found[0].body)
        error.errors = found
        error.args = (aggregate(list(found)),)
        return error

    @property
    def path(self) -> str:
        return self.errors[0].path if self.errors else ""

    @property
    def detail(self) -> str:
        return self.errors[0].body if self.errors else ""


class Fields:
    """A mapping under a path: `Fields(raw, "args").int("weight", 1)`. Keys are matched exactly (the
    YAML spelling); a present but wrongly typed value raises ConfigError naming the field."""

    def __init__(self, raw: Any, path: str) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(path, f"must be a mapping, got {type(raw).__name__}")
        self.raw: Mapping[Any, Any] = raw
        self.path = path

    def at(self, key: builtins.str) -> builtins.str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: builtins.str) -> builtins.bool:
        return self.raw.get(key) is not None

    def bool(self, key: builtins.str, default: builtins.bool) -> builtins.bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, builtins.bool):
            raise ConfigError(self.at(key), f"must be a boolean, got {value!r}")
        return value

    @overload
    def int(self, key: builtins.str, default: builtins.int) -> builtins.int: ...

    @overload
    def int(self, key: builtins.str, default: None) -> builtins.int | None: ...

    def int(self, key: builtins.str, default: builtins.int | None) -> builtins.int | None:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
            raise ConfigError(self.at(key), f"must be an integer, got {value!r}")
        return value

    def str(self, key: builtins.str, default: builtins.str = "") -> builtins.str:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, builtins.str):
            raise ConfigError(self.at(key), f"must be a string, got {value!r}")
        return value

    def duration(self, key: builtins.str, default: float = 0.0) -> float:
        """A Go duration ("5m") in seconds."""
        value = self.raw.get(key)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ConfigError(self.at(key), builtins.str(exc)) from exc

    def int_map(self, key: builtins.str) -> dict[builtins.str, builtins.int]:
        value = self.raw.get(key) or {}
        if not isinstance(value, Mapping):
            raise ConfigError(self.at(key), "must be a mapping of resource name to integer")
        out: dict[builtins.str, builtins.int] = {}
        for name, amount in value.items():
            if isinstance(amount, builtins.bool) or not isinstance(amount, builtins.int):
                raise ConfigError(f"{self.at(key)}.{name}", f"must be an integer, got {amount!r}")
            out[builtins.str(name)] = amount
        return out

    def str_list(self, key: builtins.str) -> list[builtins.str]:
        value = self.raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, builtins.str) for v in value):
            raise ConfigError(self.at(key), "must be a list of strings")
        return list(value)

    def sub(self, key: builtins.str) -> Fields:
        return Fields(self.raw.get(key), self.at(key))

    def unknown(self, known: Iterable[builtins.str]) -> list[FieldError]:
        """Every key outside `known`, each an error naming its path and the spelling it was probably
        meant to be: `<path>.mesage: unknown field (did you mean "message"?)`, else the supported keys."""
        allowed = tuple(known)
        errors = []
        for key in self.raw:
            if key not in allowed:
                hint = did_you_mean(builtins.str(key), allowed) or f" (supported: {', '.join(allowed)})"
                errors.append(FieldError(self.at(builtins.str(key)), f"unknown field{hint}"))
        return errors

    def only(self, known: Iterable[builtins.str]) -> None:
        """Refuse every key outside `known`, as Kubernetes' strict decoding does: a typo such as
        `mesage:` must not be read as an absent field."""
        errors = self.unknown(known)
        if errors:
            raise ConfigError.every(errors)


def check_range(path: str, value: int | float, low: float, high: float, *, open_low: bool = False) -> None:
    """Raise ConfigError unless value is in [low, high] (or (low, high] with open_low)."""
    ok = (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise ConfigError(path, f"must be in {bracket}{low:g}, {high:g}], got {value}")
