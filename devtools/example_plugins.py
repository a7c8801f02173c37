"""Install each package under examples/plugins/ as a user would, and check it works beside colocate.

For each example: a fresh virtual environment that sees this interpreter's packages (colocate and
the test tools, through a `.pth` file, so nothing is rebuilt), `pip install` of the example (its
entry points are then what `importlib.metadata` finds), its own tests (which run colocate's
commands with the plugin enabled), and `colocate plugins list -o json`, which must name the
example's plugin with its distribution as the source. Run by `.ci/run`:
`python -m devtools.example_plugins` (exit 1 naming the first example that fails).
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "plugins"


def check(example: Path, scratch: Path) -> None:
    project = tomllib.loads((example / "pyproject.toml").read_text())["project"]
    env = scratch / example.name
    venv.EnvBuilder(with_pip=False).create(env)  # this interpreter's pip installs into it (`--python`)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    beside = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "colocate-beside.pth").write_text(f"import site; site.addsitedir({beside!r})\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(example)], check=True
    )
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=example, check=True)
    listed = subprocess.run(
        [python, "-m", "colocate", "plugins", "list", "-o", "json"], check=True, capture_output=True, text=True
    )
    names = {name for group in project["entry-points"].values() for name in group}
    found = {row["name"] for row in json.loads(listed.stdout) if row["source"] == project["name"]}
    if found != names or listed.stderr:
        raise SystemExit(
            f"{example.name}: plugins list shows {sorted(found)} from {project['name']}, expected {sorted(names)}"
        )
    print(f"{example.name}: {', '.join(sorted(names))} from {project['name']}: ok", flush=True)


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        for example in sorted(p for p in EXAMPLES.iterdir() if (p / "pyproject.toml").is_file()):
            try:
                check(example, Path(scratch))
            except subprocess.CalledProcessError as exc:
                print(f"{example.name}: {' '.join(map(str, exc.cmd))} failed", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
