"""A broken --cluster directory never empties the state silently, never wedges reloads and never
turns into per-request errors: the last good objects keep serving, and each fault is a problem
counted in colocate_cluster_state_problems and named by /readyz.

Permissions only bind a process that is not root: when the tests run as root the server runs as
nobody (tests.support.served.unprivileged_user).
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import time
from pathlib import Path

import yaml

from tests.support.admission import admission_review
from tests.support.builders import make_namespace, make_pod
from tests.support.hostile_files import alias_bomb, deep_json
from tests.support.paths import REPO
from tests.support.served import Served, unprivileged_user
from tests.support.wait import wait_for_sync

POD = yaml.safe_load((REPO / "manifests" / "samples" / "batch-pod.yaml").read_text())


def _state_with_profiles_in(tmp_path: Path, subdirectory: str) -> Path:
    """The quick-start state with its profiles moved into `subdirectory`."""
    state = tmp_path / "seed"
    shutil.copytree(REPO / "manifests" / "cluster", state)
    (state / subdirectory).mkdir()
    (state / "profiles.yaml").rename(state / subdirectory / "profiles.yaml")
    return state


def _patched(server: Served) -> bool:
    return "patch" in server.review("/mutate-pod", admission_review(POD))


def _problems(server: Served) -> float:
    return server.metric("colocate_cluster_state_problems")


def test_an_unreadable_profile_directory_keeps_its_profiles_and_is_a_problem(tmp_path, served):
    server = served(state=_state_with_profiles_in(tmp_path, "profiles"), user=unprivileged_user())
    assert _patched(server) and _problems(server) == 0
    profiles = server.state / "profiles"
    profiles.chmod(0)
    wait_for_sync(lambda: _problems(server), until=lambda n: n >= 1, timeout=10, message="the problem to be counted")
    status, readyz = server.probe("/readyz")
    assert status == 200 and b"1 problem(s)" in readyz and b"Permission denied" in readyz
    assert _patched(server), "the profiles of the unreadable directory keep applying"
    profiles.chmod(0o755)
    wait_for_sync(lambda: _problems(server), until=lambda n: n == 0, timeout=10, message="the problem to clear")
    assert server.probe("/readyz")[1] == b"ok"


def test_an_unreadable_root_keeps_the_whole_state(served):
    server = served(user=unprivileged_user())
    server.state.chmod(0)
    wait_for_sync(lambda: _problems(server), until=lambda n: n >= 1, timeout=10, message="the problem to be counted")
    assert _patched(server)
    server.state.chmod(0o755)
    wait_for_sync(lambda: _problems(server), until=lambda n: n == 0, timeout=10, message="the problem to clear")


def test_a_fifo_and_symlink_loops_neither_wedge_reloads_nor_shutdown(served):
    server = served()
    os.mkfifo(server.state / "trap.yaml")
    (server.state / "loop-a").symlink_to(".")
    (server.state / "loop-b").symlink_to(".")
    rss = server.rss_kib()
    profiles = server.state / "profiles.yaml"
    kept = profiles.read_text()
    profiles.unlink()  # a reload after the traps were laid must still happen
    wait_for_sync(
        lambda: _patched(server),
        until=lambda patched: not patched,
        timeout=10,
        message="the reload after the FIFO and the loops",
    )
    profiles.write_text(kept)
    wait_for_sync(lambda: _patched(server), timeout=10, message="the next reload")
    assert server.rss_kib() < rss + 50 * 1024
    server.process.send_signal(signal.SIGTERM)
    server.process.send_signal(signal.SIGTERM)  # cut the drain short: only the scan could hold it
    started = time.monotonic()
    assert server.process.wait(timeout=15) == 0
    assert time.monotonic() - started < 10


def _patch_text(server: Served) -> str:
    return base64.b64decode(server.review("/mutate-pod", admission_review(POD)).get("patch", "")).decode()


def test_an_equal_size_edit_with_the_old_mtime_is_read(served):
    server = served()
    profiles = server.state / "profiles.yaml"
    text = profiles.read_text()
    assert "terminationGracePeriodSeconds: 30" in text and 'Seconds","value":30' in _patch_text(server)
    before = profiles.stat()
    replacement = server.state / "replacement.tmp"
    edited = text.replace("terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: 60")  # same size
    replacement.write_text(edited)
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))  # as cp -p and rsync -a leave it
    replacement.rename(profiles)
    assert (profiles.stat().st_size, profiles.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    wait_for_sync(
        lambda: _patch_text(server),
        until=lambda patch: 'Seconds","value":60' in patch,
        timeout=10,
        message="the edited profile to apply",
    )


def test_a_malformed_namespace_is_a_problem_not_a_500_per_pod(served):
    server = served()
    bad = make_namespace("broken")
    bad["metadata"]["labels"] = {"team": ["a", "list"]}
    (server.state / "broken.yaml").write_text(yaml.safe_dump(bad))
    wait_for_sync(lambda: _problems(server), until=lambda n: n >= 1, timeout=10, message="the problem to be counted")
    for path in ("/mutate-pod", "/validate-pod"):
        response = server.review(path, admission_review(make_pod("p", "broken")))
        assert response["allowed"], response


def test_deep_json_is_a_named_problem_in_readyz_and_the_other_files_reload(served):
    server = served()
    deep_json(server.state / "deep.json")
    wait_for_sync(lambda: _problems(server), until=lambda n: n == 1, timeout=10, message="deep.json to be counted")
    status, readyz = server.probe("/readyz")
    assert status == 200 and b"deep.json: nested too deeply to parse" in readyz
    (server.state / "profiles.yaml").unlink()  # the reload goes on: the deleted profiles stop applying
    wait_for_sync(lambda: _patched(server), until=lambda patched: not patched, timeout=10, message="the reload")


def test_an_alias_bomb_profile_is_refused_and_costs_admissions_nothing(served):
    server = served()
    alias_bomb(server.state / "bomb.yaml")
    wait_for_sync(lambda: _problems(server), until=lambda n: n == 1, timeout=10, message="the bomb to be refused")
    assert b"bomb.yaml: aliases expand to more than" in server.probe("/readyz")[1]
    started = time.monotonic()
    answer = server.review("/mutate-pod", admission_review(POD))
    assert time.monotonic() - started < 1.0 and len(base64.b64decode(answer["patch"])) < 4096


def test_a_symlink_to_the_root_file_system_is_not_walked(served):
    server = served()
    (server.state / "everything").symlink_to("/")
    wait_for_sync(lambda: _problems(server), until=lambda n: n == 1, timeout=10, message="the link to be named")
    assert b"everything: a symlink that resolves outside the directory" in server.probe("/readyz")[1]
    (server.state / "profiles.yaml").unlink()
    wait_for_sync(lambda: _patched(server), until=lambda patched: not patched, timeout=5, message="the reload")
