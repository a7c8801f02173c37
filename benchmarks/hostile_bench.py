"""What a hostile client costs `colocate serve`: memory, stalls and time to refuse, on 127.0.0.1.

Each scenario starts a fresh `colocate serve --cluster` (from `--repo`, so an older checkout can be
measured the same way) and prints one line of numbers:

- labels: N reviews with made-up operations; /metrics size and render time, peak RSS.
- idle: N TLS connections that finish the handshake and send nothing; RSS per connection, and how
  many are still open after `--hold` seconds.
- gzip: a gzip body that inflates to `--inflated-mib`; time until it is refused, and how long a
  normal admission sent 0.3 s later waits.
- nesting: a 900-deep affinity and a 1,000-deep limits map; status, time, longest log line.
- cap: `--max-connections 50` held by 50 connections that finished TLS and sent nothing, then N
  more TCP connections that send nothing: how long each is kept, and the server's CPU for each
  (since issue 41 each takes the place of a held one, not yet served, and is itself closed after
  `--handshake-timeout`; before, each was closed right after accept). Then 50 kept-alive
  connections idle between requests and N new clients with one admission each: how many are
  served, and the CPU per admission with the eviction that made its room.
- heads: `--connections` TLS connections each sending a head that never ends, of 127 fields of
  7 KiB (900 KiB), then of 8 (56 KiB); RSS before, with them open, and 7 s after they closed.
- flood: `--max-connections 200` (`--flood-cap`) filled by as many plain TCP sockets that send
  nothing, each reopened as the server closes it, for `--hold` seconds, while four clients send
  admissions as the API server does (a new connection when it finds none open, 10 s timeout):
  the fraction answered.
- loops (not in the default set): two symlinks to the --cluster directory itself, then a FIFO
  named *.yaml; RSS after `--hold` seconds, and whether a later profile deletion is still seen.

Run: `.venv/bin/python benchmarks/hostile_bench.py [--repo DIR] [labels idle gzip nesting cap flood heads]`.
Every loop is bounded; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, repo: Path, work: Path, *extra: str) -> None:
        self.state = work / "state"
        shutil.copytree(REPO / "manifests" / "cluster", self.state)
        self.certs = work / "certs"
        self.port = free_port()
        self.probes = free_port()  # /readyz and /metrics, on their own listener
        self.log = work / "serve.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "colocate.main",
                "serve",
                "--cluster",
                str(self.state),
                "--cert-dir",
                str(self.certs),
                "--port",
                str(self.port),
                "--host",
                "127.0.0.1",
                *self.probe_flags(repo),
                *extra,
            ],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("w"),
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.tls = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
                if self.probe("/readyz", timeout=1)[0] == 200:
                    break
            except (OSError, ssl.SSLError):
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"server did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def probe_flags(self, repo: Path) -> list[str]:
        """A checkout whose probes have their own listener (`webhook/probes.py`) is told where; an
        older one (`--repo`) serves them on the webhook port."""
        self.separate = (repo / "webhook" / "probes.py").exists()
        if not self.separate:
            return []
        address = f"127.0.0.1:{self.probes}"
        return ["--health-probe-bind-address", address, "--metrics-bind-address", address]

    def probe(self, path: str, timeout: float = 60) -> tuple[int, bytes]:
        if not self.separate:
            return self.request(path, timeout=timeout)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.probes}{path}", timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def request(
        self, path: str, data: bytes | None = None, headers: dict[str, str] | None = None, timeout: float = 60
    ) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.port}{path}",
            data=data,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def peak_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def review(pod: dict[str, Any], uid: str = "bench", operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "default",
            "operation": operation,
            "object": pod,
        },
    }


def pod(name: str = "bench") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
    }


def labels(server: Server, count: int) -> str:
    for i in range(count):
        server.request("/validate-pod", json.dumps(review(pod(), f"u{i}", f"OP{i:06d}")).encode())
    started = time.monotonic()
    _, body = server.probe("/metrics")
    render = time.monotonic() - started
    return (
        f"{count} made-up operations: /metrics {len(body) / 1e6:.2f} MB in {render:.2f}s, peak RSS "
        f"{server.peak_mib():.0f} MiB"
    )


def idle(server: Server, count: int, hold: float) -> str:
    time.sleep(0.5)
    before = server.rss_mib()
    held = []
    for _ in range(count):
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            held.append(server.tls.wrap_socket(raw, server_hostname="localhost"))
        except (OSError, ssl.SSLError):
            raw.close()
    time.sleep(0.5)
    during = server.rss_mib()
    time.sleep(hold)
    still_open = 0
    for sock in held:
        sock.setblocking(False)
        try:
            still_open += sock.recv(1) != b""
        except ssl.SSLWantReadError:
            still_open += 1
        except OSError:
            pass
        sock.close()
    per = (during - before) * 1024 / max(len(held), 1)
    return (
        f"{len(held)}/{count} idle TLS connections: RSS {before:.0f} -> {during:.0f} MiB ({per:.0f} KiB each); "
        f"{still_open} still open after {hold:.0f}s"
    )


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cap(server: Server, count: int) -> str:
    """Run against a server started with --max-connections CAP (main)."""
    held = [server.tls.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="localhost")]
    held += [
        server.tls.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="localhost")
        for _ in range(CAP - 1)
    ]
    time.sleep(0.5)
    waits, cpu = [], _cpu_seconds(server.process.pid)
    for _ in range(count):
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            try:
                sock.recv(1)
            except OSError:
                pass
        waits.append(time.perf_counter() - started)
    refusal_us = (_cpu_seconds(server.process.pid) - cpu) / count * 1e6
    for sock in held:
        sock.close()
    time.sleep(0.5)
    waits.sort()
    kept = []
    body = json.dumps(review(pod())).encode()
    request = (
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    for _ in range(CAP):  # one client holding every connection, kept alive between its requests
        sock = server.tls.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="localhost")
        sock.sendall(request)
        sock.recv(65536)
        kept.append(sock)
    served, cpu = 0, _cpu_seconds(server.process.pid)
    for _ in range(count):
        try:
            status, _ = server.request("/mutate-pod", body, timeout=5)
        except OSError:  # refused at the cap (urllib's URLError is an OSError)
            status = 0
        served += status == 200
    newcomer_us = (_cpu_seconds(server.process.pid) - cpu) / count * 1e6
    for sock in kept:
        sock.close()
    return (
        f"{count} connections over a full cap: closed after {waits[len(waits) // 2] * 1e3:.2f} ms (p50), "
        f"{waits[int(len(waits) * 0.99)] * 1e3:.2f} ms (p99), {refusal_us:.0f} us of server CPU each; "
        f"with every connection idle-kept-alive by one client, {served}/{count} new clients served "
        f"({newcomer_us:.0f} us of server CPU each: TLS handshake, eviction, admission)"
    )


CAP = 50
FLOOD_CAP = 200


def _send_heads(server: Server, count: int, fields: int) -> tuple[list[ssl.SSLSocket], int]:
    """`count` TLS connections each sending a head of `fields` fields of 7 KiB that never ends."""
    field = b"X-Filler-%03d: " + b"a" * 7000 + b"\r\n"
    held, refused = [], 0
    for _ in range(count):
        sock = server.tls.wrap_socket(socket.create_connection(("127.0.0.1", server.port)), server_hostname="localhost")
        try:
            sock.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\n")
            for i in range(fields):
                sock.sendall(field % i)
        except OSError:  # closed by the server: the head was refused
            refused += 1
        held.append(sock)
    return held, refused


def heads(server: Server, count: int) -> str:
    out = []
    for fields in (127, 8):  # 900 KiB (past any bound), then 56 KiB (within 64 KiB)
        time.sleep(0.5)
        before = server.rss_mib()
        held, refused = _send_heads(server, count, fields)
        time.sleep(1)
        during = server.rss_mib()
        for sock in held:
            sock.close()
        time.sleep(7)
        out.append(
            f"{count} x {fields * 7} KiB heads ({refused} refused while sending): RSS {before:.0f} -> "
            f"{during:.0f} MiB, {server.rss_mib():.0f} MiB 7 s after they closed"
        )
    return "; ".join(out)


def _silent_flood(port: int, count: int, stop: threading.Event) -> int:
    """`count` plain sockets that send nothing, each reopened as it is closed, until `stop`."""
    import selectors

    selector = selectors.DefaultSelector()

    def open_one() -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_READ)

    for _ in range(count):
        open_one()
    reopened = 0
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.05):
            selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
            reopened += 1
            open_one()
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    return reopened


def flood(server: Server, seconds: float, cap: int = FLOOD_CAP) -> str:
    """Run against a server started with --max-connections `cap`."""
    stop, results = threading.Event(), {"answered": 0, "sent": 0, "reopened": 0}
    flooder = threading.Thread(target=lambda: results.update(reopened=_silent_flood(server.port, cap, stop)))
    flooder.start()
    time.sleep(1)
    body = json.dumps(review(pod())).encode()
    until = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < until:
            results["sent"] += 1
            try:
                status, _ = server.request("/mutate-pod", body, timeout=10)
            except OSError:
                status = 0
            results["answered"] += status == 200
            time.sleep(0.05)

    clients = [threading.Thread(target=client) for _ in range(4)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    stop.set()
    flooder.join()
    answered, sent = results["answered"], results["sent"]
    return (
        f"{cap} silent sockets reopened {results['reopened']} times in {seconds:.0f}s: "
        f"{answered}/{sent} admissions answered ({answered / max(sent, 1):.1%})"
    )


def gzip_bomb(server: Server, inflated_mib: int) -> str:
    buffer = io.BytesIO()
    chunk = b"0" * (1 << 20)
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as out:
        out.write(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "x": "')
        for _ in range(inflated_mib):
            out.write(chunk)
        out.write(b'"}')
    bomb = buffer.getvalue()
    result: dict[str, float] = {}

    def send_bomb() -> None:
        started = time.monotonic()
        status, _ = server.request("/mutate-pod", bomb, {"Content-Encoding": "gzip"}, timeout=120)
        result["refused"], result["status"] = time.monotonic() - started, status

    thread = threading.Thread(target=send_bomb)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    server.request("/mutate-pod", json.dumps(review(pod())).encode())
    normal = time.monotonic() - started
    thread.join(120)
    return (
        f"{len(bomb) / 1e6:.1f} MB gzip ({inflated_mib} MiB inflated): HTTP {result.get('status')} after "
        f"{result.get('refused', -1):.2f}s; a normal admission 0.3s later waited {normal:.2f}s"
    )


def nesting(server: Server) -> str:
    out = []
    for name, depth, where in (("affinity", 900, "affinity"), ("limits", 1000, "limits")):
        text = json.dumps(review(pod(name)))
        deep = '{"a": ' * depth + '"x"' + "}" * depth
        if where == "affinity":
            text = text.replace('"spec": {', f'"spec": {{"affinity": {deep}, ', 1)
        else:
            text = text.replace('"requests": {"cpu": "1"}', f'"requests": {{"cpu": "1"}}, "limits": {{"cpu": {deep}}}')
        started = time.monotonic()
        status, body = server.request("/mutate-pod", text.encode())
        elapsed = time.monotonic() - started
        try:
            code = json.loads(body)["response"].get("status", {}).get("code", 200)
        except (ValueError, KeyError):
            code = f"not an AdmissionReview ({body[:40]!r})"
        out.append(f"{depth}-deep {name}: HTTP {status}, review code {code}, {elapsed * 1000:.0f} ms")
    time.sleep(0.3)  # the log writer batches lines
    longest = max((len(line) for line in server.log.read_text().splitlines()), default=0)
    return "; ".join(out) + f"; longest log line {longest} bytes"


def loops(server: Server, seconds: float) -> str:
    """Two symlinks to the directory itself, then a FIFO named *.yaml: memory, and whether reloads go on."""
    before = server.rss_mib()
    (server.state / "loop-a").symlink_to(".")
    (server.state / "loop-b").symlink_to(".")
    time.sleep(seconds)
    after_loops = server.rss_mib()
    os.mkfifo(server.state / "trap.yaml")
    time.sleep(1)
    (server.state / "profiles.yaml").unlink()  # the sample pod stops being mutated once this is seen
    body = json.dumps(
        review(
            {
                **pod("loops"),
                "metadata": {
                    "name": "loops",
                    "namespace": "colocation-demo",
                    "labels": {"koordinator.sh/enable-colocation": "true"},
                },
            }
        )
    ).encode()
    deadline, reloaded = time.monotonic() + 10, False
    while time.monotonic() < deadline and not reloaded:
        reloaded = b'"patch"' not in server.request("/mutate-pod", body, timeout=5)[1]
        time.sleep(0.2)
    return (
        f"symlink loops: RSS {before:.0f} -> {after_loops:.0f} MiB after {seconds:.0f}s; then a FIFO: "
        f"a profile deletion {'took effect' if reloaded else 'was NOT seen within 10s'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="*", default=["labels", "idle", "gzip", "nesting"])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose colocate serve runs")
    parser.add_argument("--operations", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--hold", type=float, default=15.0)
    parser.add_argument("--inflated-mib", type=int, default=1024)
    parser.add_argument("--flood-cap", type=int, default=FLOOD_CAP, help="flood: --max-connections and silent sockets")
    args = parser.parse_args()
    for scenario in args.scenarios:
        with tempfile.TemporaryDirectory(prefix="colocate-hostile-") as work:
            extra: tuple[str, ...] = ()
            if scenario == "cap":
                extra = ("--max-connections", str(CAP), "--first-request-timeout", "30")
            elif scenario == "flood":
                extra = ("--max-connections", str(args.flood_cap))
            server = Server(args.repo.resolve(), Path(work), *extra)
            try:
                if scenario == "labels":
                    line = labels(server, args.operations)
                elif scenario == "idle":
                    line = idle(server, args.connections, args.hold)
                elif scenario == "loops":
                    line = loops(server, args.hold)
                elif scenario == "cap":
                    line = cap(server, args.connections)
                elif scenario == "flood":
                    line = flood(server, args.hold, args.flood_cap)
                elif scenario == "heads":
                    line = heads(server, args.connections)
                elif scenario == "gzip":
                    line = gzip_bomb(server, args.inflated_mib)
                else:
                    line = nesting(server)
            finally:
                server.stop()
            print(f"{scenario:8s} {line}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
