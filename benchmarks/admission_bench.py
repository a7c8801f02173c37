"""Admission throughput and latency: `colocate serve` against a bare aiohttp HTTPS server.

Drives both with wrk (Debian package `wrk`) over keep-alive HTTPS connections, POSTing the same
realistic ~4.7 KB pod AdmissionReview to /mutate-pod, and prints the maximum requests/s with p50 and
p99 (closed loop: every connection sends its next request as soon as the last one is answered, so
latency there is mostly queueing, connections / throughput), then p50 and p99 at a fixed rate over
16 connections (open loop, the latency an API server sees at that load), and the ratios. Scenarios:
the floor (a bare aiohttp server on the stdlib loop, as issue 17 measures it, the same on uvloop,
and on uvloop parsing the review and answering with a patch of colocate's size: what no webhook
can skip), colocate with 20 and with 1,000 profiles, 20 profiles with --workers 2, and 20 profiles
in plain Python. colocate runs as users run it, its hot path compiled with mypyc (`pip install .`,
the image; built here in a copy of the tree, `devtools.compiled_copy`, about 20 s), except in the
plain-Python scenario (the checkout, as `pip install -e .` runs it), and with its defaults: the
JSON admission log line on (to /dev/null) and metrics on.
As in issue 17's harness, each single-process server is pinned to core 0 and wrk to core 1 (when
the machine has two cores and `taskset`); `--workers 2` is not pinned.

The goals (issue 40) are ratios to the floor: at least 0.5 of its requests/s and a p99 within 2x
its own, compiled, measured side by side. So the floor and colocate (20 and 1,000 profiles) are
measured in `--rounds` rounds, each colocate run right after its round's floor, and every ratio is
taken within a round: a neighbour that slows the machine for a minute slows both sides of a pair.
The ratios print per round and as the median, with the machine's load average before and after.
The other scenarios run once, in the first round. The CPU ratio (the floor's CPU per request over
colocate's) is what the requests/s ratio becomes when the server has its core to itself; on a
shared machine it is the steadier of the two.
Run: `.venv/bin/python benchmarks/admission_bench.py [--duration 10] [--rounds 3] [--connections 32]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
#: the cluster states colocate is measured with (`write_state`): this many profiles, three matching
PROFILE_COUNTS = (20, 1000)
sys.path.insert(0, str(REPO))

from certs.generate import ensure_serving_certs  # noqa: E402
from devtools.compiled_copy import compiled_copy  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def realistic_pod() -> dict:
    """A Deployment-owned pod with the usual clutter: env, mounts, probes, tolerations, affinity."""
    container = {
        "name": "executor",
        "image": "registry.example.com/analytics/spark-executor:3.5.1-r12",
        "imagePullPolicy": "IfNotPresent",
        "args": ["--executor-id", "17", "--cores", "2", "--app-id", "app-20261123-0042"],
        "env": [{"name": f"SPARK_ENV_{i}", "value": f"value-{i}-" + "x" * 24} for i in range(18)]
        + [{"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
        "ports": [{"containerPort": 7079, "name": "blockmanager", "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi"}},
        "volumeMounts": [
            {"name": "spark-local-dir-1", "mountPath": "/var/data/spark-1"},
            {"name": "spark-conf-volume", "mountPath": "/opt/spark/conf"},
            {
                "name": "kube-api-access-7x2fz",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 7079}, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "spark-executor-7d9f8b6c5-",
            "namespace": "analytics",
            "labels": {
                "app": "spark",
                "spark-role": "executor",
                "spark-app-selector": "app-20261123-0042",
                "pod-template-hash": "7d9f8b6c5",
                "koordinator.sh/enable-colocation": "true",
                "team": "data-platform",
            },
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "7079",
                "kubectl.kubernetes.io/default-container": "executor",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "spark-executor-7d9f8b6c5",
                    "uid": "8f6c1a1e-52a4-4c1b-9d1e-2f0b6a5a9c3d",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [container],
            "volumes": [
                {"name": "spark-local-dir-1", "emptyDir": {}},
                {"name": "spark-conf-volume", "configMap": {"name": "spark-conf", "defaultMode": 420}},
                {
                    "name": "kube-api-access-7x2fz",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        ],
                    },
                },
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "spark",
            "securityContext": {"runAsUser": 185, "fsGroup": 185},
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "node-pool", "operator": "In", "values": ["batch", "mixed"]}]}
                        ]
                    }
                }
            },
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
    }


def review_body() -> bytes:
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "analytics",
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:replicaset-controller",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
            },
            "object": realistic_pod(),
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
    return json.dumps(review).encode()


def write_state(directory: Path, profile_count: int) -> None:
    """`profile_count` profiles of which three match the pod; the rest select other teams and namespaces."""
    directory.mkdir(parents=True)
    shutil.copy(REPO / "manifests" / "cluster" / "priorityclasses.yaml", directory)
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "analytics", "labels": {"koordinator.sh/enable-colocation": "true"}},
        }
    ]
    profiles = [
        {
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": {"name": "colocation-profile-example"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                "selector": {"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                "qosClass": "BE",
                "priorityClassName": "koord-batch",
                "koordinatorPriority": 1000,
                "schedulerName": "koord-scheduler",
                "labels": {"koordinator.sh/mutated": "true"},
                "annotations": {"koordinator.sh/intercepted": "true"},
            },
        },
        {
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": {"name": "spark-executors"},
            "spec": {
                "selector": {"matchExpressions": [{"key": "spark-role", "operator": "In", "values": ["executor"]}]},
                "labels": {"colocate.example.com/workload": "spark"},
            },
        },
        {
            "apiVersion": "config.koordinator.sh/v1alpha1",
            "kind": "ClusterColocationProfile",
            "metadata": {"name": "team-data-platform"},
            "spec": {"selector": {"matchLabels": {"team": "data-platform"}}, "annotations": {"cost-center": "dp-42"}},
        },
    ]
    for index in range(profile_count - len(profiles)):
        profiles.append(
            {
                "apiVersion": "config.koordinator.sh/v1alpha1",
                "kind": "ClusterColocationProfile",
                "metadata": {"name": f"team-{index:04d}"},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"team": f"team-{index:04d}"}},
                    "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [f"app-{index}"]}]},
                    "qosClass": "LS",
                    "labels": {"team": f"team-{index:04d}"},
                },
            }
        )
        namespaces.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": f"team-{index:04d}", "labels": {"team": f"team-{index:04d}"}},
            }
        )
    (directory / "profiles.yaml").write_text(yaml.safe_dump_all(profiles))
    (directory / "namespaces.yaml").write_text(yaml.safe_dump_all(namespaces))


def wait_ready(port: int, ca: Path, path: str, deadline: float = 30, health: int | None = None) -> None:
    """Until `path` answers on the webhook port, or, with `health`, /readyz on that health listener."""
    context = ssl.create_default_context(cafile=str(ca))
    url = f"http://127.0.0.1:{health}/readyz" if health is not None else f"https://127.0.0.1:{port}{path}"
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, context=None if health else context, timeout=1) as response:
                if response.status in (200, 405):
                    return
        except urllib.error.HTTPError as error:
            if error.code == 405:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not become ready")


WRK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("{body}", "rb")
wrk.body = f:read("*all")
f:close()
done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %f %d %d\\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""  # noqa: E501 (Lua source run by wrk, kept byte for byte)


def _pinned(core: int) -> list[str]:
    """`taskset -c core` when there is a second core to give the load generator, else nothing."""
    return ["taskset", "-c", str(core)] if (os.cpu_count() or 1) >= 2 and shutil.which("taskset") else []


def run_wrk(port: int, lua: Path, duration: int, connections: int) -> dict:
    command = [
        *_pinned(1),
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{duration}s",
        "--latency",
        "-s",
        str(lua),
        f"https://127.0.0.1:{port}/mutate-pod",
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    match = re.search(r"RESULT (\S+) (\S+) (\S+) (\d+) (\d+)", output)
    if not match:
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    rps, p50, p99, count, errors = match.groups()
    return {
        "rps": float(rps),
        "p50_ms": float(p50),
        "p99_ms": float(p99),
        "requests": int(count),
        "errors": int(errors),
    }


async def _fixed_rate(port: int, ca: Path, body: bytes, rate: float, connections: int, duration: float) -> dict:
    """Open-loop load: requests start on a fixed schedule whether or not earlier ones finished, so the
    latency measured is the server's, not the queue a closed loop builds in front of it."""
    import asyncio

    import aiohttp

    context = ssl.create_default_context(cafile=str(ca))
    latencies: list[float] = []
    errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=connections)) as session:

        async def one() -> None:
            nonlocal errors
            started = time.perf_counter()
            try:
                async with session.post(
                    f"https://127.0.0.1:{port}/mutate-pod", data=body, headers={"Content-Type": "application/json"}
                ) as response:
                    await response.read()
                    if response.status != 200:
                        errors += 1
            except aiohttp.ClientError:
                errors += 1
            latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(one() for _ in range(connections)))  # open the connections
        latencies.clear()
        tasks, start, count = [], time.perf_counter(), int(rate * duration)
        for index in range(count):
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    latencies.sort()
    return {
        "rate": rate,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "errors": errors,
    }


