"""The README's quick start keeps its promise, "listening on localhost only": the server it starts
binds every listener (the webhook, the probes, /metrics) to 127.0.0.1, and `serve --help` says which
flag governs which listener."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.docs.markdown import REPO
from tests.docs.test_commands import commands, quick_start
from tests.support.cluster import free_port
from tests.support.wait import wait_for_sync

#: each listener `colocate serve` opens, by the flag that sets its address, and that flag's form
LISTENER_FLAGS = {"--port": "PORT", "--health-probe-bind-address": "HOST:PORT", "--metrics-bind-address": "HOST:PORT"}


def readme_serve_argv() -> list[str]:
    install, _ = quick_start()
    (argv,) = commands(install)
    return argv


def on_free_ports(argv: list[str]) -> list[str]:
    """The README's arguments with every listener moved to a free port (its host kept as written):
    other tests on this machine may hold 9443, 8081 and 8080."""
    moved = list(argv)
    for flag, form in LISTENER_FLAGS.items():
        assert flag in moved, f"the README's serve command leaves {flag} at its default"
        at = moved.index(flag) + 1
        host = moved[at].rpartition(":")[0]
        moved[at] = str(free_port()) if form == "PORT" else f"{host}:{free_port()}"
    return moved


def listening_addresses(pid: int) -> set[str]:
    """The local addresses of the TCP sockets `pid` listens on (IPv4 and IPv6), from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address = fields[1].split(":")[0]
                found.add(_ipv4(address) if width == 8 else address)
    return found


def _ipv4(little_endian_hex: str) -> str:
    return ".".join(str(int(little_endian_hex[i : i + 2], 16)) for i in (6, 4, 2, 0))


def test_the_quick_start_server_listens_on_localhost_only(tmp_path: Path) -> None:
    (tmp_path / "manifests").symlink_to(REPO / "manifests")  # the README runs from the checkout
    argv = on_free_ports(readme_serve_argv())
    health = argv[argv.index("--health-probe-bind-address") + 1]
    server = subprocess.Popen(
        [sys.executable, "-m", "colocate.main", *argv],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_sync(
            lambda: urllib.request.urlopen(f"http://{health}/readyz", timeout=1).status == 200,
            timeout=60,
            interval=0.1,
            ignore=(OSError,),
            message="the quick start's server to become ready",
        )
        addresses = listening_addresses(server.pid)
        assert len(addresses) >= 1 and addresses == {"127.0.0.1"}
    finally:
        server.kill()
        server.wait()


def test_serve_help_says_which_listener_each_address_flag_governs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "colocate.main", "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    text = " ".join(out.split())
    host_help = text[text.index("--host H address") : text.index("--workers N|auto server")]
    assert (
        "webhook" in host_help and "--health-probe-bind-address" in host_help and "--metrics-bind-address" in host_help
    )
