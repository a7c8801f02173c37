"""`colocate apply`: the server's admission chain, offline, on the objects of `-f`.

`-f` reads like kubectl's (files, directories, `-`, multi-document YAML, `List`s); every object is
admitted against the cluster state of `--cluster DIR` or, with `--kubeconfig/--context`, of the API
server (the profiles, namespaces and priority classes the routes read, listed once, as `serve`
lists them). The admitted objects are written back in the shape they came in.

Exit codes: 0 all admitted (the resulting objects on stdout), 1 one or more denied (each reason on
stderr, the same text the webhook would answer; the others are still printed), 2 bad input or usage.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from colocate.cluster.files import ScanError
from colocate.cluster.inputs import STDIN, Document, objects_of, read_documents, write_documents
from policies.admission.patch_risks import sensitive_fields
from policies.admission.plugin import AdmissionRequest
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.manifests import ManifestError
from policies.apis.selectors import LabelSelector
from webhook.chain import ChainResult, UnknownKind, request_for, run_chain
from webhook.registry import Registry, default_routes
from webhook.snapshots import ApiServerSnapshots, DirectorySnapshots
from webhook.watched import watched_kinds

EXIT_ADMITTED, EXIT_DENIED, EXIT_BAD_INPUT = 0, 1, 2
OPERATIONS = ("CREATE", "UPDATE", "DELETE")


@dataclass(frozen=True)
class ApplyOptions:
    files: tuple[str, ...]
    cluster: Path | None = None
    kubeconfig: Path | None = None
    context: str | None = None
    operation: str = "CREATE"
    old_object: str | None = None
    output: str = "json"
    explain: bool = False
    refuse_sensitive_patches: bool = False
    strict: bool = False  # a problem with the cluster state (an invalid profile, say) fails the run
    #: installed admission plugins to enable (`--admission-plugins`, `webhook.plugins`)
    admission_plugins: tuple[str, ...] = ()


class BadInput(ValueError):
    pass


def read_single_object(location: str, stdin: TextIO) -> dict[str, Any]:
    """The one Kubernetes object at `location` (a file, `-` for stdin), YAML or JSON."""
    objects = objects_of(read_documents([location], stdin))
    if len(objects) != 1:
        raise BadInput(
            f"{'<stdin>' if location == STDIN else location}: expected exactly one object, found {len(objects)}"
        )
    return objects[0]


def load_snapshot(options: ApplyOptions, registry: Registry) -> ClusterSnapshot:
    """The cluster the chain decides against: a directory (held to the CRDs' schemas, as an API server
    would hold it), or one list of every kind the routes read from the API server."""
    if options.cluster is not None:
        if not options.cluster.is_dir():
            raise BadInput(f"--cluster {options.cluster}: not a directory")
        snapshot = DirectorySnapshots(options.cluster, refuse_sensitive=options.refuse_sensitive_patches).scan()
        assert snapshot is not None  # the first scan always builds one
        return snapshot
    from colocate.cluster.client import api_client

    source = ApiServerSnapshots(
        api_client(options.kubeconfig, options.context),
        watched_kinds(registry),
        refuse_sensitive=options.refuse_sensitive_patches,
    )
    try:
        return source.list_once()
    finally:
        source.close()


def missing_namespaces(requests: list[AdmissionRequest], snapshot: ClusterSnapshot) -> list[str]:
    """Namespaces of the pods that the cluster state does not hold, when a profile selects namespaces
    by label: its labels are unknown, so those profiles are not checked against it (they match), which
    is rarely what was meant."""
    if not any(
        not isinstance(p.namespace_selector, LabelSelector) or not p.namespace_selector.is_empty
        for p in snapshot.profiles
    ):
        return []
    names = dict.fromkeys(r.namespace for r in requests if r.namespace and r.kind == "Pod")
    return [name for name in names if snapshot.namespace_labels(name) is None]


def format_explanation(result: ChainResult, snapshot: ClusterSnapshot | None = None) -> str:
    """What `--explain` prints; with `snapshot`, each matched profile whose patch sets
    security-sensitive fields (policies/admission/patch_risks.py) is named with them."""
    matched, effects = result.matched_profiles, result.effects
    lines = [f"webhooks called, in order: {', '.join(result.called) if result.called else '(none)'}"]
    lines.extend(f"not called: {name}: {why}" for name, why in result.not_called)
    lines.append(f"matched profiles, in the order applied: {', '.join(matched) if matched else '(none)'}")
    patches = {p.name: p.patch for p in snapshot.profiles} if snapshot is not None else {}
    for name in matched:
        fields = sensitive_fields(patches.get(name))
        if fields:
            lines.append(f"profile/{name}: patches security-sensitive fields: {', '.join(fields)}")
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
        lines.extend(f"  note: {note}" for note in effect.notes)
    return "\n".join(lines)


def _read_requests(
    options: ApplyOptions, stdin: TextIO, registry: Registry
) -> tuple[list[Document], list[dict[str, Any]], list[AdmissionRequest]]:
    """The documents of `options.files`, their objects and an admission request for each; BadInput
    on a misuse of the flags."""
    if options.operation not in OPERATIONS:
        raise BadInput(f"--operation must be one of {', '.join(OPERATIONS)}")
    if options.old_object == STDIN and STDIN in options.files:
        raise BadInput("-f - and --old-object - cannot both read stdin")
    documents = read_documents(options.files, stdin)
    objects = objects_of(documents)
    if not objects:
        raise BadInput(f"{', '.join(options.files)}: no objects")
    old = read_single_object(options.old_object, stdin) if options.old_object else None
    if options.operation == "UPDATE" and old is None:
        raise BadInput("--operation UPDATE needs --old-object")
    if old is not None and len(objects) > 1:
        raise BadInput(f"--old-object is the previous version of one object; -f gave {len(objects)}")
    requests = [
        request_for(obj, registry, options.operation, old if old is not None or options.operation != "DELETE" else obj)
        for obj in objects
    ]
    return documents, objects, requests


def _say_problems(
    options: ApplyOptions, requests: list[AdmissionRequest], snapshot: ClusterSnapshot, stderr: TextIO
) -> bool:
    """Print the snapshot's problems and the namespaces it lacks; True when `--strict` makes them fatal."""
    where = f"--cluster {options.cluster}" if options.cluster is not None else "the cluster"
    problems = [f"{problem.source}: {problem.message}" for problem in snapshot.problems] + [
        f"namespace {name!r} is not in {where}: its labels are unknown, so namespaceSelectors are not checked "
        "for it (a profile whose selector matches applies)"
        for name in missing_namespaces(requests, snapshot)
    ]
    for problem in problems:
        print(f"{'error' if options.strict else 'warning'}: {problem}", file=stderr)
    return bool(problems) and options.strict


