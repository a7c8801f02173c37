"""Instructions per admission, counted by valgrind: a cost figure that a busy machine does not move.

Times on this project's shared 2-core machines swing by half with the neighbours' load, so small
changes to the admission path cannot be told apart by `admission_bench.py` or
`admission_stages.py`. Valgrind's callgrind counts the instructions a process executes, the same on
a quiet machine and a loaded one (within ~1 %). This script runs `serve_review` on the benchmark's
pod review and cluster state (`admission_bench.py`: 20 or 1,000 profiles, three matching) `--calls`
times under callgrind, then once with no calls, and prints the difference per call: the
instructions one admission costs in process, without HTTP and TLS. Run it from a compiled copy
(`python -m devtools.compiled_copy DIR`, then `DIR/benchmarks/admission_instructions.py`) for what
users run. Instructions are not time: code that allocates and chases pointers runs fewer
instructions per cycle (docs/benchmarks.md, "Instructions"), so this figure ranks changes to one
path, it does not convert to microseconds.

Run: `apt-get install -y valgrind && .venv/bin/python benchmarks/admission_instructions.py [--profiles 20]`.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")


def admit(calls: int, profiles: int) -> None:
    """The measured process: load the state, then `calls` admissions of the benchmark review."""
    sys.path.insert(0, str(REPO))
    from benchmarks.admission_bench import review_body, write_state
    from webhook.admission import serve_review
    from webhook.metrics import WebhookMetrics
    from webhook.registry import default_routes
    from webhook.snapshots import DirectorySnapshots

    with tempfile.TemporaryDirectory() as tmp:
        write_state(Path(tmp) / "state", profiles)
        snapshot = DirectorySnapshots(Path(tmp) / "state").scan()
    assert snapshot is not None
    body = review_body()
    route = next(r for r in default_routes().routes if r.path == "/mutate-pod")
    observe = WebhookMetrics().observe_plugin  # as the server passes it
    for _ in range(calls):
        serve_review(route, body, snapshot, rand_int=lambda n: 0, observe=observe)


def instructions(calls: int, profiles: int) -> int:
    """Instructions of a whole process making `calls` admissions (callgrind's total)."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={tmp}/callgrind.out",
            sys.executable,
            __file__,
            "--child",
            str(calls),
            "--profiles",
            str(profiles),
        ]
        result = subprocess.run(command, capture_output=True, check=True)
    match = _REFS.search(result.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {result.stderr[-500:]!r}")
    return int(match.group(1).replace(b",", b""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        admit(args.child, args.profiles)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install -y valgrind", file=sys.stderr)
        return 2
    base = instructions(0, args.profiles)
    loaded = instructions(args.calls, args.profiles)
    per_call = (loaded - base) / args.calls
    print(f"serve_review on /mutate-pod, {args.profiles} profiles: {per_call:,.0f} instructions per admission")
    return 0


if __name__ == "__main__":
    sys.exit(main())
