"""Kubernetes objects from YAML or JSON text (multi-document YAML, `List` and typed `*List` kinds).

Text is operator input and may be hostile or broken; whatever it does is a `ManifestError` of one
line, `file:line:column: message` where the parser knows the position:

* a syntax error names its position (YAML's and JSON's own marks);
* nesting deeper than `MAX_DEPTH` (which every later walk over the object relies on), and the
  RecursionError a parser raises on far deeper input, are errors, not tracebacks;
* YAML aliases may add at most `MAX_ALIAS_NODES` nodes to a file once expanded: a 701-byte
  "billion laughs" document expands to millions of nodes wherever it is copied or serialised
  (go-yaml, which kube-apiserver uses, refuses such documents as "excessive aliasing" too), and an
  alias that contains itself is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

import yaml

from policies.apis.shape import MAX_DEPTH

try:  # libyaml is several times faster when present
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: nodes that aliases may add to one file once expanded (a legitimate file adds a few dozen)
MAX_ALIAS_NODES: Final = 100_000


class ManifestError(ValueError):
    """A file that does not parse, or holds something that is not a Kubernetes object."""


def _expand(document: Any, where: str) -> Iterator[dict[str, Any]]:
    if document is None:
        return
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: expected a Kubernetes object, got {type(document).__name__}")
    kind = str(document.get("kind", ""))
    if kind.endswith("List") and isinstance(document.get("items"), list):
        item_kind = kind[: -len("List")]  # a typed list's items carry no kind (as the API server lists them)
        for index, item in enumerate(document["items"]):
            if isinstance(item, dict) and "kind" not in item and item_kind:
                item = {**item, "kind": item_kind}
            yield from _expand(item, f"{where} items[{index}]")
        return
    yield document


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _syntax_error(source: str, exc: Exception) -> ManifestError:
    """`source:line:column: message` (1-based, as editors count) when the parser has a position."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark, message = exc.problem_mark, exc.problem or "invalid YAML"
        if exc.context:
            started = exc.context_mark
            at = f" at {started.line + 1}:{started.column + 1}" if started is not None and started != mark else ""
            message = f"{message} ({exc.context}{at})"
        return ManifestError(f"{source}:{mark.line + 1}:{mark.column + 1}: {_one_line(message)}")
    if isinstance(exc, json.JSONDecodeError):
        return ManifestError(f"{source}:{exc.lineno}:{exc.colno}: {exc.msg}")
    return ManifestError(f"{source}: {_one_line(str(exc))}")


def _containers(node: Any) -> Iterator[Any]:
    for child in node.values() if type(node) is dict else node:
        if type(child) is dict or type(child) is list:
            yield child


def expansion_error(document: Any) -> str | None:
    """Why `document` is refused (too deep; aliases that expand too far or contain themselves),
    or None. One pass over the distinct containers: a shared (aliased) one is measured once."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (nodes once expanded, depth)
    open_ids: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if type(node) is not dict and type(node) is not list:
            continue
        if closing:
            open_ids.discard(key)
            size, depth = 1 + len(node), 1
            for child in _containers(node):
                child_size, child_depth = measured[id(child)]
                size, depth = size + child_size - 1, max(depth, child_depth + 1)
            measured[key] = (size, depth)
            if depth > MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep"
            if size - distinct > MAX_ALIAS_NODES:
                return f"aliases expand to more than {MAX_ALIAS_NODES} extra nodes"
            continue
        if key in measured:
            continue
        if key in open_ids:
            return "an alias contains itself"
        open_ids.add(key)
        distinct += 1 + len(node)
        stack.append((node, True))
        stack.extend((child, False) for child in _containers(node) if id(child) not in measured)
    return None


def parse_documents(text: str, source: str) -> list[Any]:
    """The documents of `text` as written (a `List` stays one document; empty documents dropped);
    JSON when `source` ends in .json, YAML (several documents) otherwise."""
    try:
        if source.endswith(".json"):
            documents = [json.loads(text)]
        else:
            documents = list(yaml.load_all(text, Loader=_Loader))
    except RecursionError:
        raise ManifestError(f"{source}: nested too deeply to parse (more than {MAX_DEPTH} levels allowed)") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise _syntax_error(source, exc) from exc
    kept = []
    for index, document in enumerate(documents):
        if document is None:
            continue
        error = expansion_error(document)
        if error is not None:
            where = source if len(documents) == 1 else f"{source} document {index}"
            raise ManifestError(f"{where}: {error}")
        kept.append(document)
    return kept


def document_objects(document: Any, where: str) -> list[dict[str, Any]]:
    """The objects of one document: itself, or the items of a `List` (recursively)."""
    return list(_expand(document, where))


def parse_manifest_text(text: str, source: str) -> list[dict[str, Any]]:
    """Every object in `text`; JSON when `source` ends in .json, YAML (several documents) otherwise."""
    objects: list[dict[str, Any]] = []
    for index, document in enumerate(parse_documents(text, source)):
        objects.extend(_expand(document, f"{source} document {index}"))
    return objects
