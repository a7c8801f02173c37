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

With `--servers` it counts whole servers instead, request and answer over TLS: the benchmark's
floor (`bare_server.py`, a fixed answer on the stdlib loop, what `admission_bench.py` takes its
ratios against) and `colocate serve` (compiled: `--compiled DIR`, or a copy built here, about two
minutes; 20 profiles), each under callgrind with collection switched on only around `--requests`
admissions sent over four kept-alive connections at once (start-up, the TLS handshakes and the
warm-up are not counted). It prints instructions per request and colocate's over the floor's:
issue 40's CPU goal (at least half the floor's requests/s) is this ratio at 2 or under when both run
as many instructions per cycle (measured at 2,596 MHz: the floor 5.7 and colocate 4.9 instructions
per ns of CPU, so colocate needs a little under 2).

Run: `apt-get install -y valgrind && .venv/bin/python benchmarks/admission_instructions.py [--profiles 20]`,
or `... --servers [--compiled DIR] [--requests 300]`.
"""

from __future__ import annotations

import argparse
import http.client
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")
_TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
#: how long a server under valgrind (tens of times slower) may take to start
_START_SECONDS = 600
#: kept-alive connections sending admissions at once (`--servers`)
_CONNECTIONS = 4


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


def _post(connection: http.client.HTTPSConnection, body: bytes, count: int) -> None:
    for _ in range(count):
        connection.request("POST", "/mutate-pod", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200 or b'"allowed":true' not in answer:
            raise RuntimeError(f"the server answered {response.status}: {answer[:300]!r}")


def _callgrind(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True)


def _clients(port: int, ca: Path, count: int) -> list[http.client.HTTPSConnection]:
    context = ssl.create_default_context(cafile=str(ca))
    return [
        http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=_START_SECONDS) for _ in range(count)
    ]


def _post_from_all(clients: list[http.client.HTTPSConnection], body: bytes, each: int) -> None:
    """`each` admissions from every client at once (one thread each), as the API server keeps
    several connections busy: the server answers them in the same loop turns."""
    with ThreadPoolExecutor(len(clients)) as pool:
        for done in [pool.submit(_post, client, body, each) for client in clients]:
            done.result()


def server_instructions(
    command: list[str], cwd: Path, port: int, ca: Path, body: bytes, requests: int, health: int | None = None
) -> float:
    """Instructions per admission of the server `command` starts on `port` (ready when its `health`
    listener's /readyz says so, else when the port answers): collected by callgrind only while
    `requests` admissions are answered over `_CONNECTIONS` kept-alive connections."""
    from benchmarks.admission_bench import wait_ready

    each = max(requests // _CONNECTIONS, 1)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        process = subprocess.Popen([*valgrind, *command], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(port, ca, "/mutate-pod", deadline=_START_SECONDS, health=health)
            clients = _clients(port, ca, _CONNECTIONS)
            _post_from_all(clients, body, 10)  # the handshakes, the first requests' one-off costs
            _callgrind(process.pid, "--instr=on")
            _post_from_all(clients, body, each)
            _callgrind(process.pid, "--instr=off")
            _callgrind(process.pid, "--dump")
            for client in clients:
                client.close()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=_START_SECONDS)
        dumped = [path for path in Path(tmp).glob("callgrind.out.*") if path.suffix != ".out"]
        counts = [int(m.group(1)) for path in dumped if (m := _TOTALS.search(path.read_text(errors="replace")))]
        if not counts:
            raise RuntimeError(f"callgrind wrote no counted dump in {tmp}")
        return max(counts) / (each * _CONNECTIONS)


def compare_servers(args: argparse.Namespace) -> int:
    """The floor and `colocate serve` (compiled), each counted by `server_instructions`: the very
    commands `admission_bench.py` times (its `_scenarios`), so the two benchmarks' ratios are of the
    same servers."""
    sys.path.insert(0, str(REPO))
    from benchmarks.admission_bench import FLOOR, PROFILE_COUNTS, _scenarios, free_port, review_body, write_state
    from certs.generate import ensure_serving_certs
    from devtools.compiled_copy import compiled_copy

    if args.profiles not in PROFILE_COUNTS:
        counts = " or ".join(map(str, PROFILE_COUNTS))
        print(f"--servers runs admission_bench.py's servers: --profiles {counts}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="colocate-instructions-") as temporary:
        root = Path(temporary)
        certs, _ = ensure_serving_certs(root / "certs")
        write_state(root / f"state-{args.profiles}", args.profiles)
        compiled = args.compiled.resolve() if args.compiled else compiled_copy(root / "compiled")
        health = free_port()
        scenarios = _scenarios(root, compiled, None, health)
        body = review_body()
        floor_command, floor_tree = scenarios[FLOOR]
        port = free_port()
        floor = server_instructions(floor_command(port), floor_tree, port, certs.ca, body, args.requests)
        print(f"{FLOOR}: {floor:,.0f} instructions per request", flush=True)
        colocate_command, colocate_tree = scenarios[f"colocate, {args.profiles} profiles"]
        port = free_port()
        mine = server_instructions(colocate_command(port), colocate_tree, port, certs.ca, body, args.requests, health)
        print(f"colocate, compiled, {args.profiles} profiles: {mine:,.0f} instructions per request")
        print(f"colocate / the floor: {mine / floor:.2f} (issue 40's CPU goal: a little under 2)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--servers", action="store_true", help="count the floor's and colocate's whole servers")
    parser.add_argument("--requests", type=int, default=300, help="admissions counted per server (--servers)")
    parser.add_argument("--compiled", type=Path, metavar="DIR", help="colocate from this compiled copy (--servers)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        admit(args.child, args.profiles)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install -y valgrind", file=sys.stderr)
        return 2
    if args.servers:
        return compare_servers(args)
    base = instructions(0, args.profiles)
    loaded = instructions(args.calls, args.profiles)
    per_call = (loaded - base) / args.calls
    print(f"serve_review on /mutate-pod, {args.profiles} profiles: {per_call:,.0f} instructions per admission")
    return 0


if __name__ == "__main__":
    sys.exit(main())