def _admit_each(
    options: ApplyOptions,
    objects: list[dict[str, Any]],
    requests: list[AdmissionRequest],
    registry: Registry,
    snapshot: ClusterSnapshot,
    stderr: TextIO,
) -> tuple[dict[int, dict[str, Any] | None], bool]:
    """Each object through the chain: what is written back for it (None: denied), and whether any was denied."""
    admitted: dict[int, dict[str, Any] | None] = {}
    denied = False
    for obj, request in zip(objects, requests, strict=True):
        result = run_chain(request, registry, snapshot, explain=options.explain)
        label = (
            f"{request.kind} {request.namespace + '/' if request.namespace else ''}{request.name}: "
            if len(objects) > 1
            else ""
        )
        if options.explain:
            text = format_explanation(result, snapshot)
            print("\n".join(f"{label}{line}" for line in text.splitlines()) if label else text, file=stderr)
        for warning in result.warnings:  # as kubectl prints an AdmissionResponse's warnings
            print(f"{label}Warning: {warning}", file=stderr)
        if not result.allowed:
            denied = True
            print(f"{label}denied by {result.denied_by} (code {result.code}): {result.message}", file=stderr)
            admitted[id(obj)] = None
        else:
            admitted[id(obj)] = result.object if options.operation != "DELETE" else dict(request.old_object or obj)
    return admitted, denied


def run_apply(
    options: ApplyOptions, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Admit every object of `options.files`; write the admitted ones back in the shape they came in."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    registry = default_routes(options.admission_plugins)
    try:
        documents, objects, requests = _read_requests(options, stdin, registry)
        snapshot = load_snapshot(options, registry)
    except (BadInput, ManifestError, ScanError, UnknownKind) as exc:
        print(f"error: {exc}", file=stderr)
        return EXIT_BAD_INPUT
    if _say_problems(options, requests, snapshot, stderr):
        return EXIT_BAD_INPUT
    admitted, denied = _admit_each(options, objects, requests, registry, snapshot, stderr)
    write_documents(documents, lambda obj: admitted[id(obj)], options.output, stdout)
    return EXIT_DENIED if denied else EXIT_ADMITTED
