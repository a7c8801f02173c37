"""What `-f` reads, like kubectl: files, directories (recursively), `-` (stdin), multi-document YAML,
JSON, and `List`s, each document kept as written so that a command can write its results back in
the same shape (`write_documents`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from colocate.cluster.files import list_manifests, read_manifest_text
from policies.apis.manifests import ManifestError, document_objects, parse_documents

STDIN = "-"


@dataclass(frozen=True)
class Document:
    """One document of the input: an object, or a `List` of them, and where it came from."""

    source: str
    raw: dict[str, Any]
    objects: tuple[dict[str, Any], ...]

    @property
    def is_list(self) -> bool:
        return len(self.objects) != 1 or self.objects[0] is not self.raw


def read_documents(locations: Sequence[str], stdin: TextIO) -> list[Document]:
    """Every document of every location, in order; a location that cannot be read (missing, not a
    regular file, past a limit, not UTF-8, not parsing) is a `ManifestError` of one line."""
    documents: list[Document] = []
    for location in locations:
        if location == STDIN:
            documents.extend(_parse(stdin.read(), "<stdin>"))
            continue
        path = Path(location)
        files = [path]
        if path.is_dir():
            listing = list_manifests(path)  # ScanError (a limit) is the caller's one-line error
            if listing.problems:  # what a live reload would skip (a FIFO, a link out) is an error here
                first = listing.problems[0]
                raise ManifestError(f"{first.source}: {first.message}")
            files = sorted(listing.files)
            if not files:
                raise ManifestError(f"{location}: no .yaml, .yml or .json files")
        for file in files:
            documents.extend(_parse(read_manifest_text(file), str(file)))
    return documents


def _parse(text: str, source: str) -> list[Document]:
    parsed = []
    for index, raw in enumerate(parse_documents(text, source)):
        where = source if index == 0 else f"{source} document {index}"
        objects = tuple(document_objects(raw, where))
        parsed.append(Document(source, raw, objects))
    return parsed


def objects_of(documents: Sequence[Document]) -> list[dict[str, Any]]:
    return [obj for document in documents for obj in document.objects]


def write_documents(
    documents: Sequence[Document],
    transform: Callable[[dict[str, Any]], dict[str, Any] | None],
    output: str,
    stream: TextIO,
) -> None:
    """Write each document back with its objects transformed (None drops an object), in its shape.

    One object in, one object out; a `List` stays a `List`. Several documents are several YAML
    documents, or, in JSON, one `List` of every object (as `kubectl get -o json` prints them).
    """
    shaped: list[dict[str, Any]] = []
    for document in documents:
        results = [r for r in (transform(obj) for obj in document.objects) if r is not None]
        if document.is_list:
            shaped.append({**document.raw, "items": results})
        elif results:
            shaped.append(results[0])
    if not shaped:  # every object was dropped
        return
    if output == "yaml":
        stream.write(yaml.safe_dump_all(shaped, sort_keys=False))
    elif len(documents) == 1:
        stream.write(json.dumps(shaped[0], indent=2) + "\n")
    else:
        items = [item for doc in shaped for item in (doc["items"] if doc.get("kind") == "List" else [doc])]
        stream.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n")
