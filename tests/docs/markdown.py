"""Just enough Markdown for the documentation tests: fenced blocks, links, GitHub heading anchors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def documents() -> list[Path]:
    """The README, CONTRIBUTING, the CHANGELOG and every page under docs/."""
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    """A fenced code block: its info string (`sh`, `console`, ...) and its lines."""

    info: str
    lines: tuple[str, ...]
    heading: str  # the last heading above it


def split(text: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """The prose lines (numbered from 1) and the fenced blocks of a page."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    fence: str | None = None
    info = heading = ""
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence, info, body = opened.group(1), line.strip()[3:].strip(), []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append(Block(info, tuple(body), heading))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((number, line))
            if found := HEADING.match(line):
                heading = found.group(2)
    return prose, blocks


def links(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every inline link outside code."""
    prose, _ = split(text)
    for number, line in prose:
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            yield number, target


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor the headings of a page define; repeated headings get `-1`, `-2`, ..."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    prose, _ = split(text)
    for _, line in prose:
        if heading := HEADING.match(line):
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return found
