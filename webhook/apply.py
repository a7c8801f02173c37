"""`colocate apply`: the server's admission chain, offline, on one object.

Exit codes: 0 admitted (the resulting object on stdout), 1 denied (the reason on stderr, the same
text the webhook would answer), 2 bad input or usage.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from policies.manifests import ManifestError, parse_manifest_text
from webhook.chain import ChainResult, UnknownKind, request_for, run_chain
from webhook.registry import default_routes
from webhook.snapshots import DirectorySnapshots

EXIT_ADMITTED, EXIT_DENIED, EXIT_BAD_INPUT = 0, 1, 2
OPERATIONS = ("CREATE", "UPDATE", "DELETE")


@dataclass(frozen=True)
class ApplyOptions:
    profiles: Path
    file: str
    operation: str = "CREATE"
    old_object: str | None = None
    output: str = "json"
    explain: bool = False


class BadInput(ValueError):
    pass


def read_single_object(location: str, stdin: TextIO) -> dict[str, Any]:
    """The one Kubernetes object in a file (`-` = stdin), YAML or JSON."""
    if location == "-":
        text, source = stdin.read(), "<stdin>"
    else:
        try:
            text, source = Path(location).read_text(encoding="utf-8"), location
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read {location}: {exc}") from exc
    try:
        objects = parse_manifest_text(text, source if source.endswith(".json") else f"{source}.yaml")
    except ManifestError as exc:
        raise BadInput(str(exc)) from exc
    if len(objects) != 1:
        raise BadInput(f"{source}: expected exactly one object, found {len(objects)}")
    return objects[0]


def format_explanation(result: ChainResult) -> str:
    matched, effects = result.matched_profiles, result.effects
    lines = [f"webhooks called, in order: {', '.join(result.called) if result.called else '(none)'}"]
    lines.extend(f"not called: {name}: {why}" for name, why in result.not_called)
    lines.append(f"matched profiles, in the order applied: {', '.join(matched) if matched else '(none)'}")
    for effect in effects:
        if not effect.applied:
            lines.append(f"{effect.step}: matched but skipped by its probability")
            continue
        if not effect.changes and not effect.step.startswith("profile/"):
            continue
        count = f"{len(effect.changes)} change(s)" if effect.changes else "no change"
        lines.append(f"{effect.step}: {count}")
        for change in effect.changes:
            value = f" {json.dumps(change['value'])}" if "value" in change else ""
            lines.append(f"  {change['op']} {change['path']}{value}")
    return "\n".join(lines)


def run_apply(options: ApplyOptions, stdin: TextIO | None = None, stdout: TextIO | None = None,
              stderr: TextIO | None = None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    registry = default_routes()
    try:
        if options.operation not in OPERATIONS:
            raise BadInput(f"--operation must be one of {', '.join(OPERATIONS)}")
        obj = read_single_object(options.file, stdin)
        old = read_single_object(options.old_object, stdin) if options.old_object else None
        if options.operation == "UPDATE" and old is None:
            raise BadInput("--operation UPDATE needs --old-object")
        if options.operation == "DELETE" and old is None:
            old = obj
        snapshot = DirectorySnapshots(options.profiles).scan()
        assert snapshot is not None  # the first scan always builds one
        request = request_for(obj, registry, options.operation, old)
    except (BadInput, ManifestError, UnknownKind) as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    for problem in snapshot.problems:
        print(f"warning: {problem.source}: {problem.message}", file=stderr)
    result = run_chain(request, registry, snapshot, explain=options.explain)
    if options.explain:
        print(format_explanation(result), file=stderr)
    for warning in result.warnings:  # as kubectl prints an AdmissionResponse's warnings
        print(f"Warning: {warning}", file=stderr)
    if not result.allowed:
        print(f"denied by {result.denied_by} (code {result.code}): {result.message}", file=stderr)
        return EXIT_DENIED
    final = result.object if options.operation != "DELETE" else old
    if options.output == "yaml":
        stdout.write(yaml.safe_dump(final, sort_keys=False))
    else:
        stdout.write(json.dumps(final, indent=2) + "\n")
    return EXIT_ADMITTED