def _process_tree_cpu_seconds(root: int) -> float:
    """utime + stime of `root` and its descendants (the workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(cpu.get(pid, 0.0) for pid in tree)


def measure(
    command: list[str],
    port: int,
    ca: Path,
    ready_path: str,
    lua: Path,
    args: argparse.Namespace,
    body: bytes,
    pin: bool = True,
    cwd: Path = REPO,
    health: int | None = None,
) -> dict:
    import asyncio

    process = subprocess.Popen(
        [*(_pinned(0) if pin else []), *command], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_ready(port, ca, ready_path, health=health)
        run_wrk(port, lua, 2, args.connections)  # warm-up
        cpu_before = _process_tree_cpu_seconds(process.pid)
        result = run_wrk(port, lua, args.duration, args.connections)
        # CPU time per request is what the server costs, and unlike req/s it barely moves when other
        # processes share the machine.
        result["cpu_us"] = (_process_tree_cpu_seconds(process.pid) - cpu_before) / max(result["requests"], 1) * 1e6
        result["fixed"] = asyncio.run(_fixed_rate(port, ca, body, args.rate, 16, args.duration))
        return result
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _scenarios(root: Path, compiled: Path, baseline: Path | None, health: int) -> dict[str, tuple[Any, Path]]:
    """Every scenario's command (given its port) and the tree it runs from."""
    serve = [sys.executable, "-m", "colocate.main", "serve", "--cert-dir", str(root / "certs"), "--host", "127.0.0.1"]
    colocate = [*serve, "--health-probe-bind-address", f"127.0.0.1:{health}"]
    bare = [sys.executable, str(REPO / "benchmarks" / "bare_server.py"), "--cert-dir", str(root / "certs")]

    def state(count: int) -> list[str]:
        return ["--cluster", str(root / f"state-{count}")]

    scenarios: dict[str, tuple[Any, Path]] = {
        FLOOR: (lambda port: [*bare, "--port", str(port)], REPO),
        "bare aiohttp on uvloop": (lambda port: [*bare, "--port", str(port), "--uvloop"], REPO),
        "bare on uvloop + parse + sized answer": (
            lambda port: [*bare, "--port", str(port), "--uvloop", "--parse"],
            REPO,
        ),
    }
    for count in PROFILE_COUNTS:
        if baseline is not None:  # before: the baseline tree, whose probes are on the webhook port
            scenarios[f"baseline, {count} profiles"] = (
                lambda port, c=count: [*serve, *state(c), "--port", str(port)],
                baseline,
            )
        scenarios[f"colocate, {count} profiles"] = (
            lambda port, c=count: [*colocate, *state(c), "--port", str(port)],
            compiled,
        )
    scenarios["colocate, 20 profiles, plain Python"] = (
        lambda port: [*colocate, *state(20), "--port", str(port)],
        REPO,
    )
    scenarios["colocate, 20 profiles, --workers 2"] = (
        lambda port: [*colocate, *state(20), "--port", str(port), "--workers", "2"],
        compiled,
    )
    return scenarios


