"""The README's first command, timed: from a fresh clone to `/readyz` answering.

Clones this checkout's HEAD (or `--ref`) into a temporary directory, runs the README's quick-start
line there as written, the install (`python3 -m venv .venv && .venv/bin/pip install .`) then
`colocate serve` with its listeners moved to free ports (other processes on the machine may hold
9443, 8081 and 8080), and polls `/readyz` until it answers. Prints the wall time and CPU time
(user + system of every child, from `wait4`/`/proc`) of the install and of the start, the total, and
the load average before and after: on a shared machine read the CPU figures, wall time is mostly the
neighbours'. The goal (issue 38): under 2 minutes on a quiet 2-core machine, with the admission hot
path compiled.

What was measured to choose the build (mypyc's C compile of `colocate/cluster/compiled.py`'s
modules alone, `setup.py build_ext`, CPU seconds on a machine at load 13-19, where CPU figures
run about half high):

| modules compiled | opt level | mode | CPU |
|---|---|---|---|
| admission + whatif (before) | 3 | one shared library | 166.6 s |
| admission | 3 | one shared library | 38.0 s (chosen) |
| admission | 1 | one shared library | 29.8 s |
| admission | 3 | separate, 2 jobs in parallel | 69.4 s |

Compiling the whatif modules only on request (COLOCATE_COMPILE_GROUPS=admission,whatif) saves the
most; separate compilation lets the C files build in parallel but nearly doubles the CPU, so on
two cores it gains nothing; opt level 1 saves a fifth of the compile and would give up hot-path
speed that the compilation is for.

Run: `.venv/bin/python benchmarks/quickstart_bench.py [--ref HEAD]`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.docs.test_commands import quick_start  # noqa: E402
from tests.docs.test_quick_start_listeners import on_free_ports  # noqa: E402


def cpu_of(pid: int) -> float:
    """User + system seconds of a running process and its reaped children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def install(clone: Path, line: str) -> tuple[float, float]:
    """Run the install half of the README's line in `clone`: wall and CPU seconds."""
    started = time.perf_counter()
    child = subprocess.Popen(["sh", "-c", line], cwd=clone, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{line}: failed\n{child.stderr.read().decode()[-3000:] if child.stderr else ''}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def serve_until_ready(clone: Path, argv: list[str]) -> tuple[float, float]:
    """Start the server as the README does (ports moved) and wait for /readyz: wall and CPU seconds."""
    health = argv[argv.index("--health-probe-bind-address") + 1]
    started = time.perf_counter()
    server = subprocess.Popen([str(clone / ".venv/bin/colocate"), *argv], cwd=clone, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                if urllib.request.urlopen(f"http://{health}/readyz", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.05)
            if server.poll() is not None:
                raise SystemExit(f"colocate serve exited {server.returncode}")
        return time.perf_counter() - started, cpu_of(server.pid)
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    args = parser.parse_args()
    (block, _) = quick_start()
    (line,) = block.lines
    install_line, _, serve_line = line.rpartition(" && ")
    serve_argv = on_free_ports(shlex.split(serve_line)[1:])
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "colocate"
        started = time.perf_counter()
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", args.ref], check=True)
        clone_wall = time.perf_counter() - started
        install_wall, install_cpu = install(clone, install_line)
        serve_wall, serve_cpu = serve_until_ready(clone, serve_argv)
        compiled = subprocess.run(
            [
                str(clone / ".venv/bin/python"),
                "-c",
                "from colocate.cluster.compiled import describe; print(describe())",
            ],
            cwd=scratch,
            capture_output=True,
            text=True,
        ).stdout.strip()
    print(f"load average before {load_before}, after {os.getloadavg()}")
    print(f"compiled: {compiled}")
    print(f"{'step':<34} {'wall':>8} {'CPU':>8}")
    print(f"{'git clone':<34} {clone_wall:>7.1f}s {'-':>8}")
    print(f"{'venv + pip install .':<34} {install_wall:>7.1f}s {install_cpu:>7.1f}s")
    print(f"{'colocate serve until /readyz':<34} {serve_wall:>7.1f}s {serve_cpu:>7.1f}s")
    total = clone_wall + install_wall + serve_wall
    print(f"{'total':<34} {total:>7.1f}s {install_cpu + serve_cpu:>7.1f}s")


if __name__ == "__main__":
    main()
