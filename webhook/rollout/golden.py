"""Writing `colocate test` suites: `--update` rewrites golden files, `--scaffold` starts a suite.

Both write what the admission chain makes of the resources today, so a reviewer reads the change
as a diff of YAML files, as with any golden-file test. `--update` touches only the patchedResource
files of cases that were admitted and differed; a case that is denied, or expected denied, is left
failing: a golden file cannot say that.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from colocate.cluster.files import read_manifest_file
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.constants import PROFILE_KIND
from policies.apis.manifests import ManifestError
from policies.apis.objects import name_of
from webhook.chain import UnknownKind, request_for, run_chain
from webhook.registry import default_routes
from webhook.rollout.testsuite import API_VERSION, FAIL, KIND, SUITE_FILE, CaseResult, SuiteError

EXPECTED_DIR: Final = "expected"
#: kinds a scaffolded suite lists under `cluster:`: read by the admission plugins, never admitted by them
CLUSTER_KINDS: Final = frozenset({"Namespace", "PriorityClass"})


def _dump(obj: dict[str, Any], header: str) -> str:
    return header + yaml.safe_dump(obj, sort_keys=False)


def _header_of(path: Path) -> str:
    """The comment lines a golden file starts with, kept across an update."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if path.is_file() else ():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "".join(lines)


def update_golden_files(results: list[CaseResult]) -> list[Path]:
    """Rewrite the patchedResource file of every failing case the chain admitted; the files written."""
    written = []
    for result in results:
        if result.result == FAIL and result.produced is not None and result.golden is not None:
            result.golden.write_text(_dump(result.produced, _header_of(result.golden)), encoding="utf-8")
            written.append(result.golden)
    return written


def _classify(directory: Path) -> tuple[list[str], list[str], list[str], list[dict[str, Any]], list[Any]]:
    profiles: list[str] = []
    cluster: list[str] = []
    resources: list[str] = []
    under_test: list[dict[str, Any]] = []
    known: list[Any] = []
    for path in sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml", ".json")):
        relative = path.relative_to(directory)
        if relative.parts[0] == EXPECTED_DIR or path.name == SUITE_FILE:
            continue
        try:
            objects = read_manifest_file(path)
        except ManifestError as exc:
            raise SuiteError(str(exc)) from exc
        kinds = {o.get("kind") for o in objects}
        if not objects:
            continue
        if kinds == {PROFILE_KIND}:
            profiles.append(str(relative))
        elif kinds <= CLUSTER_KINDS:
            cluster.append(str(relative))
        elif PROFILE_KIND in kinds:
            raise SuiteError(f"{path}: holds profiles and other objects: put the profiles in a file of their own")
        else:
            resources.append(str(relative))
            under_test.extend(objects)
            continue
        known.extend((str(path), o) for o in objects)
    return profiles, cluster, resources, under_test, known


def scaffold(directory: Path, admission_plugins: Sequence[str] = ()) -> Path:
    """Write DIR/colocate-test.yaml (and DIR/expected/) from the manifests in DIR: profiles,
    cluster objects and resources, each resource expected to do what it does today."""
    suite_path = directory / SUITE_FILE
    if not directory.is_dir():
        raise SuiteError(f"{directory}: no such directory")
    if suite_path.exists():
        raise SuiteError(f"{suite_path}: already exists (run `colocate test {directory} --update` to refresh it)")
    profiles, cluster, resources, under_test, known = _classify(directory)
    if not under_test:
        raise SuiteError(f"{directory}: no resources to test (no YAML file with objects other than profiles)")
    snapshot = ClusterSnapshot.from_objects(known, strict=True)
    if snapshot.problems:
        raise SuiteError(f"{snapshot.problems[0].source}: {snapshot.problems[0].message}")
    registry = default_routes(tuple(admission_plugins))
    results = []
    for obj in under_test:
        try:
            outcome = run_chain(request_for(obj, registry), registry, snapshot)
        except UnknownKind as exc:
            raise SuiteError(f"{name_of(obj)}: {exc}") from exc
        case: dict[str, Any] = {"resource": name_of(obj), "kind": obj.get("kind", "")}
        if outcome.allowed and outcome.object is not None:
            golden = Path(EXPECTED_DIR) / f"{name_of(obj)}.yaml"
            (directory / EXPECTED_DIR).mkdir(exist_ok=True)
            header = f"# What the suite's profiles make of {name_of(obj)} (written by `colocate test --scaffold`).\n"
            (directory / golden).write_text(_dump(outcome.object, header), encoding="utf-8")
            case["patchedResource"] = str(golden)
        else:
            case.update(result="denied", message=outcome.message)
        results.append(case)
    suite = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": directory.resolve().name},
        "profiles": profiles,
        "cluster": cluster,
        "resources": resources,
        "results": results,
    }
    header = "# Scaffolded by `colocate test --scaffold`: check each expectation before you commit it.\n"
    suite_path.write_text(_dump(suite, header), encoding="utf-8")
    return suite_path
