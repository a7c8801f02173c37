"""Endurance soak (not a test): `colocate serve --workers 2` against the API-server stand-in.

For `--duration` seconds (10 minutes by default) it sends pod AdmissionReviews at a fixed rate
(open loop: a request is started on schedule whether or not earlier ones have been answered, up
to a bounded number in flight), while a ClusterColocationProfile is rewritten every second and the
stand-in drops every watch every 30 seconds. Every answer is checked: allowed, a JSONPatch that
applies to the pod, QoS class BE, and a generation label written by a version of the profile no
older than the last one the server could have missed. It samples the server's resident memory
(the process tree) every few seconds and prints, per minute, requests, failures, wrong answers and
latency percentiles, then the memory growth after warm-up. Everything runs on 127.0.0.1, bounded
in time and in requests in flight, and stops by itself.

    .venv/bin/python -m benchmarks.soak [--duration 600] [--rate 500] [--warmup 60]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import jsonpatch

from tests.support.apiserver import ApiServer
from tests.support.cluster import ColocateProcess, make_certs
from tests.support.wait import wait_for

PROFILE = "soak-profile"
GENERATION_LABEL = "soak.colocate.io/generation"
MAX_IN_FLIGHT = 256


def profile(generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": {"name": PROFILE},
        "spec": {
            "namespaceSelector": {"matchLabels": {"soak": "true"}},
            "selector": {"matchLabels": {"app": "soak"}},
            "qosClass": "BE",
            "priorityClassName": "koord-batch",
            "labels": {GENERATION_LABEL: str(generation)},
        },
    }


def pod(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"soak-{index}", "namespace": "soak", "labels": {"app": "soak"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
            ]
        },
    }


def review(index: int) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": f"soak-{index}",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "namespace": "soak",
                "operation": "CREATE",
                "userInfo": {"username": "soak"},
                "object": pod(index),
            },
        }
    ).encode()


@dataclass
class Minute:
    sent: int = 0
    failed: int = 0
    wrong: int = 0
    latencies: list[float] = field(default_factory=list)


@dataclass
class Soak:
    generation: int = 0
    generation_times: dict[int, float] = field(default_factory=dict)
    minutes: dict[int, Minute] = field(default_factory=dict)
    rss: list[tuple[float, int]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)  # the first few wrong answers, for the report

    def minute(self, elapsed: float) -> Minute:
        return self.minutes.setdefault(int(elapsed // 60), Minute())


def tree_rss_bytes(root: int) -> int:
    """Resident memory of a process and its descendants, from /proc."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/status") as status:
                total += next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                pending.extend(int(child) for child in children.read().split())
        except (OSError, StopIteration):
            continue
    return total


def check(answer: dict[str, Any], index: int, soak: Soak, sent_at: float, staleness: float) -> str:
    """'' when the answer is right, else what is wrong with it."""
    response = answer.get("response") or {}
    if response.get("uid") != f"soak-{index}" or not response.get("allowed"):
        return "not allowed or wrong uid"
    try:
        patched = jsonpatch.apply_patch(pod(index), json.loads(base64.b64decode(response["patch"])))
    except Exception as exc:  # noqa: BLE001 - any broken patch is a wrong answer
        if len(soak.samples) < 3:
            soak.samples.append(json.dumps(answer)[:3000])
        return f"patch does not apply: {type(exc).__name__}: {exc}"
    labels = patched["metadata"].get("labels") or {}
    if labels.get("koordinator.sh/qosClass") != "BE" or patched["spec"].get("priorityClassName") != "koord-batch":
        return "profile not applied"
    generation = int(labels.get(GENERATION_LABEL, "-1"))
    # The newest generation the server must have seen: any written `staleness` seconds before sending.
    settled = [g for g, at in soak.generation_times.items() if at <= sent_at - staleness]
    if generation not in soak.generation_times or (settled and generation < max(settled)):
        return "stale profile generation"
    return ""


