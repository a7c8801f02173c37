"""`colocate test DIR`: expectations about what the admission chain makes of resources, as
`kyverno test` checks policies.

A suite is a `colocate-test.yaml` (found anywhere below DIR); the files it names are relative to it:

    apiVersion: colocate.io/v1alpha1
    kind: Test
    metadata: {name: batch-profiles}
    profiles: [profiles.yaml]          # ClusterColocationProfiles
    cluster: [cluster.yaml]            # Namespaces, PriorityClasses, ... (optional)
    resources: [pods.yaml]             # the objects under test
    results:
      - resource: spark-executor-1     # metadata.name (namespace/kind only to disambiguate)
        patchedResource: expected/spark-executor-1.yaml
        matchedProfiles: [spark-be]    # optional: exactly these profiles matched it
      - resource: plain-1
        result: admitted               # the default: admitted, whatever the patch
      - resource: lsr-pod
        result: denied
        message: "cannot be used in combination"   # a substring of the denial

Each resource goes through `webhook.chain.run_chain`, the chain `colocate apply` and the server run,
over a snapshot of the suite's profiles and cluster objects. A case passes when the object is
admitted and equals the patched resource (compared as JSON values; a difference is shown as
`field: expected -> admitted`), or is denied with the message, and, with `matchedProfiles`, exactly
those profiles matched. A suite that cannot be read (a missing file, a wrong field, a profile that
does not parse) is a usage error, not a failing case: a test that cannot run must not look like one
that ran. Every unknown field of a suite is named in one error, as `kubectl apply --validate=strict`
names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, ClassVar, Final

from colocate.cluster.files import read_manifest_file, read_manifest_text
from policies.admission.changes import changes_of, summary
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.field_errors import ConfigError, FieldError, Fields
from policies.apis.jsonpatch_diff import diff
from policies.apis.manifests import ManifestError, parse_documents
from policies.apis.objects import name_of, namespace_of
from webhook.chain import UnknownKind, request_for, run_chain
from webhook.registry import Registry, default_routes

SUITE_FILE: Final = "colocate-test.yaml"
API_VERSION: Final = "colocate.io/v1alpha1"
KIND: Final = "Test"
ADMITTED, DENIED = "admitted", "denied"
PASS, FAIL = "pass", "fail"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE")
#: every key of the suite format; any other is refused (exit 2), so a typo cannot pass unread
SUITE_KEYS: Final = ("apiVersion", "kind", "metadata", "name", "profiles", "cluster", "resources", "results")
METADATA_KEYS: Final = ("name", "labels", "annotations")
RESULT_KEYS: Final = (
    "resource",
    "namespace",
    "kind",
    "operation",
    "result",
    "patchedResource",
    "message",
    "warnings",
    "matchedProfiles",
)
_SHOWN_DIFFERENCES: Final = 5


class SuiteError(ValueError):
    """A suite that cannot be run: `<file>: <field path>: <what is wrong>`."""


@dataclass(frozen=True)
class Expectation:
    resource: str
    namespace: str = ""
    kind: str = ""
    operation: str = "CREATE"
    result: str = ADMITTED
    patched: dict[str, Any] | None = None  # the object the chain must produce
    patched_file: str = ""
    message: str = ""  # a substring of the denial message
    warnings: tuple[str, ...] = ()  # substrings, each found in one of the response's warnings
    matched_profiles: tuple[str, ...] | None = None  # exactly these profiles matched (None: not checked)

    @property
    def label(self) -> str:
        parts = [p for p in (self.kind, self.namespace, self.resource) if p]
        return "/".join(parts)


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    objects: tuple[tuple[str, dict[str, Any]], ...]  # (source, object): profiles and cluster objects
    resources: tuple[dict[str, Any], ...]
    expectations: tuple[Expectation, ...]


@dataclass(frozen=True)
class CaseResult:
    suite: str
    resource: str
    expected: str  # the patched resource file, "denied" or "admitted"
    result: str  # pass | fail
    reason: str = ""
    warnings: tuple[str, ...] = field(default=())
    produced: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # what the chain admitted
    golden: Path | None = None  # the patchedResource file this case compares with

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.suite,
            "resource": self.resource,
            "expected": self.expected,
            "result": self.result,
            "reason": self.reason,
            "warnings": list(self.warnings),
        }


def find_suites(root: Path) -> list[Path]:
    """Every `colocate-test.yaml` at or below `root`, in path order."""
    if root.exists() and not root.is_dir():  # a file, or a FIFO that load_suite refuses
        return [root]
    if not root.is_dir():
        raise SuiteError(f"{root}: no such directory")
    found = sorted(p for p in root.rglob(SUITE_FILE) if not any(part.startswith(".") for part in p.parts))
    if not found:
        raise SuiteError(f"{root}: no {SUITE_FILE} found")
    return found


def _read_objects(base: Path, files: list[str], where: str) -> list[tuple[str, dict[str, Any]]]:
    objects: list[tuple[str, dict[str, Any]]] = []
    for index, name in enumerate(files):
        path = base / name
        try:
            objects.extend((str(path), obj) for obj in read_manifest_file(path))
        except ManifestError as exc:
            raise ConfigError(f"{where}[{index}]", str(exc)) from exc
    return objects


def _expectation(raw: Any, where: str, base: Path) -> Expectation:
    fields = Fields(raw, where)
    resource = fields.str("resource")
    if not resource:
        raise ConfigError(fields.at("resource"), "Required value: the metadata.name of a resource under test")
    operation = fields.str("operation", "CREATE").upper()
    if operation not in OPERATIONS:
        raise ConfigError(fields.at("operation"), f"must be one of {', '.join(OPERATIONS)}")
    patched_file = fields.str("patchedResource")
    result = fields.str("result", ADMITTED)
    if result not in (ADMITTED, DENIED):
        raise ConfigError(fields.at("result"), f'Unsupported value: "{result}": supported values: "admitted", "denied"')
    if result == DENIED and patched_file:
        raise ConfigError(fields.at("patchedResource"), "Forbidden: a denied resource has no patched resource")
    if fields.has("message") and result != DENIED:
        raise ConfigError(fields.at("message"), "Forbidden: only a denied result has a message")
    patched = None
    if patched_file:
        try:
            objects = read_manifest_file(base / patched_file)
        except ManifestError as exc:
            raise ConfigError(fields.at("patchedResource"), str(exc)) from exc
        if len(objects) != 1:
            raise ConfigError(fields.at("patchedResource"), f"must hold exactly one object, found {len(objects)}")
        patched = objects[0]
    return Expectation(
        resource,
        fields.str("namespace"),
        fields.str("kind"),
        operation,
        result,
        patched,
        patched_file,
        fields.str("message"),
        tuple(fields.str_list("warnings")),
        tuple(fields.str_list("matchedProfiles")) if "matchedProfiles" in fields.raw else None,
    )


def _unknown_fields(raw: Any) -> list[FieldError]:
    """Every key of the suite that its format does not know, at every level, found in one pass."""
    if not isinstance(raw, dict):
        return []
    fields = Fields(raw, "")
    errors = fields.unknown(SUITE_KEYS)
    if isinstance(raw.get("metadata"), dict):
        errors.extend(fields.sub("metadata").unknown(METADATA_KEYS))
    results = raw.get("results")
    for index, result in enumerate(results if isinstance(results, list) else ()):
        if isinstance(result, dict):
            errors.extend(Fields(result, f"results[{index}]").unknown(RESULT_KEYS))
    return errors


def load_suite(path: Path) -> Suite:
    """Read and check one suite file; a SuiteError names the file and the field."""
    try:  # the loader of every manifest: regular files only, one-line errors, bounded aliases
        documents = parse_documents(read_manifest_text(path), str(path))
    except ManifestError as exc:
        raise SuiteError(str(exc)) from exc
    raw = documents[0] if documents else None
    try:
        unknown = _unknown_fields(raw)
        if unknown:
            raise ConfigError.every(unknown)
        fields = Fields(raw, "")
        fields.sub("metadata")  # an object, or an error naming it
        if fields.str("apiVersion", API_VERSION) != API_VERSION or fields.str("kind", KIND) != KIND:
            raise ConfigError("apiVersion", f"expected apiVersion {API_VERSION} and kind {KIND}")
        name = fields.sub("metadata").str("name") or fields.str("name") or path.parent.name
        base = path.parent
        objects = _read_objects(base, fields.str_list("profiles"), "profiles") + _read_objects(
            base, fields.str_list("cluster"), "cluster"
        )
        resources = [obj for _, obj in _read_objects(base, fields.str_list("resources"), "resources")]
        if not resources:
            raise ConfigError("resources", "Required value: at least one file of resources under test")
        results = raw.get("results") if isinstance(raw, dict) else None
        if not isinstance(results, list) or not results:
            raise ConfigError("results", "Required value: a list of expected results")
        expectations = tuple(_expectation(r, f"results[{i}]", base) for i, r in enumerate(results))
        for index, expectation in enumerate(expectations):
            _resource_for(expectation, resources, f"results[{index}]")
    except ConfigError as exc:
        raise SuiteError(f"{path}: {exc}") from exc
    return Suite(path, name, tuple(objects), tuple(resources), expectations)


def _resource_for(expectation: Expectation, resources: Sequence[dict[str, Any]], where: str) -> dict[str, Any]:
    candidates = [
        r
        for r in resources
        if name_of(r) == expectation.resource
        and (not expectation.namespace or namespace_of(r) == expectation.namespace)
        and (not expectation.kind or r.get("kind") == expectation.kind)
    ]
    if not candidates:
        raise ConfigError(f"{where}.resource", f"no resource named {expectation.label!r} in the suite's resources")
    if len(candidates) > 1:
        raise ConfigError(
            f"{where}.resource", f"{len(candidates)} resources are named {expectation.label!r}: add namespace or kind"
        )
    return candidates[0]


def snapshot_of(suite: Suite) -> ClusterSnapshot:
    """The suite's cluster; a profile or object the webhook could not use is an error of the suite.
    Its files never met an API server, so profiles are held to the CRD's schema, as `apply` holds them."""
    snapshot = ClusterSnapshot.from_objects(suite.objects, strict=True)
    if snapshot.problems:
        problem = snapshot.problems[0]
        raise SuiteError(f"{suite.path}: {problem.source}: {problem.message}")
    return snapshot


