"""A directory of manifests as a source: what goes wrong keeps the last good objects and is said."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.cluster.files import DirectorySource, ScanError, ScanLimits, list_manifests
from colocate.cluster.store import ClusterStore


def profile(name: str, qos: str = "BE") -> dict[str, Any]:
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": {"name": name},
        "spec": {"qosClass": qos},
    }


def names(store: ClusterStore) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in store.objects("ClusterColocationProfile"))


def unreadable(monkeypatch: pytest.MonkeyPatch, *directories: Path) -> None:
    """Listing these directories fails as it does for a non-root user after `chmod 000`."""
    real = os.scandir
    blocked = {str(d) for d in directories}

    def scandir(path: Any) -> Any:
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_an_unreadable_subdirectory_keeps_the_objects_of_its_files(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "top.yaml").write_text(yaml.safe_dump(profile("top")))
    (tmp_path / "team" / "p.yaml").write_text(yaml.safe_dump(profile("team-p")))
    store = ClusterStore()
    source = DirectorySource(tmp_path, store)
    source.scan()
    unreadable(monkeypatch, tmp_path / "team")
    assert source.scan()  # the problem itself is news
    assert names(store) == ["team-p", "top"]
    assert [p.source for p in store.problems] == [str(tmp_path / "team")]
    assert "Permission denied" in store.problems[0].message


def test_an_unreadable_root_is_not_loaded_at_first_and_kept_later(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile("p")))
    store = ClusterStore()
    source = DirectorySource(tmp_path, store)
    with monkeypatch.context() as patch:
        unreadable(patch, tmp_path)
        with pytest.raises(ScanError, match="Permission denied"):
            source.scan()
        assert not store.synced()
    source.scan()
    unreadable(monkeypatch, tmp_path)
    source.scan()
    assert names(store) == ["p"] and [p.source for p in store.problems] == [str(tmp_path)]


def test_a_fifo_named_like_a_manifest_is_skipped_not_opened(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(profile("good")))
    os.mkfifo(tmp_path / "trap.yaml")
    store = ClusterStore()
    done = threading.Event()

    def scan() -> None:
        DirectorySource(tmp_path, store).scan()
        done.set()

    threading.Thread(target=scan, daemon=True).start()
    assert done.wait(10), "the scan blocked on the FIFO"
    assert names(store) == ["good"]
    assert [(p.source, p.message) for p in store.problems] == [
        (str(tmp_path / "trap.yaml"), "not a regular file, skipped")
    ]


def test_symlink_cycles_are_walked_once(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile("p")))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "q.yaml").write_text(yaml.safe_dump(profile("q")))
    (tmp_path / "loop-a").symlink_to(tmp_path)
    (tmp_path / "sub" / "loop-b").symlink_to(tmp_path)
    store = ClusterStore()
    DirectorySource(tmp_path, store, ScanLimits(deadline=5)).scan()
    assert names(store) == ["p", "q"] and store.problems == ()


def test_a_same_size_edit_that_keeps_the_mtime_is_seen(tmp_path: Path) -> None:
    """`cp -p` and `rsync -a` keep the mtime, and a one-letter change keeps the size."""
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(profile("p", "BE")))
    before = path.stat()
    store = ClusterStore()
    source = DirectorySource(tmp_path, store)
    source.scan()
    path.write_text(yaml.safe_dump(profile("p", "LS")))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert source.scan()
    assert store.objects("ClusterColocationProfile")[0]["spec"]["qosClass"] == "LS"


def test_scans_are_bounded(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"p{index}.yaml").write_text(yaml.safe_dump(profile(f"p{index}")))
    with pytest.raises(ScanError, match="more than 2 manifest files"):
        DirectorySource(tmp_path, ClusterStore(), ScanLimits(max_files=2)).scan()
    (tmp_path / "big.yaml").write_text("# " + "x" * 2048)
    store = ClusterStore()
    DirectorySource(tmp_path, store, ScanLimits(max_file_bytes=1024)).scan()
    assert names(store) == ["p0", "p1", "p2"]
    assert [(p.source, p.message) for p in store.problems] == [(str(tmp_path / "big.yaml"), "larger than 1024 bytes")]
    (tmp_path / "sub").mkdir()
    clock = iter([0.0, 0.0, 100.0])  # start, the root, then the subdirectory after "100 s"
    with pytest.raises(ScanError, match="longer than 1s"):
        list_manifests(tmp_path, ScanLimits(deadline=1), clock=lambda: next(clock))
