"""RFC 6902 patch between two JSON documents.

Faster than a generic diff because it skips shared subtrees by identity and only descends where the
documents are distinct objects; lists of equal length are compared element by element, other list
changes replace the list. Keys are escaped
per RFC 6901 (`~` -> `~0`, `/` -> `~1`), which matters for label keys such as
`koordinator.sh/qosClass`.
"""

from __future__ import annotations

from typing import Any, Final

#: escaped tokens seen before: the same label and resource keys recur in every patch. Bounded, since
#: requests choose keys: past `_ESCAPED_MAX` entries, or for a long key, the token is escaped anew.
#: Final, so that compiled (colocate/cluster/compiled.py) each use is a C static, not a lookup of
#: the module's globals: `_diff_dict` reads `_MISSING` and `_ESCAPED` for every key it walks.
_ESCAPED: Final[dict[str, str]] = {}
_ESCAPED_MAX: Final = 4096
_ESCAPED_LONGEST: Final = 128
_MISSING: Final[Any] = object()


def escape_pointer_token(token: str) -> str:
    escaped = _ESCAPED.get(token)
    if escaped is None:
        escaped = token.replace("~", "~0").replace("/", "~1")
        if len(_ESCAPED) < _ESCAPED_MAX and len(token) <= _ESCAPED_LONGEST:
            _ESCAPED[token] = escaped
    return escaped


def diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """Operations that turn `before` into `after` (empty when they are equal)."""
    operations: list[dict[str, Any]] = []
    if before is not after:
        _diff(before, after, "", operations)
    return operations


def _diff(before: Any, after: Any, path: str, out: list[dict[str, Any]]) -> None:
    # Identity first: mutators work on a copy that shares every untouched subtree with the original,
    # so `is` settles most of the document without comparing it; containers that are distinct
    # objects are walked rather than compared with `==` (which would walk them again at every level).
    # Callers never pass identical values; scalars are compared in place rather than by a call.
    kind = type(before)
    if kind is not type(after):
        out.append({"op": "replace", "path": path, "value": after})
    elif kind is dict:
        _diff_dict(before, after, path, out)
    elif kind is list and len(before) == len(after):
        _diff_list(before, after, path, out)
    elif before != after:
        out.append({"op": "replace", "path": path, "value": after})


# The two walks take typed containers: compiled (colocate/cluster/compiled.py), they then use the dict and
# list C API directly instead of the generic object protocol.
def _diff_dict(before: dict[str, Any], after: dict[str, Any], path: str, out: list[dict[str, Any]]) -> None:
    for key in before:
        if key not in after:
            out.append({"op": "remove", "path": f"{path}/{_ESCAPED.get(key) or escape_pointer_token(key)}"})
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is value:
            continue
        if old is _MISSING:
            out.append(
                {"op": "add", "path": f"{path}/{_ESCAPED.get(key) or escape_pointer_token(key)}", "value": value}
            )
            continue
        leaf = type(old)
        if leaf is dict or leaf is list or leaf is not type(value):
            _diff(old, value, f"{path}/{_ESCAPED.get(key) or escape_pointer_token(key)}", out)
        elif old != value:
            out.append(
                {"op": "replace", "path": f"{path}/{_ESCAPED.get(key) or escape_pointer_token(key)}", "value": value}
            )


def _diff_list(before: list[Any], after: list[Any], path: str, out: list[dict[str, Any]]) -> None:
    for index, old in enumerate(before):
        value = after[index]
        if old is value:
            continue
        leaf = type(old)
        if leaf is dict or leaf is list or leaf is not type(value):
            _diff(old, value, f"{path}/{index}", out)
        elif old != value:
            out.append({"op": "replace", "path": f"{path}/{index}", "value": value})