def _differences(expected: Any, actual: Any) -> str:
    """Each field that differs, with the value expected and the value admitted (`(none)`: absent)."""
    return summary(changes_of(expected, diff(expected, actual)), _SHOWN_DIFFERENCES)


def _profiles_differ(expectation: Expectation, matched: Sequence[str]) -> str:
    """Why the matched profiles are not the expected ones, or "" when they are."""
    if expectation.matched_profiles is None:
        return ""
    expected, seen = sorted(set(expectation.matched_profiles)), sorted(set(matched))
    if expected == seen:
        return ""
    return f"matched profiles {', '.join(seen) or '(none)'}, expected {', '.join(expected) or '(none)'}"


def run_case(suite: Suite, expectation: Expectation, snapshot: ClusterSnapshot, registry: Registry) -> CaseResult:
    obj = _resource_for(expectation, suite.resources, "results")
    expected = expectation.patched_file if expectation.patched is not None else expectation.result

    golden = suite.path.parent / expectation.patched_file if expectation.patched is not None else None

    def verdict(ok: bool, reason: str, warnings: Sequence[str] = (), produced: Any = None) -> CaseResult:
        result = PASS if ok else FAIL
        return CaseResult(suite.name, expectation.label, expected, result, reason, tuple(warnings), produced, golden)

    operation = expectation.operation
    try:
        request = request_for(obj, registry, operation, obj if operation in ("UPDATE", "DELETE") else None)
    except UnknownKind as exc:
        return verdict(False, str(exc))
    outcome = run_chain(request, registry, snapshot)
    warnings = list(outcome.warnings)
    if expectation.result == DENIED:
        if outcome.allowed:
            return verdict(False, "admitted, expected a denial", warnings)
        if expectation.message not in outcome.message:
            return verdict(
                False,
                f"denied with {outcome.message!r}, expected a message containing {expectation.message!r}",
                warnings,
            )
        profiles = _profiles_differ(expectation, outcome.matched_profiles)
        return verdict(not profiles, profiles or f"denied by {outcome.denied_by}: {outcome.message}", warnings)
    if not outcome.allowed:
        return verdict(False, f"denied by {outcome.denied_by} (code {outcome.code}): {outcome.message}", warnings)
    missing = [w for w in expectation.warnings if not any(w in seen for seen in warnings)]
    if missing:
        return verdict(False, f"no warning contains {missing[0]!r} (warnings: {warnings or 'none'})", warnings)
    if expectation.patched is not None and expectation.patched != outcome.object:
        differences = _differences(expectation.patched, outcome.object)
        reason = f"differs from {expectation.patched_file} (expected -> admitted): {differences}"
        return verdict(False, reason, warnings, outcome.object)
    profiles = _profiles_differ(expectation, outcome.matched_profiles)
    if profiles:
        return verdict(False, profiles, warnings)
    noted = f", with {len(warnings)} warning(s)" if warnings else ""
    return verdict(True, "admitted" + (" as patched" if expectation.patched is not None else "") + noted, warnings)


