"""CLI start-up: what `colocate --version`, `colocate certs inspect` and `colocate --help` cost.

Each command runs `--runs` times as a fresh process (`python -m colocate.main`, what the console
script runs), from this checkout or `--tree` (another checkout, e.g. main, for a before/after
pair). Prints, per command, the best and the median wall time and CPU time (user + system of the
child, from `wait4`), and the machine's load average before and after: wall time on a shared
machine says more about the neighbours than about colocate, so read the CPU column. The goal
(issue 38): `--version` and `certs inspect` under 0.3 s on a quiet machine.

Run: `.venv/bin/python benchmarks/startup_bench.py [--runs 10] [--tree PATH]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def commands(cert_dir: Path) -> dict[str, list[str]]:
    return {
        "colocate --version": ["--version"],
        "colocate certs inspect": ["certs", "inspect", "--cert-dir", str(cert_dir)],
        "colocate --help": ["--help"],
    }


def run_once(tree: Path, argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `python -m colocate.main ARGV` started from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "colocate.main", *argv],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # certs inspect exits 1 on findings; anything else is broken
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode} in {tree}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cert_dir = Path(scratch) / "certs"
        subprocess.run(
            [sys.executable, "-m", "colocate.main", "certs", "generate", "--cert-dir", str(cert_dir)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"tree {args.tree}, {args.runs} runs each, load average before {os.getloadavg()}")
        print(f"{'command':<26} {'wall best':>10} {'wall median':>12} {'CPU best':>9} {'CPU median':>11}")
        for name, argv in commands(cert_dir).items():
            walls, cpus = zip(*(run_once(args.tree, argv) for _ in range(args.runs)), strict=True)
            print(
                f"{name:<26} {min(walls):>9.3f}s {statistics.median(walls):>11.3f}s "
                f"{min(cpus):>8.3f}s {statistics.median(cpus):>10.3f}s"
            )
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
