"""Checking an object against a CRD's structural schema, as the API server does before storing it.

Objects read from files never met an API server, so the checks it would have made are made here:
a field the schema does not know (the API server's strict field validation, `kubectl apply`'s
default, refuses it), a value outside an `enum`, a wrong JSON type, a missing required field, a
number out of range, a string not matching its `pattern`. Every error is a `FieldError` with the
field's path (`spec.selector.matchExpressions[0].operator`), so one message says what to fix.

The subset of OpenAPI v3 that structural schemas use: `type`, `properties`, `additionalProperties`,
`items`, `required`, `enum`, `minimum`/`maximum`, `pattern`, `format: int32`, `anyOf` of types,
`x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`. `metadata` is the API
server's own business (ObjectMeta) and is only checked to be an object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policies.apis.field_errors import FieldError, invalid, required, unsupported
from policies.apis.suggestions import did_you_mean

_INT32 = (-(2**31), 2**31 - 1)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (Mapping,),
    "array": (list, tuple),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def json_type(value: Any) -> str:
    """The JSON type name of a parsed YAML/JSON value, as the API server names it in errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name in ("object", "array", "string", "integer", "number"):
        if isinstance(value, _JSON_TYPES[name]):
            return name
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "number" and isinstance(value, int):
        return True
    return isinstance(value, _JSON_TYPES.get(name, (object,)))


def _types(schema: Mapping[str, Any]) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    if "anyOf" in schema:
        return [t for option in schema["anyOf"] for t in _types(option)]
    return [schema["type"]] if "type" in schema else []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def unknown_field(path: str, key: str, known: list[str]) -> FieldError:
    return FieldError(_join(path, key), f"unknown field{did_you_mean(key, known)}")


def validate(value: Any, schema: Mapping[str, Any], path: str = "") -> list[FieldError]:
    """Every way `value` breaks `schema`; empty when the API server would accept it."""
    types = _types(schema)
    if value is None:
        return [] if schema.get("nullable") or not types else [invalid(path, "null", f"must be of type {types[0]}")]
    if types and not any(_has_type(value, t) for t in types):
        return [invalid(path, json_type(value), f"must be of type {' or '.join(types)}")]
    errors: list[FieldError] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(unsupported(path, value, [str(v) for v in schema["enum"]]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        errors.extend(_number(value, schema, path))
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(invalid(path, value, f"must match the regular expression '{schema['pattern']}'"))
    if isinstance(value, Mapping):
        errors.extend(_object(value, schema, path))
    if isinstance(value, (list, tuple)) and "items" in schema:
        for index, item in enumerate(value):
            errors.extend(validate(item, schema["items"], f"{path}[{index}]"))
    return errors


def _number(value: int | float, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(invalid(path, value, f"must be greater than or equal to {schema['minimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(invalid(path, value, f"must be less than or equal to {schema['maximum']}"))
    if schema.get("format") == "int32" and not _INT32[0] <= value <= _INT32[1]:
        errors.append(invalid(path, value, "must be a 32-bit integer"))
    return errors


def _object(value: Mapping[Any, Any], schema: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = [required(_join(path, key)) for key in schema.get("required", ()) if key not in value]
    properties: Mapping[str, Any] = schema.get("properties", {})
    additional = schema.get("additionalProperties")
    keep_unknown = schema.get("x-kubernetes-preserve-unknown-fields") or (not properties and additional is None)
    for key, item in value.items():
        key = str(key)
        if key in properties:
            errors.extend(validate(item, properties[key], _join(path, key)))
        elif isinstance(additional, Mapping):
            errors.extend(validate(item, additional, _join(path, key)))
        elif not keep_unknown:
            errors.append(unknown_field(path, key, list(properties)))
    return errors
