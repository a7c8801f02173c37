"""Kubernetes field-error text (`k8s.io/apimachinery/pkg/util/validation/field`).

`<path>: <type>: <detail>`; several errors aggregate as `[e1, e2]`, a single one stands bare.
Koordinator's validation messages are built this way, so users (and scripts) see the same text.
"""
from __future__ import annotations

import json
from dataclasses import dataclass


def _format_value(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # Go's %q for plain text
    return str(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    body: str

    def __str__(self) -> str:
        return f"{self.path}: {self.body}"


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {_format_value(value)}" + (f": {detail}" if detail else ""))


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required value" + (f": {detail}" if detail else ""))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def aggregate(errors: list[FieldError]) -> str:
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"
