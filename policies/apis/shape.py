"""The shape of an admitted object, checked once before any plugin reads it.

The API server only sends objects that decoded into their Go types, so a well-formed request never
fails here. What does is a caller that is not the API server, or a broken one: a document nested a
thousand deep, `containers` given as a string, a label that is a list, a quantity of 5,000 digits or
a negative request. Each is answered as a bad request (400) naming the field, never as a plugin's
internal error, and the nesting limit keeps every recursive walk over the object (copy, diff, log)
far from Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

import orjson

from policies.apis.quantity import Quantity, QuantityError

#: far deeper than any Kubernetes object needs (a Pod's deepest path is about 15 levels), far
#: below Python's recursion limit (1000 frames), and the deepest orjson serialises
MAX_DEPTH: Final = 254
_RESOURCE_LISTS: Final = ("requests", "limits")
_CONTAINER_SECTIONS: Final = ("containers", "initContainers")


def depth_error(document: Any, field: str, limit: int = MAX_DEPTH) -> str | None:
    """`field: nested more than N levels deep`; None when within `limit`.

    Every request pays this, so the usual case is settled in C: `orjson.dumps` refuses to go past
    `MAX_DEPTH` levels (about 1.5 us for a typical pod, where the walk below takes 8). A document it
    cannot serialise (too deep, or, from elsewhere than `orjson.loads`, not JSON) and any other
    `limit` get the exact walk, level by level, without recursion.
    """
    if limit == MAX_DEPTH:
        try:
            orjson.dumps(document)
            return None
        except orjson.JSONEncodeError:
            pass
    level = [document]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return f"{field}: nested more than {limit} levels deep"
        deeper = []
        for value in level:
            for child in value.values() if type(value) is dict else value:
                kind = type(child)
                if kind is dict or kind is list:
                    deeper.append(child)
        level = deeper
    return None


#: values in one object a strategic merge may walk: a pod kube-apiserver stores (at most ~1.5 MiB
#: in etcd) holds under 200,000 even when dense (~8 bytes per value, e.g. a long `env` list);
#: 2.7 million empty lists in an 8 MB body cost 3.4 s of merge
MAX_NODES: Final = 250_000


def node_count_error(document: Any, field: str, limit: int = MAX_NODES) -> str | None:
    """`field: more than N values`, counting every value below `document` and stopping at `limit`;
    None within it. Linear in the values counted, so refusing a huge object costs as much as
    counting `limit` values (~30 ms), not as much as walking it. The usual case is settled in C:
    in JSON the values of a container are one more than its commas, so commas + opening brackets
    (inside strings too) bound the count from above."""
    try:
        text = orjson.dumps(document)
        if text.count(b",") + text.count(b"[") + text.count(b"{") <= limit:
            return None
    except orjson.JSONEncodeError:
        pass  # not JSON (or too deep for orjson): count
    count, stack = 0, [document]
    while stack:
        value = stack.pop()
        children = value.values() if type(value) is dict else value
        count += len(children)
        if count > limit:
            return f"{field}: more than {limit} values"
        stack.extend(child for child in children if type(child) is dict or type(child) is list)
    return None


#: the largest amount Kubernetes counts in thousandths (Go's `MilliValue()` is an int64): the
#: plugins convert cpu to milli-cpu, and 1e64 cores used to fail there with a 500
MAX_MILLI: Final = 2**63 - 1
#: resource quantities in one pod (requests, limits, overhead): each is parsed on the event loop
#: (~10 us), by this check and by the plugins, so 100,000 of them, well within MAX_NODES, cost 2-4 s
#: of blocking CPU; a pod kube-apiserver runs has tens. As many as `_quantity_error` remembers, so
#: that the check after a profile's patch finds every one of them parsed already
MAX_QUANTITIES: Final = 4096


@lru_cache(maxsize=MAX_QUANTITIES, typed=True)  # typed: True == 1.0 in a dict, and True is no quantity
def _quantity_error(amount: str | int | float) -> str | None:
    try:
        quantity = Quantity.parse(amount)
    except QuantityError as exc:
        return str(exc)
    if quantity.nanos < 0:
        return "must be greater than or equal to 0"
    if quantity.milli_value() > MAX_MILLI:
        return f"must be at most {MAX_MILLI}m"
    return None


def _string_map(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{field}: must be an object, got {type(value).__name__}"
    for key, item in value.items():
        if not isinstance(item, str):
            return f"{field}.{key[:63]}: must be a string, got {type(item).__name__}"
    return None


def _resource_list(value: Any) -> str | None:
    """What follows the field's name in the error (`: ...` or `.<name>: ...`), or None; the caller
    names the field only when there is an error, since every container of every pod passes here."""
    if not isinstance(value, dict):
        return f": must be an object, got {type(value).__name__}"
    for name, amount in value.items():
        error = (
            _quantity_error(amount)
            if isinstance(amount, (str, int, float))
            else f"quantities must be strings or numbers, got {type(amount).__name__}"
        )
        if error:
            return f".{name[:63]}: {error}"
    return None


def metadata_error(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return f"metadata: must be an object, got {type(metadata).__name__}"
    return _string_map(metadata.get("labels"), "metadata.labels") or _string_map(
        metadata.get("annotations"), "metadata.annotations"
    )


def _containers_error(section: str, containers: Any) -> str | None:
    if not isinstance(containers, list):
        return f"spec.{section}: must be a list, got {type(containers).__name__}"
    for index, container in enumerate(containers):
        if not isinstance(container, dict):
            return f"spec.{section}[{index}]: must be an object, got {type(container).__name__}"
        resources = container.get("resources")
        if resources is None:
            continue
        if not isinstance(resources, dict):
            return f"spec.{section}[{index}].resources: must be an object, got {type(resources).__name__}"
        for key in _RESOURCE_LISTS:
            value = resources.get(key)
            if value is not None and (error := _resource_list(value)):
                return f"spec.{section}[{index}].resources.{key}{error}"
    return None


def _quantity_count(spec: Mapping[str, Any]) -> int:
    """The quantities a pod's requests, limits and overhead hold (whatever their shape)."""
    overhead = spec.get("overhead")
    count = len(overhead) if isinstance(overhead, dict) else 0
    for section in _CONTAINER_SECTIONS:
        containers = spec.get(section)
        if not isinstance(containers, list):
            continue
        for container in containers:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                for key in _RESOURCE_LISTS:
                    amounts = resources.get(key)
                    count += len(amounts) if isinstance(amounts, dict) else 0
    return count


