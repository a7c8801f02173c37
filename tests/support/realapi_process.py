"""Control-plane processes for the tests: started on loopback, logged to a file, never left behind.

A child gets SIGKILL when the pytest process dies however it dies (`PR_SET_PDEATHSIG`: a SIGTERM
would leave kube-apiserver waiting on an etcd that died with it), it runs in
its own session so that a Ctrl-C reaches pytest (which stops it in order) rather than tearing the
control plane down under a test, and `atexit` kills whatever is still running.
"""

from __future__ import annotations

import atexit
import ctypes
import signal
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.wait import wait_for_sync

_PR_SET_PDEATHSIG = 1
_RUNNING: set[Component] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """Run in the child before exec: SIGKILL when pytest exits, even if it is killed."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Component:
    """One control-plane binary: `start()` it, `stop()` it, read its log when something fails."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - the child is exec'd at once
            )
        _RUNNING.add(self)

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def assert_alive(self) -> None:
        """Raise, with the end of its log, when the process has exited (ends a wait at once)."""
        if self._process is not None and self._process.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self._process.returncode}:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after `timeout`; waits until the process is gone."""
        process, self._process = self._process, None
        _RUNNING.discard(self)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return f"(no log at {self.log})"
        return f"--- last {lines} lines of {self.log}\n" + "\n".join(text[-lines:])


def wait_listening(component: Component, port: int, timeout: float = 30.0) -> None:
    """Until `component` accepts TCP connections on `port` (or exits, which fails at once)."""

    def accepts() -> bool:
        component.assert_alive()
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True

    wait_for_sync(accepts, ignore=(OSError,), timeout=timeout, interval=0.05, message=component.log_tail)


@atexit.register
def _stop_all() -> None:
    for component in list(_RUNNING):
        component.stop(timeout=5)
