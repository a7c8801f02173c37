"""Kubernetes objects from YAML or JSON text (multi-document YAML, `List` and typed `*List` kinds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

try:  # libyaml is several times faster when present
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


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


def parse_documents(text: str, source: str) -> list[Any]:
    """The documents of `text` as written (a `List` stays one document; empty documents dropped);
    JSON when `source` ends in .json, YAML (several documents) otherwise."""
    try:
        if source.endswith(".json"):
            documents = [json.loads(text)]
        else:
            documents = list(yaml.load_all(text, Loader=_Loader))
    except (ValueError, yaml.YAMLError) as exc:
        raise ManifestError(f"{source}: {exc}") from exc
    return [d for d in documents if d is not None]


def document_objects(document: Any, where: str) -> list[dict[str, Any]]:
    """The objects of one document: itself, or the items of a `List` (recursively)."""
    return list(_expand(document, where))


def parse_manifest_text(text: str, source: str) -> list[dict[str, Any]]:
    """Every object in `text`; JSON when `source` ends in .json, YAML (several documents) otherwise."""
    objects: list[dict[str, Any]] = []
    for index, document in enumerate(parse_documents(text, source)):
        objects.extend(_expand(document, f"{source} document {index}"))
    return objects
