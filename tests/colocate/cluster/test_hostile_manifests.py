"""Hostile files in a directory of manifests: each is its own problem, named and counted, and the
other files reload; parsing is bounded (depth, alias expansion) and a scan is bounded (links out of
the directory are not followed, total bytes). Errors are one line, `file:line:column: message`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.cluster.files import DirectorySource, ScanError, ScanLimits, read_manifest_file
from colocate.cluster.store import ClusterStore
from policies.apis.manifests import MAX_ALIAS_NODES, ManifestError, parse_manifest_text
from tests.support.hostile_files import alias_bomb, deep_json


def profile(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.koordinator.sh/v1alpha1",
        "kind": "ClusterColocationProfile",
        "metadata": {"name": name},
        "spec": {"qosClass": "BE"},
    }


def names(store: ClusterStore) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in store.objects("ClusterColocationProfile"))


def bump(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))


def test_deep_json_is_that_files_problem_and_the_other_files_reload(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(profile("a")))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(profile("b")))
    deep_json(tmp_path / "deep.json")
    store = ClusterStore()
    source = DirectorySource(tmp_path, store)
    assert source.scan()
    assert names(store) == ["a", "b"]
    assert [(p.source, p.message) for p in store.problems] == [
        (str(tmp_path / "deep.json"), "nested too deeply to parse (more than 254 levels allowed)")
    ]
    (tmp_path / "b.yaml").unlink()  # a deleted profile stops applying although deep.json is still there
    assert source.scan() and names(store) == ["a"] and len(store.problems) == 1


def test_any_exception_a_file_raises_is_its_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(profile("a")))
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump(profile("odd")))
    real = parse_manifest_text

    def parse(text: str, source: str) -> list[dict[str, Any]]:
        if source.endswith("odd.yaml"):
            raise MemoryError("no room")
        return real(text, source)

    monkeypatch.setattr("colocate.cluster.files.parse_manifest_text", parse)
    store = ClusterStore()
    DirectorySource(tmp_path, store).scan()
    assert names(store) == ["a"]
    assert [(p.source, p.message) for p in store.problems] == [(str(tmp_path / "odd.yaml"), "MemoryError: no room")]


def test_an_alias_bomb_is_refused_when_loaded(tmp_path: Path) -> None:
    bomb = alias_bomb(tmp_path / "bomb.yaml")
    assert bomb.stat().st_size < 701
    started = time.perf_counter()
    with pytest.raises(ManifestError, match=f"aliases expand to more than {MAX_ALIAS_NODES} extra nodes"):
        read_manifest_file(bomb)
    assert time.perf_counter() - started < 1.0


def test_modest_aliases_and_recursive_ones(tmp_path: Path) -> None:
    text = "kind: ConfigMap\nmetadata: {name: x, labels: &l {a: b}}\ndata: &d {k: v}\nextra: [*l, *d, *l]\n"
    assert parse_manifest_text(text, "ok.yaml")[0]["extra"] == [{"a": "b"}, {"k": "v"}, {"a": "b"}]
    with pytest.raises(ManifestError, match="an alias contains itself"):
        parse_manifest_text("kind: ConfigMap\nmetadata: {name: x}\nloop: &a [*a]\n", "loop.yaml")


def test_deep_yaml_is_refused_with_the_depth(tmp_path: Path) -> None:
    text = "kind: ConfigMap\nmetadata: {name: x}\ndata: " + "[" * 300 + "]" * 300 + "\n"
    with pytest.raises(ManifestError, match="deep.yaml: nested more than 254 levels deep"):
        parse_manifest_text(text, "deep.yaml")


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("bad.yaml", "kind: Pod\nmetadata:\n  name: [unclosed\n", "bad.yaml:4:1: "),
        ("bad.yaml", "kind: Pod\n  name: x\n", "bad.yaml:2:7: "),
        ("bad.json", '{"kind": "Pod",\n "x": }', "bad.json:2:7: Expecting value"),
    ],
)
def test_syntax_errors_are_one_line_with_the_files_position(name: str, text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as error:
        parse_manifest_text(text, name)
    assert str(error.value).startswith(expected) and "\n" not in str(error.value)


def test_a_symlink_out_of_the_directory_is_not_followed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "a.yaml").write_text(yaml.safe_dump(profile("a")))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.yaml").write_text(yaml.safe_dump(profile("stolen")))
    (state / "root").symlink_to("/")
    (state / "out").symlink_to(outside)
    (state / "file.yaml").symlink_to(outside / "stolen.yaml")
    (state / "sub").mkdir()
    (state / "sub" / "inside.yaml").symlink_to("../a.yaml")  # a link inside (a mounted ConfigMap's) is read
    store = ClusterStore()
    started = time.perf_counter()
    DirectorySource(state, store).scan()
    assert time.perf_counter() - started < 2.0
    assert names(store) == ["a"]  # a.yaml and sub/inside.yaml, one object
    assert sorted(p.source for p in store.problems) == [str(state / n) for n in ("file.yaml", "out", "root")]
    assert {p.message for p in store.problems} == {"a symlink that resolves outside the directory, not followed"}


def test_the_total_bytes_of_a_scan_are_capped(tmp_path: Path) -> None:
    for index in range(4):
        (tmp_path / f"p{index}.yaml").write_text(yaml.safe_dump(profile(f"p{index}")) + "#" * 400)
    limits = ScanLimits(max_total_bytes=1600)  # three files fit, four do not
    with pytest.raises(ScanError, match="bytes of manifests, over the scan limit of 1600 bytes"):
        DirectorySource(tmp_path, ClusterStore(), limits).scan()  # before the first load: not loaded
    (tmp_path / "p3.yaml").unlink()
    store = ClusterStore()
    source = DirectorySource(tmp_path, store, limits)
    assert source.scan() and names(store) == ["p0", "p1", "p2"]
    (tmp_path / "p3.yaml").write_text(yaml.safe_dump(profile("p3")) + "#" * 400)
    assert source.scan()  # later: the last good objects stay, and the limit is a problem
    assert names(store) == ["p0", "p1", "p2"]
    assert [p.source for p in store.problems] == [str(tmp_path)]
    assert "over the scan limit of 1600 bytes" in store.problems[0].message
    (tmp_path / "p3.yaml").unlink()
    assert source.scan() and store.problems == ()
