"""Every relative link of the README and of docs/ points at a file that exists (and a heading that does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown import REPO, anchors, documents, links, slug

EXTERNAL = ("http://", "https://", "mailto:")


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    found = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if target.startswith(EXTERNAL):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not resolved.exists():
            found.append(f"{where}: no such file")
        elif not resolved.is_relative_to(root):
            found.append(f"{where}: outside the repository")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            found.append(f"{where}: no heading with that anchor in {resolved.relative_to(root)}")
    return found


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_a_missing_anchor_and_a_way_out_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "other.md").write_text("# Other\n\n## A section\n", encoding="utf-8")
    (tmp_path / "outside.md").touch()
    page = root / "docs" / "page.md"
    page.write_text(
        "# Title\n\n[ok](#title) [file](other.md#a-section) [gone](missing.md)\n"
        "[anchor](other.md#nowhere) [up](../../outside.md)\n",
        encoding="utf-8",
    )
    problems = broken_links(page, root=root)
    assert [problem.split(": ", 2)[1] for problem in problems] == ["missing.md", "other.md#nowhere", "../../outside.md"]


def test_links_inside_code_are_not_links() -> None:
    text = "# T\n\n`[a](b.md)`\n\n```\n[c](d.md)\n```\n[e](f.md)\n"
    assert [target for _, target in links(text)] == ["f.md"]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Certificates: generate, inspect, rotate", "certificates-generate-inspect-rotate"),
        ("`colocate apply`", "colocate-apply"),
        ("Before you start: the image", "before-you-start-the-image"),
        ("colocate scheduler extender", "colocate-scheduler-extender"),
    ],
)
def test_anchors_are_spelled_like_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
