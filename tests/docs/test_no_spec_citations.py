"""Nothing in the repository cites a document a reader cannot open.

The behaviour colocate follows is Koordinator's: code, tests, manifests and docs cite Koordinator's
source path (`pkg/webhook/pod/mutating/cluster_colocation_profile.go`), its Go test name
(`TestLowNodeLoad`), Kubernetes' own sources, or our `docs/` page, and say in their own words what
they rely on. They never cite a specification by section number ("spec" with a section sign or a
number, a bare section sign with a number, or a numbered "quirk"): that document is not in the
repository. This test keeps merges from bringing such citations back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.markdown import REPO

SECTION = "\N{SECTION SIGN}"
SPEC, QUIRK = "spec", "quirk"  # spelled apart, so that this file passes its own test
CITATION = re.compile(
    rf"(?i)\bspec\s*{SECTION}|\(spec\s+[\d{SECTION}]|\bspec\s+\d+(?:\.\d+)*\b(?!\s*(?:µs|ms|s|%))"
    rf"|\bquirk\s+\d+\b|{SECTION}\s*\d"
)
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "build", "dist", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".json", ".sh", ""}


def text_files(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in relative.parts):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and path.stat().st_size < 2_000_000:
            found.append(path)
    return found


def citations(root: Path) -> list[str]:
    found = []
    for path in text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if match := CITATION.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {match.group(0)!r} in {line.strip()[:100]!r}")
    return found


def test_nothing_cites_a_specification_by_section() -> None:
    assert citations(REPO) == [], "cite Koordinator's source path or test name, or a docs/ page"


@pytest.mark.parametrize(
    "line",
    [
        f"LowNodeLoad ({SPEC} {SECTION}3.2): thresholds",
        f"Colocation rules for pods ({SPEC} 7.2); every",
        f"({SPEC} scheduler {SECTION}5)",
        f"as Go marshals a nil map ({QUIRK} 8).",
        f"see {SECTION}" + "5.5 NominateReservation",
        f"{SPEC.title()} 5.7: GPU normalisation.",
    ],
)
def test_each_way_of_citing_a_section_is_caught(line: str, tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(f'"""{line}"""\n', encoding="utf-8")
    assert len(citations(tmp_path)) == 1


@pytest.mark.parametrize(
    "line",
    [
        "LoadAwareScheduling (`pkg/scheduler/plugins/loadaware/load_aware.go`)",
        "the pod spec is copied; spec.nodeName stays",
        f"a {SPEC} 2 µs faster",
        'Koordinator\'s `TestLowNodeLoad` "without priorities"',
    ],
)
def test_what_a_reader_can_open_passes(line: str, tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(f'"""{line}"""\n', encoding="utf-8")
    assert citations(tmp_path) == []
