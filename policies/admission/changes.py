"""JSON patch operations told as people read them: `metadata.labels[koordinator.sh/qosClass]: "LS" -> "BE"`.

What the audit reports of a drifted pod and what a warn-only profile's warning says it would do are
both a patch between two versions of an object; this module is how either is shown, in one
vocabulary: a field path in the style of Kubernetes' field errors, the value now and the value the
profiles would give (`(none)` for an absent field).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

ABSENT: Final = "(none)"
_MAX_VALUE: Final = 80


def pointer_tokens(pointer: str) -> list[str]:
    """The unescaped reference tokens of an RFC 6901 pointer (`~1` is `/`, `~0` is `~`)."""
    if not pointer:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer.lstrip("/").split("/")]


def readable_path(pointer: str) -> str:
    """`/spec/containers/0/resources/requests/cpu` -> `spec.containers[0].resources.requests.cpu`;
    a key with a dot or slash in it is bracketed: `metadata.labels[koordinator.sh/qosClass]`."""
    text = ""
    for token in pointer_tokens(pointer):
        if token.isdigit() or "." in token or "/" in token or not token:
            text += f"[{token}]"
        else:
            text += f".{token}" if text else token
    return text


def value_at(document: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value) of `pointer` in `document`."""
    current = document
    for token in pointer_tokens(pointer):
        if isinstance(current, Mapping) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            return False, None
    return True, current


def overlaps(first: str, second: str) -> bool:
    """Whether two pointers name the same field or one contains the other."""
    a, b = pointer_tokens(first), pointer_tokens(second)
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def short_value(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


@dataclass(frozen=True, slots=True)
class Change:
    """One field that differs: its readable path, its value now and the value it would get."""

    pointer: str
    path: str
    before: Any  # None when absent (`had_before` False)
    after: Any  # None when removed (`has_after` False)
    had_before: bool = True
    has_after: bool = True

    def __str__(self) -> str:
        before = short_value(self.before) if self.had_before else ABSENT
        after = short_value(self.after) if self.has_after else ABSENT
        return f"{self.path}: {before} -> {after}"

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": self.path}
        if self.had_before:
            entry["actual"] = self.before
        if self.has_after:
            entry["expected"] = self.after
        return entry


def changes_of(before: Any, operations: Iterable[Mapping[str, Any]]) -> list[Change]:
    """The patch `operations` (from `before` to some later document) as Changes."""
    changes = []
    for op in operations:
        pointer = str(op.get("path", ""))
        had, old = value_at(before, pointer)
        adds = op.get("op") in ("add", "replace")
        changes.append(Change(pointer, readable_path(pointer), old, op.get("value") if adds else None, had, adds))
    return changes


def summary(changes: Sequence[Change], limit: int = 4) -> str:
    """`a: x -> y, b: (none) -> z, and 3 more`."""
    shown = ", ".join(str(c) for c in changes[:limit])
    more = len(changes) - limit
    return shown + (f", and {more} more" if more > 0 else "")
