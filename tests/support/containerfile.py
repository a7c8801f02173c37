"""Reading the Containerfile the way a builder does, for the tests that run its steps without an engine.

Only what our Containerfile uses: `ARG` defaults, `FROM ... [AS name]`, `WORKDIR`, `COPY`, `RUN`
(with BuildKit's `--mount=` options, which only make files visible), `ENV`, `LABEL`, `USER`, `ENTRYPOINT`,
`CMD`. The build context honours `.dockerignore` (podman and docker both read it).
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Stage:
    image: str
    name: str = ""
    runs: list[str] = field(default_factory=list)
    copies: list[list[str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    user: str = ""
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, rest = whole.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def parse(text: str) -> list[Stage]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for keyword, rest in instructions(text):
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            words = rest.split()
            image = words[0]
            for name, value in args.items():
                image = image.replace("${" + name + "}", value)
            stages.append(Stage(image, words[2] if len(words) == 3 and words[1].upper() == "AS" else ""))
        elif keyword == "RUN":
            stages[-1].runs.append(" ".join(w for w in shlex.split(rest) if not w.startswith("--mount=")))
        elif keyword == "COPY":
            stages[-1].copies.append(rest.split())
        elif keyword in ("ENV", "LABEL"):
            for word in shlex.split(rest):
                name, _, value = word.partition("=")
                (stages[-1].env if keyword == "ENV" else stages[-1].labels)[name] = value
        elif keyword == "USER":
            stages[-1].user = rest
        elif keyword in ("ENTRYPOINT", "CMD"):
            setattr(stages[-1], keyword.lower(), json.loads(rest))
    return stages


def ignored(relative: Path, patterns: list[str]) -> bool:
    text = relative.as_posix()
    return any(
        fnmatch.fnmatch(text, p)
        or fnmatch.fnmatch(text, p.removeprefix("**/"))
        or fnmatch.fnmatch(relative.name, p.removeprefix("**/"))
        for p in patterns
    )


def build_context(repo: Path, into: Path) -> Path:
    """A copy of the repository as the engine sends it: without what `.dockerignore` names."""
    lines = (repo / ".dockerignore").read_text().splitlines()
    patterns = [p.strip().rstrip("/") for p in lines if p.strip() and not p.startswith("#")]

    def skip(directory: str, names: list[str]) -> set[str]:
        base = Path(directory).relative_to(repo)
        return {n for n in names if ignored(base / n, patterns)}

    shutil.copytree(repo, into, ignore=skip, symlinks=True)
    return into