#: the scenario every ratio is taken against
FLOOR = "bare aiohttp (fixed response)"
#: the scenarios measured in every round, each right after the round's floor; the others once
COMPARED = ("colocate, 20 profiles", "colocate, 1000 profiles", "baseline, 20 profiles", "baseline, 1000 profiles")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _print_result(name: str, r: dict) -> None:
    f = r["fixed"]
    print(
        f"{name:38s} max {r['rps']:6.0f} req/s  p50 {r['p50_ms']:6.2f} ms  p99 {r['p99_ms']:6.2f} ms  "
        f"cpu {r['cpu_us']:5.0f} us/req  "
        f"| at {f['rate']:.0f} req/s: p50 {f['p50_ms']:5.2f} ms  p99 {f['p99_ms']:5.2f} ms  "
        f"| errors {r['errors'] + f['errors']}",
        flush=True,
    )


def _ratios(mine: dict, floor: dict) -> dict[str, float]:
    return {
        "rps": mine["rps"] / floor["rps"],
        "p99": mine["p99_ms"] / floor["p99_ms"],
        "cpu": floor["cpu_us"] / mine["cpu_us"],
    }


def _print_ratios(rounds: list[dict[str, dict]]) -> None:
    """Per compared scenario: its ratios to the floor of the same round, each round and the median."""
    for name in COMPARED:
        pairs = [_ratios(one[name], one[FLOOR]) for one in rounds if name in one]
        if not pairs:
            continue
        for key, label, goal in (
            ("rps", "req/s / the floor's", ">= 0.5"),
            ("p99", "p99 / the floor's", "<= 2"),
            ("cpu", "the floor's CPU per request / its", ">= 0.5 where no neighbour takes the core"),
        ):
            values = [pair[key] for pair in pairs]
            each = " ".join(f"{value:.2f}" for value in values)
            print(f"{name:24s} {label:34s} median {statistics.median(values):.2f} (rounds: {each}; goal {goal})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rate", type=float, default=500, help="requests/s of the fixed-rate latency run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="times the floor and colocate (20 and 1,000 profiles) are measured, side by side in each round",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="TREE",
        help="another checkout (e.g. a `git worktree` of main) measured too, compiled the same way, each of its "
        "colocate scenarios right before this tree's: a before/after pair in one run",
    )
    parser.add_argument("--only", action="append", default=[], metavar="TEXT", help="run the scenarios naming TEXT")
    parser.add_argument(
        "--compiled",
        type=Path,
        metavar="DIR",
        help="serve from this compiled copy of the tree (`python -m devtools.compiled_copy DIR`) instead of "
        "building one: repeated runs of an unchanged tree skip the build",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: apt-get install wrk", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print("--rounds must be at least 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="colocate-bench-") as temporary:
        root = Path(temporary)
        certs, _ = ensure_serving_certs(root / "certs")
        body = root / "review.json"
        body.write_bytes(review_body())
        lua = root / "post.lua"
        lua.write_text(WRK_LUA.replace("{body}", str(body)))
        print(
            f"pod AdmissionReview: {body.stat().st_size} bytes; {args.connections} keep-alive connections, "
            f"{args.duration}s per run, {args.rounds} rounds; {_load()}"
        )
        for count in PROFILE_COUNTS:
            write_state(root / f"state-{count}", count)
        # what users run (`pip install .`, the image): the hot path compiled, in a copy of the tree
        compiled = args.compiled.resolve() if args.compiled else compiled_copy(root / "compiled")
        print(f"colocate's hot path compiled with mypyc in {compiled} (plain Python: the checkout)", flush=True)
        baseline = compiled_copy(root / "baseline", source=args.baseline) if args.baseline else None
        health = free_port()  # colocate's /readyz (webhook.probes), for the readiness wait
        scenarios = _scenarios(root, compiled, baseline, health)
        if args.only:
            scenarios = {n: c for n, c in scenarios.items() if n == FLOOR or any(t in n for t in args.only)}
        rounds: list[dict[str, dict]] = []
        for number in range(args.rounds):
            print(f"round {number + 1} of {args.rounds}; {_load()}", flush=True)
            results: dict[str, dict] = {}
            for name, (command, tree) in scenarios.items():
                if number and name != FLOOR and name not in COMPARED:
                    continue  # the other references: once
                port = free_port()
                bare = name.startswith("bare")
                results[name] = measure(
                    command(port),
                    port,
                    certs.ca,
                    "/mutate-pod" if bare else "/readyz",
                    lua,
                    args,
                    body.read_bytes(),
                    pin="--workers" not in name,
                    cwd=tree,
                    health=health if name.startswith("colocate") else None,
                )
                _print_result(name, results[name])
            rounds.append(results)
        print(f"after the last round: {_load()}")
        _print_ratios(rounds)
        first = rounds[0]
        if "colocate, 20 profiles, --workers 2" in first and "colocate, 20 profiles" in first:
            twenty = first["colocate, 20 profiles"]["rps"]
            two_workers = first["colocate, 20 profiles, --workers 2"]["rps"]
            print(f"--workers 2 / 1 worker (round 1):    {two_workers / twenty:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
