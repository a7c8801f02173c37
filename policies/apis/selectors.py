"""Kubernetes label selectors, compiled once and evaluated on plain label dicts.

A selector that does not validate (an unknown operator, `In` without values, a malformed key) is
kept as an `InvalidSelector`: Koordinator keeps a profile whose selector fails to parse *as matched*
(`pkg/webhook/pod/mutating/cluster_colocation_profile.go`: a profile whose selector cannot be read
matches, a quirk docs/koordinator.md keeps), so the caller needs to know that the selector was
invalid rather than having it silently match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.field_errors import ConfigError, FieldError, forbidden, invalid, required
from policies.apis.names import DNS1123_SUBDOMAIN_RE

_NAME_RE: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def label_key_error(key: str) -> str | None:
    """Why `key` is not a valid qualified label key, or None."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN_RE.match(prefix):
            return f"prefix part of {key!r} must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _NAME_RE.match(name):
        return (
            f"name part of {key!r} must consist of at most 63 alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if value == "":
        return None
    if len(value) > 63 or not _NAME_RE.match(value):
        return (
            f"{value!r} must be no more than 63 characters, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A valid selector; the empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.requirements:
            if not requirement.matches(labels):
                return False
        return True


@dataclass(frozen=True, slots=True)
class InvalidSelector:
    """A selector that failed validation; `error` says which field and why."""

    error: str
    is_empty: bool = False


class SelectorShapeError(ConfigError):
    """The selector is not even shaped like a LabelSelector (wrong JSON types)."""


def compile_selector(raw: Any, path: str) -> LabelSelector | InvalidSelector:
    """Compile a LabelSelector JSON object.

    Wrong JSON types raise `SelectorShapeError` (the API server's schema would refuse them);
    well-typed but semantically invalid selectors become `InvalidSelector`.
    """
    if raw is None:
        return LabelSelector()
    if not isinstance(raw, Mapping):
        raise SelectorShapeError.of(invalid(path, detail="must be an object"))
    match_labels = raw.get("matchLabels") or {}
    expressions = raw.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in match_labels.items()
    ):
        raise SelectorShapeError.of(invalid(f"{path}.matchLabels", detail="must map strings to strings"))
    if not isinstance(expressions, list):
        raise SelectorShapeError.of(invalid(f"{path}.matchExpressions", detail="must be a list"))
    problems: list[FieldError] = []
    for key, value in match_labels.items():
        if (error := label_key_error(key) or label_value_error(value)) is not None:
            problems.append(invalid(f"{path}.matchLabels", detail=error))
    requirements: list[Requirement] = []
    for index, expression in enumerate(expressions):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(expression, Mapping):
            raise SelectorShapeError.of(invalid(where, detail="must be an object"))
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if (
            not isinstance(key, str)
            or not isinstance(operator, str)
            or not isinstance(values, list)
            or not all(isinstance(v, str) for v in values)
        ):
            raise SelectorShapeError.of(
                invalid(where, detail="key and operator must be strings, values a list of strings")
            )
        if (error := label_key_error(key)) is not None:
            problems.append(invalid(f"{where}.key", detail=error))
        if operator not in _OPERATORS:
            problems.append(invalid(f"{where}.operator", detail=f"{operator!r} is not a valid label selector operator"))
        elif operator in ("In", "NotIn") and not values:
            problems.append(required(f"{where}.values", "for 'in', 'notin' operators, values set can't be empty"))
        elif operator in ("Exists", "DoesNotExist") and values:
            problems.append(forbidden(f"{where}.values", "values set must be empty for exists and does not exist"))
        requirements.append(Requirement(key, operator, frozenset(values)))
    if problems:
        return InvalidSelector("; ".join(map(str, problems)))
    return LabelSelector(tuple(sorted(match_labels.items())), tuple(requirements))
