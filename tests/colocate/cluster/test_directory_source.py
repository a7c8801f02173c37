"""The embedded cluster state: a directory of manifests, reloaded when files change."""

import json
import os

import yaml

from tests.support.builders import make_namespace, make_priority_class, make_profile
from webhook.snapshots import DirectorySnapshots

PROFILE = make_profile("p1", qosClass="BE")


def bump(path):
    """Make sure a rewrite is seen even on file systems with coarse timestamps."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_yaml_multi_document_json_and_list_kinds_are_loaded(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all([PROFILE, make_namespace("ns")]))
    (tmp_path / "b.json").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [make_priority_class("koord-batch", 5000, preemption_policy=None)],
            }
        )
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yml").write_text(yaml.safe_dump({**PROFILE, "metadata": {"name": "p2"}}))
    (tmp_path / "notes.txt").write_text("ignored")
    snapshot = DirectorySnapshots(tmp_path).scan()
    assert [p.name for p in snapshot.profiles] == ["p1", "p2"]
    assert snapshot.namespace_labels("ns") == {} and snapshot.priority_class("koord-batch")["value"] == 5000


def test_hidden_entries_of_mounted_volumes_are_skipped(tmp_path):
    (tmp_path / "..data").mkdir()
    (tmp_path / "..data" / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    (tmp_path / "p.yaml").symlink_to(tmp_path / "..data" / "p.yaml")
    assert [p.name for p in DirectorySnapshots(tmp_path).scan().profiles] == ["p1"]


def test_unchanged_directory_gives_no_new_snapshot_and_changes_do(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(PROFILE))
    source = DirectorySnapshots(tmp_path)
    assert source.scan() is not None
    assert source.scan() is None
    path.write_text(yaml.safe_dump({**PROFILE, "spec": {"qosClass": "LS"}}))
    bump(path)
    assert source.scan().profiles[0].qos_class == "LS"
    path.unlink()
    assert source.scan().profiles == ()


def test_a_broken_file_keeps_its_last_good_objects_and_is_reported(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(PROFILE))
    source = DirectorySnapshots(tmp_path)
    source.scan()
    path.write_text("kind: [unclosed")
    bump(path)
    snapshot = source.scan()
    assert [p.name for p in snapshot.profiles] == ["p1"]
    assert any(problem.source == f"{path}:2:1" for problem in snapshot.problems)  # file:line:column


def test_a_broken_file_never_loaded_before_contributes_nothing(tmp_path):
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(PROFILE))
    (tmp_path / "bad.json").write_text("{")
    snapshot = DirectorySnapshots(tmp_path).scan()
    assert [p.name for p in snapshot.profiles] == ["p1"] and len(snapshot.problems) == 1


def test_an_object_named_as_the_api_server_would_refuse_is_skipped_as_a_problem(tmp_path):
    from colocate.cluster.files import load_directory

    hostile = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n</script><script>alert(1)</script>"}}
    upper = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "Team.A"}}
    dotted = make_namespace("a.b")  # a subdomain, but a Namespace's name is a DNS-1123 label
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([hostile, upper, dotted, make_namespace("ok")]))
    store = load_directory(tmp_path)
    assert [o["metadata"]["name"] for kind in store.kinds() for o in store.objects(kind)] == ["ok"]
    messages = [p.message for p in store.problems]
    assert messages[0].startswith('Node metadata.name: Invalid value: "n</script><script>alert(1)</script>": '
                                  "a lowercase RFC 1123 subdomain must consist of")  # fmt: skip
    assert messages[1].startswith('Pod metadata.namespace: Invalid value: "Team.A": a lowercase RFC 1123 label')
    assert messages[2].startswith('Namespace metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label')
    assert all(m.endswith(": skipped") for m in messages) and len(messages) == 3
