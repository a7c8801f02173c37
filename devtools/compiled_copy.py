"""A copy of the source tree with the admission hot path compiled in place (mypyc, `setup.py`).

The checkout itself stays plain Python (an edit must take effect; a stale compiled module beside
its source would shadow it), so what users run (`pip install .`, the image) is tested and measured
on a copy: `.ci/run` runs the hot path's tests in one, `benchmarks/admission_bench.py` serves from
one. Run: `python -m devtools.compiled_copy DESTINATION` (prints DESTINATION once it is built).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: what the copy leaves out: local state, and builds of another tree
SKIPPED = (
    ".venv",
    ".git",
    "build",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "*.so",
    "*.egg-info",
    "certs-local",
)


def compiled_copy(destination: Path, source: Path = REPO) -> Path:
    """Copy `source` to `destination` and compile its hot path there; raises if any module of
    `webhook.compiled.HOT_PATH` did not compile (a missing compiler is a failure here, not a fallback)."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*SKIPPED), dirs_exist_ok=True)
    env = {**os.environ, "COLOCATE_COMPILE": "1"}
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=destination,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    check = (
        "from webhook.compiled import HOT_PATH, compiled_modules; "
        "missing = set(HOT_PATH) - set(compiled_modules()); assert not missing, sorted(missing)"
    )
    subprocess.run([sys.executable, "-c", check], cwd=destination, check=True)
    return destination


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m devtools.compiled_copy DESTINATION", file=sys.stderr)
        sys.exit(2)
    print(compiled_copy(Path(sys.argv[1])))