def pod_error(pod: Mapping[str, Any]) -> str | None:
    """What of a Pod the plugins read is not shaped as in `core/v1`, or None."""
    error = metadata_error(pod)
    if error:
        return error
    spec = pod.get("spec")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return f"spec: must be an object, got {type(spec).__name__}"
    if _quantity_count(spec) > MAX_QUANTITIES:
        return f"spec: more than {MAX_QUANTITIES} resource quantities in its containers' requests and limits"
    overhead = spec.get("overhead")
    if overhead is not None and (error := _resource_list(overhead)):
        return f"spec.overhead{error}"
    for section in _CONTAINER_SECTIONS:
        containers = spec.get(section)
        if containers is not None and (error := _containers_error(section, containers)):
            return error
    return None


def pod_structure_error(pod: Mapping[str, Any]) -> str | None:
    """What a mutated pod lacks to still be a Pod kube-apiserver stores (a name, a spec, at least
    one container, each container an object with a name), or its shape error; None when sound.
    Checked after a profile's patch: `containers: null`, `spec: {$patch: delete}` or
    `metadata: {name: null}` would otherwise be admitted, and `containers: "oops"` crash later steps."""
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        return "metadata: Required value"
    if not any(isinstance(metadata.get(key), str) and metadata[key] for key in ("name", "generateName")):
        return "metadata.name: Required value"
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return "spec: Required value"
    for section in _CONTAINER_SECTIONS:
        containers = spec.get(section)
        if containers is None and section == "initContainers":
            continue
        if containers is None:
            return f"spec.{section}: Required value"
        if not isinstance(containers, list):
            return f"spec.{section}: must be a list, got {type(containers).__name__}"
        if not containers and section == "containers":
            return "spec.containers: Required value: a pod needs at least one container"
        for index, container in enumerate(containers):
            if not isinstance(container, dict):
                return f"spec.{section}[{index}]: must be an object, got {type(container).__name__}"
            if not isinstance(container.get("name"), str) or not container["name"]:
                return f"spec.{section}[{index}].name: Required value"
    return pod_error(pod)


def object_error(kind: str, obj: Mapping[str, Any], field: str = "object") -> str | None:
    """`field...: why` when `obj` (of `kind`, already known to be within `MAX_DEPTH`) cannot be
    admitted as sent, else None."""
    error = pod_error(obj) if kind == "Pod" else metadata_error(obj)
    return f"{field}.{error}" if error else None