async def load(session: aiohttp.ClientSession, url: str, soak: Soak, args: argparse.Namespace, started: float) -> None:
    in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
    tasks: set[asyncio.Task[None]] = set()

    async def one(index: int) -> None:
        sent_at = time.monotonic()
        minute = soak.minute(sent_at - started)
        minute.sent += 1
        try:
            async with session.post(
                url,
                data=review(index),
                headers={"Content-Type": "application/json"},
                timeout=aiohttp.ClientTimeout(total=10),
            ) as answer:
                body = await answer.json() if answer.status == 200 else None
            minute.latencies.append(time.monotonic() - sent_at)
            problem = "HTTP error" if body is None else check(body, index, soak, sent_at, args.staleness)
            if problem:
                minute.wrong += 1
                soak.errors[problem] = soak.errors.get(problem, 0) + 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            minute.failed += 1
            soak.errors[type(exc).__name__] = soak.errors.get(type(exc).__name__, 0) + 1
        finally:
            in_flight.release()

    interval, index = 1.0 / args.rate, 0
    deadline = started + args.duration
    next_at = time.monotonic()
    while next_at < deadline:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))  # the schedule is the behaviour
        if in_flight.locked():
            soak.minute(time.monotonic() - started).failed += 1  # the server is this far behind: a failure
            soak.errors["over in-flight limit"] = soak.errors.get("over in-flight limit", 0) + 1
        else:
            await in_flight.acquire()
            task = asyncio.create_task(one(index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        index += 1
        next_at += interval
    await asyncio.gather(*tasks)


async def churn(api: ApiServer, soak: Soak, args: argparse.Namespace, started: float, pid: int) -> None:
    """Rewrite the profile every second, drop watches every 30 s, sample memory every 5 s."""
    last_drop = last_sample = started
    while (now := time.monotonic()) < started + args.duration:
        soak.generation += 1
        soak.generation_times[soak.generation] = now
        api.apply(profile(soak.generation))
        if now - last_drop >= 30:
            api.drop_watches()
            last_drop = now
        if now - last_sample >= 5:
            soak.rss.append((now - started, tree_rss_bytes(pid)))
            last_sample = now
        await asyncio.sleep(1.0)  # the period is the behaviour


class ClusterThread(threading.Thread):
    """The stand-in and the churn on an event loop of their own: a load generator that falls
    behind must not delay the watch events the server is judged on."""

    def __init__(self, root: Path, soak: Soak, args: argparse.Namespace) -> None:
        super().__init__(name="stand-in", daemon=True)
        self.root, self.soak, self.args = root, soak, args
        self.kubeconfig: Path | None = None
        self.listening = threading.Event()
        self.go = threading.Event()
        self.started_at = 0.0
        self.pid = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # handed to the main thread
            self.error = exc
            self.listening.set()

    async def _serve(self) -> None:
        async with ApiServer(bookmark_interval=1.0) as api:
            api.apply(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "soak", "labels": {"soak": "true"}}}
            )
            api.apply(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "koord-batch"},
                    "value": 5000,
                }
            )
            self.soak.generation_times[0] = time.monotonic()
            api.apply(profile(0))
            self.kubeconfig = api.write_kubeconfig(self.root / "kubeconfig")
            self.listening.set()
            await asyncio.to_thread(self.go.wait)
            await churn(api, self.soak, self.args, self.started_at, self.pid)


def report(soak: Soak, args: argparse.Namespace) -> int:
    print(
        f"colocate serve --workers 2, {args.rate:g} req/s for {args.duration:g}s; profile rewritten every 1s, "
        "watches dropped every 30s"
    )
    print("minute  sent    failed  wrong   p50 ms  p99 ms")
    totals = Minute()
    for number, minute in sorted(soak.minutes.items()):
        latencies = sorted(minute.latencies) or [0.0]
        p50 = statistics.median(latencies) * 1000
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
        print(f"{number:>6}  {minute.sent:<6}  {minute.failed:<6}  {minute.wrong:<6}  {p50:6.2f}  {p99:6.2f}")
        totals.sent += minute.sent
        totals.failed += minute.failed
        totals.wrong += minute.wrong
    warm = [rss for at, rss in soak.rss if at >= args.warmup]
    growth = (warm[-1] - warm[0]) / warm[0] if len(warm) >= 2 else 0.0
    if warm:
        print(f"RSS after warm-up: {warm[0] / 2**20:.1f} MiB -> {warm[-1] / 2**20:.1f} MiB ({growth:+.1%})")
    print(
        f"total: {totals.sent} sent, {totals.failed} failed, {totals.wrong} wrong; "
        f"{soak.generation} profile generations"
    )
    if soak.errors:
        print("problems:", ", ".join(f"{name}: {count}" for name, count in sorted(soak.errors.items())))
    for sample in soak.samples:
        print("wrong answer:", sample)
    return 0 if totals.failed == 0 and totals.wrong == 0 and growth < 0.10 else 1


async def main(args: argparse.Namespace) -> int:
    soak = Soak()
    with tempfile.TemporaryDirectory(prefix="colocate-soak-") as temporary:
        root = Path(temporary)
        cluster = ClusterThread(root, soak, args)
        cluster.start()
        await asyncio.to_thread(cluster.listening.wait)
        if cluster.error is not None or cluster.kubeconfig is None:
            raise RuntimeError(f"the stand-in did not start: {cluster.error}")
        make_certs(root / "certs")
        server = ColocateProcess(
            cluster.kubeconfig, root / "certs", root / "serve.log", extra=["--workers", "2", "--reuse-port"]
        )
        try:
            context = ssl.create_default_context(cafile=str(root / "certs" / "ca.crt"))
            connector = aiohttp.TCPConnector(ssl=context, limit=MAX_IN_FLIGHT)
            async with aiohttp.ClientSession(connector=connector) as session:
                base = f"https://127.0.0.1:{server.port}"

                async def ready() -> bool:
                    try:
                        async with session.get(f"http://127.0.0.1:{server.health_port}/readyz") as answer:
                            return answer.status == 200
                    except aiohttp.ClientError:
                        return False

                await wait_for(ready, timeout=60, message="colocate ready")
                cluster.started_at, cluster.pid = time.monotonic(), server.process.pid
                cluster.go.set()
                await load(session, f"{base}/mutate-pod", soak, args, cluster.started_at)
        finally:
            server.terminate()
            await server.wait(30)
        await asyncio.to_thread(cluster.join, 10)
    return report(soak, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    parser.add_argument("--rate", type=float, default=500.0, help="requests per second (default 500)")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds before memory growth is measured")
    parser.add_argument(
        "--staleness", type=float, default=5.0, help="seconds a profile change may take to reach every worker"
    )
    raise SystemExit(asyncio.run(main(parser.parse_args())))