@dataclass(frozen=True)
class Selector:
    """`--test-case-selector "test=NAME,resource=NAME"` (shell patterns), as `kyverno test` selects cases."""

    test: str = "*"
    resource: str = "*"

    KEYS: ClassVar[tuple[str, ...]] = ("test", "resource")

    @classmethod
    def parse(cls, text: str) -> Selector:
        values: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, equals, value = part.partition("=")
            if not equals or key.strip() not in cls.KEYS or not value.strip():
                raise ValueError(f"{part!r}: expected KEY=PATTERN with KEY one of {', '.join(cls.KEYS)}")
            values[key.strip()] = value.strip()
        return cls(**values)

    def matches(self, suite: str, expectation: Expectation) -> bool:
        return fnmatchcase(suite, self.test) and (
            fnmatchcase(expectation.resource, self.resource) or fnmatchcase(expectation.label, self.resource)
        )


def run_suite(suite: Suite, registry: Registry | None = None, selector: Selector = Selector()) -> list[CaseResult]:
    registry = registry or default_routes()
    chosen = [e for e in suite.expectations if selector.matches(suite.name, e)]
    if not chosen:
        return []
    snapshot = snapshot_of(suite)
    return [run_case(suite, expectation, snapshot, registry) for expectation in chosen]


def run_suites(root: Path, selector: Selector = Selector(), admission_plugins: Sequence[str] = ()) -> list[CaseResult]:
    """Every suite below `root`, every case of each that `selector` picks, through the chain with the
    installed `admission_plugins` enabled (as `serve --admission-plugins`); SuiteError when one
    cannot be read."""
    registry = default_routes(tuple(admission_plugins))
    results: list[CaseResult] = []
    for path in find_suites(root):
        results.extend(run_suite(load_suite(path), registry, selector))
    return results
