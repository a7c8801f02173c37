"""Strategic merge patch (Kubernetes `strategicpatch.StrategicMergePatch`) on plain JSON dicts.

A profile's `patch` is applied to the whole Pod with the Pod type's patch strategies: maps merge
recursively, `null` deletes a key, lists with a merge key merge element by element, other lists are
replaced, and the `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/` and `$setElementOrder/`
directives are honoured. The strategies come from the `patchStrategy`/`patchMergeKey` tags of
k8s.io/api core/v1; fields not listed here (unknown ones included) merge as plain maps and replace as
plain lists, which is what the apimachinery code does for fields without tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.objects import json_copy

PATCH_DIRECTIVE: Final = "$patch"
RETAIN_KEYS_DIRECTIVE: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST_PREFIX: Final = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER_PREFIX: Final = "$setElementOrder/"


class StrategicMergeError(ValueError):
    """The patch cannot be applied (e.g. a list element without its merge key)."""


@dataclass(frozen=True)
class Schema:
    """Patch strategy of one field: child fields for objects, merge behaviour for lists."""

    fields: Mapping[str, Schema] = field(default_factory=dict)
    merge_key: str | None = None  # list of objects merged by this key
    merge_primitives: bool = False  # list of scalars merged as a set
    item: Schema | None = None  # schema of each list element

    def child(self, key: str) -> Schema:
        return self.fields.get(key, _PLAIN)


_PLAIN: Final = Schema()


def _keyed(key: str, item: Schema = _PLAIN) -> Schema:
    return Schema(merge_key=key, item=item)


_CONTAINER: Final = Schema(
    fields={
        "ports": _keyed("containerPort"),
        "env": _keyed("name"),
        "volumeMounts": _keyed("mountPath"),
        "volumeDevices": _keyed("devicePath"),
    }
)
_OBJECT_META: Final = Schema(
    fields={
        "finalizers": Schema(merge_primitives=True),
        "ownerReferences": _keyed("uid"),
    }
)
_POD_SPEC: Final = Schema(
    fields={
        "volumes": _keyed("name"),
        "initContainers": _keyed("name", _CONTAINER),
        "containers": _keyed("name", _CONTAINER),
        "ephemeralContainers": _keyed("name", _CONTAINER),
        "imagePullSecrets": _keyed("name"),
        "hostAliases": _keyed("ip"),
        "topologySpreadConstraints": _keyed("topologyKey"),
        "resourceClaims": _keyed("name"),
        "schedulingGates": _keyed("name"),
    }
)
_POD_STATUS: Final = Schema(
    fields={
        "conditions": _keyed("type"),
        "podIPs": _keyed("ip"),
        "hostIPs": _keyed("ip"),
    }
)
POD_SCHEMA: Final = Schema(fields={"metadata": _OBJECT_META, "spec": _POD_SPEC, "status": _POD_STATUS})
POD_TEMPLATE_SCHEMA: Final = Schema(fields={"metadata": _OBJECT_META, "spec": _POD_SPEC})
RESERVATION_SCHEMA: Final = Schema(
    fields={
        "metadata": _OBJECT_META,
        "spec": Schema(fields={"template": POD_TEMPLATE_SCHEMA, "owners": _PLAIN}),
    }
)


def strategic_merge(original: Mapping[str, Any], patch: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    """Return `original` with `patch` applied; neither argument is modified."""
    return _merge_map(json_copy(dict(original)), patch, schema)


def _merge_map(original: dict[str, Any], patch: Mapping[str, Any], schema: Schema) -> dict[str, Any]:
    directive = patch.get(PATCH_DIRECTIVE)
    if directive == "replace":
        replaced: dict[str, Any] = _clean({k: v for k, v in patch.items() if k != PATCH_DIRECTIVE}, schema)
        return replaced
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise StrategicMergeError(f"unknown patch directive {directive!r}")

    retain = patch.get(RETAIN_KEYS_DIRECTIVE)
    if retain is not None:
        if not isinstance(retain, list):
            raise StrategicMergeError(f"{RETAIN_KEYS_DIRECTIVE} must be a list")
        for key in [k for k in original if k not in retain]:
            del original[key]

    for key, value in patch.items():
        if key in (PATCH_DIRECTIVE, RETAIN_KEYS_DIRECTIVE) or key.startswith(SET_ELEMENT_ORDER_PREFIX):
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX):
            target = key[len(DELETE_FROM_PRIMITIVE_LIST_PREFIX) :]
            if isinstance(original.get(target), list) and isinstance(value, list):
                original[target] = [item for item in original[target] if item not in value]
            continue
        child = schema.child(key)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, Mapping):
            base = original.get(key)
            merged = _merge_map(base if isinstance(base, dict) else {}, value, child)
            if value.get(PATCH_DIRECTIVE) == "delete":
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            base = original.get(key)
            original[key] = _merge_list(base if isinstance(base, list) else [], value, child)
        else:
            original[key] = value
    return original


def _merge_list(original: list[Any], patch: list[Any], schema: Schema) -> list[Any]:
    if schema.merge_primitives:
        return original + [item for item in patch if item not in original]
    if schema.merge_key is None:
        cleaned: list[Any] = _clean(patch, schema)
        return cleaned
    key = schema.merge_key
    item_schema = schema.item or _PLAIN
    if any(isinstance(item, Mapping) and item.get(PATCH_DIRECTIVE) == "replace" for item in patch):
        return [
            _clean(item, item_schema)
            for item in patch
            if not (isinstance(item, Mapping) and item.get(PATCH_DIRECTIVE) == "replace")
        ]
    result = list(original)
    for item in patch:
        if not isinstance(item, Mapping):
            raise StrategicMergeError(f"list merged by {key!r} holds a non-object element {item!r}")
        if key not in item:
            raise StrategicMergeError(f"map: {dict(item)!r} does not contain declared merge key: {key}")
        position = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, Mapping) and existing.get(key) == item[key]
            ),
            None,
        )
        if item.get(PATCH_DIRECTIVE) == "delete":
            if position is not None:
                del result[position]
            continue
        if position is None:
            result.append(_merge_map({}, item, item_schema))
        else:
            result[position] = _merge_map(result[position], item, item_schema)
    return result


def _clean(value: Any, schema: Schema) -> Any:
    """A patch value inserted wholesale, with its directives processed against nothing."""
    if isinstance(value, Mapping):
        return _merge_map({}, value, schema)
    if isinstance(value, list):
        return [_clean(item, schema.item or _PLAIN) for item in value]
    return value
