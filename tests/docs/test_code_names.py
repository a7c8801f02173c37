"""Every code name a page puts in backticks exists in the code: docs say what is.

The pages: the README, CONTRIBUTING.md, every page under docs/ and benchmarks/README.md (not the
CHANGELOG, which names what was removed on purpose). A backticked span is checked when it looks
like one of our names, by this rule:

- a path of ours (`webhook/http1.py`, `tests/docs/`, `manifests/deploy/`): the file or
  directory exists;
- a dotted name rooted in one of our packages (`policies.apis.resources.pod_requests`,
  `colocate.cli.output.table`): the module imports and each further part is an attribute of it, or is
  assigned in its source (an instance attribute);
- `Name.attribute` where `Name` is a class of ours (`Framework.warm_up`): the class has that
  attribute (a method, a class-level name, or a `self.attribute` it assigns);
- a bare name with an underscore or call parentheses (`pod_requests`, `_no_such_helper`, `warm_up()`,
  `COLOCATE_COMPILE`, a metric name), or in CamelCase with two humps or more (`SnapshotIndex`,
  `LoadAwareScheduling`): it is defined in our code, or written in one of its strings (metric
  names, environment variables, configuration keys and Koordinator's plugin names are strings).

A page also names no branch ("branch" beside a backticked name): a reader of the repository cannot open one;
name the commit, or better, say what is.

Everything else is not ours to check: Koordinator's and Kubernetes' vocabulary (`koord-batch`,
`ClusterColocationProfile`, `spec.nodeName`, `pkg/...` paths), flags, shell, Go and the standard
library's dotted names (`strconv.ParseBool`, `gc.freeze`), Koordinator's Go test names
(`TestLowNodeLoad`). Names that fit the rule but are not
ours (a kernel file, a Go field, a third-party function) are in `NOT_OURS`, each with its reason.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.docs.markdown import INLINE_CODE, REPO, split

PACKAGES = ("colocate", "webhook", "policies", "scheduler_plugins", "certs", "devtools", "benchmarks")
#: top-level directories whose paths a page may name (checked to exist)
OUR_DIRS = (*PACKAGES, "tests", "docs", "manifests", "examples", ".ci")
OUR_FILES = ("pyproject.toml", "setup.py", "Containerfile", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE")
#: where our names are defined: the code, its tooling, the example plugins and the test harness
SOURCES = (*PACKAGES, "examples", "tests/support")

CAMEL = re.compile(r"^_?[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$")
BRANCH = re.compile(r"\bbranch(?:es)? `[^`]+`|`[^`]+` branch\b")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: names that fit the rule but are not colocate's, and why
NOT_OURS: dict[str, str] = {
    # Koordinator's names for what colocate does not implement (the pages say so)
    "BlkioReconcile": "a koordlet strategy of Koordinator's",
    "ResctrlReconcile": "a koordlet strategy of Koordinator's",
    "SystemConfigReconcile": "a koordlet strategy of Koordinator's",
    "FilterReservation": "a Reservation extension point of Koordinator's framework",
    "FindOneNode": "a Reservation extension point of Koordinator's framework",
    "RestoreReservation": "a Reservation extension point of Koordinator's framework",
    "PerNamespace": "a descheduler eviction limit of Koordinator's",
    "GetNominatedReservation": "Koordinator's Reservation plugin's lookup, named where colocate departs from it",
    "ErrReasonPreemptionFailed": "a Filter reason of Koordinator's Reservation plugin, named where colocate departs",
    "ResourceQuota": "a Kubernetes kind (its admission plugin limits critical priority classes)",
    "DistributeEvenly": "a value of Koordinator's numa-allocate-strategy; colocate reads any value but "
    "MostAllocated as the emptiest first",
}
#: Go test names (`TestLowNodeLoad`, `Test_cpuEvict`) are Koordinator's: our tests are snake_case
GO_TEST = re.compile(r"^Test_?[A-Z_a-z0-9]+$")


def pages() -> list[Path]:
    return [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        REPO / "benchmarks" / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
    ]


def spans(text: str) -> Iterator[tuple[int, str]]:
    """(line number, content) of every inline code span outside fenced blocks."""
    prose, _ = split(text)
    for number, line in prose:
        for span in INLINE_CODE.findall(line):
            yield number, span.strip("`").strip()


@cache
def python_files() -> tuple[Path, ...]:
    files: list[Path] = [REPO / "setup.py"]
    for source in SOURCES:
        files += sorted((REPO / source).rglob("*.py"))
    return tuple(f for f in files if ".venv" not in f.parts)


@cache
def known_words() -> frozenset[str]:
    """Every identifier our code defines or uses, and every word in its strings and comments; and the
    names our manifests define (the PrometheusRule's alerts, say)."""
    words: set[str] = set()
    for path in (*python_files(), *sorted((REPO / "manifests").rglob("*.yaml"))):
        words.update(WORD.findall(path.read_text(encoding="utf-8")))
    return frozenset(words)


@cache
def class_members() -> dict[str, frozenset[str]]:
    """Our classes by name: the names each defines (methods, class names, `self.x` it assigns)."""
    members: dict[str, set[str]] = {}
    for path in python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            names = members.setdefault(node.name, set())
            for child in ast.walk(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and child is not node:
                    names.add(child.name)
                elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    names.add(child.id)
                elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Store):
                    names.add(child.attr)
    return {name: frozenset(found) for name, found in members.items()}


def _resolve_dotted(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            target: object = importlib.import_module(module_name)
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if hasattr(target, attribute):
                target = getattr(target, attribute)
                continue
            owner = getattr(target, "__name__", "")
            return attribute in class_members().get(owner, frozenset()) or attribute in known_words()
        return True
    return False


def problem(span: str) -> str | None:
    """Why `span` names something our code does not have; None when it is fine or not ours."""
    text = span.removesuffix("()")
    if text in NOT_OURS or GO_TEST.match(text):
        return None
    root = text.split("/")[0]
    if "/" in text and (root in OUR_DIRS or text in OUR_FILES) and not any(c in text for c in "*{}<> "):
        path = text.split("::")[0].split(":")[0]
        return None if (REPO / path).exists() else "no such file or directory"
    if not IDENTIFIER.match(text):
        return None
    parts = text.split(".")
    if len(parts) > 1 and parts[0] in PACKAGES:
        return None if _resolve_dotted(text) else "no such module or attribute"
    if len(parts) == 2 and parts[0] in class_members():
        if parts[1] in class_members()[parts[0]]:
            return None
        return f"{parts[0]} has no {parts[1]}"
    if len(parts) == 1 and ("_" in text or span.endswith("()") or CAMEL.match(text)):
        return None if text in known_words() else "not defined anywhere in the code"
    return None


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_code_name_a_page_mentions_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [
        f"{page.relative_to(REPO)}:{number}: `{span}`: {reason}"
        for number, span in spans(text)
        if (reason := problem(span)) is not None
    ]
    prose, _ = split(text)
    found += [
        f"{page.relative_to(REPO)}:{number}: {named!r}: a branch, which a reader cannot open"
        for number, line in prose
        for named in BRANCH.findall(line)
    ]
    assert found == [], "a name that is not ours? add it to NOT_OURS with the reason"


@pytest.mark.parametrize(
    "span",
    [
        "pod_request_of",
        "policies.apis.resources.pod_requests",
        "_no_such_helper",
        "Framework.run_reserve_to_bind",
        "policies.apis.resources.no_such_function",
        "colocate/cli/no_such_module.py",
        "warm_up_everything()",
        "SnapshotIndexer",
    ],
)
def test_a_name_the_code_does_not_have_is_reported(span: str) -> None:
    assert problem(span) is not None


@pytest.mark.parametrize(
    "span",
    [
        "policies.apis.resources.pod_resources",
        "colocate/cli/output.py",
        "Framework.warm_up",
        "ClusterState.pending",
        "colocate_cluster_state_stale_seconds",
        "strconv.ParseBool",
        "ClusterColocationProfile",
        "koordinator.sh/qosClass",
        "pkg/webhook/pod/mutating/cluster_colocation_profile.go",
        "TestLowNodeLoad",
        "Test_cpuEvict",
        "--feature-gates",
        "LoadAwareScheduling",
        "SnapshotIndex",
    ],
)
def test_our_names_and_names_that_are_not_ours_pass(span: str) -> None:
    assert problem(span) is None


def test_a_page_naming_a_branch_is_reported() -> None:
    assert BRANCH.findall("after: branch `i17-sched`; what the `hotpath` branch changed") == [
        "branch `i17-sched`",
        "`hotpath` branch",
    ]
