"""The one cluster store: relists as diffs, one meaning of synced, staleness, and its indexes."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import yaml

from colocate.cluster.files import DirectorySource, load_directory
from colocate.cluster.kinds import WatchedKind, keep_metadata, transforms_of
from colocate.cluster.store import ClusterStore, LoopIndex, Object, ObjectKey
from scheduler_plugins.scheduler.cluster.state import ClusterState
from tests.support.apiserver import ApiServer
from tests.support.builders import make_profile
from tests.support.wait import wait_for
from webhook.snapshots import SnapshotIndex

NODE = WatchedKind.of("Node")


def node(name: str, version: str = "1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": version, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, node_name: str = "", version: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": version},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        self.events.append(("put", kind, key[1], "old" if old is not None else "new"))

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        self.events.append(("deleted", kind, key[1]))

    def changes_applied(self) -> None:
        self.events.append(("applied",))


def test_a_relist_is_applied_as_a_diff_and_unchanged_objects_cost_nothing() -> None:
    store, seen = ClusterStore(["Node"]), Recorder()
    store.subscribe(seen)
    store.replace("Node", [node("a"), node("b")])
    seen.events.clear()
    store.replace("Node", [node("a"), node("c")])  # b vanished while the watch was down, a is unchanged
    assert seen.events == [("deleted", "Node", "b"), ("put", "Node", "c", "new"), ("applied",)]
    store.put("Node", node("a", version="2", zone="z1"))
    assert seen.events[-2] == ("put", "Node", "a", "old")
    assert [n["metadata"]["name"] for n in store.objects("Node")] == ["a", "c"]


def test_a_late_index_is_first_told_everything_already_stored() -> None:
    store = ClusterStore(["Node", "Pod"])
    store.replace("Node", [node("a")])
    store.replace("Pod", [pod("p", "a")])
    seen = Recorder()
    store.subscribe(seen)
    assert seen.events == [("put", "Node", "a", "new"), ("put", "Pod", "p", "new"), ("applied",)]


def test_a_delete_reaches_the_indexes_even_for_an_object_never_stored() -> None:
    store, seen = ClusterStore(["Pod"]), Recorder()
    store.subscribe(seen)
    seen.events.clear()
    store.delete("Pod", pod("assumed", "a"))  # bound and assumed by the scheduler, deleted before its event
    assert seen.events == [("deleted", "Pod", "assumed"), ("applied",)]


def test_synced_means_every_kind_listed_once_and_survives_a_broken_watch() -> None:
    now = [100.0]
    store = ClusterStore(["Node", "Pod"], clock=lambda: now[0])
    assert not store.synced()
    store.replace("Node", [])
    assert not store.synced()
    store.replace("Pod", [])
    assert store.synced() and store.stale_seconds() == {"Node": 0.0, "Pod": 0.0}
    store.failed(NODE, "error", "connection refused")
    now[0] = 107.5
    assert store.synced() and store.stale_seconds()["Node"] == 7.5
    store.watching(NODE)
    assert store.stale_seconds()["Node"] == 0.0


def test_a_store_of_no_kinds_is_never_synced() -> None:
    assert not ClusterStore().synced()


def test_the_webhook_snapshot_and_the_scheduler_state_are_views_of_one_store(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump_all(
            [
                node("n1"),
                pod("p", "n1"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {"team": "a"}}},
            ]
        )
    )
    store = ClusterStore()
    source = DirectorySource(tmp_path, store)
    source.scan()
    snapshots, state = SnapshotIndex(store), ClusterState.of_store(store)
    assert snapshots.build().namespace_labels("ns") == {"team": "a"}
    assert list(state.nodes["n1"].pods) == ["ns/p"] and state.nodes["n1"].requested["cpu"] == 1000
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), node("n2"), pod("p", "n2", version="2")]))
    stat = path.stat()  # a rewrite is seen even on file systems with coarse timestamps
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert source.scan()
    assert snapshots.build().namespace_labels("ns") is None  # the Namespace left the files
    assert not state.nodes["n1"].pods and list(state.nodes["n2"].pods) == ["ns/p"]


def test_an_unreadable_file_is_a_problem_of_the_store_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(node("n1")))
    (tmp_path / "bad.yaml").write_text("kind: [unclosed")
    store = load_directory(tmp_path, ["Node"])
    assert store.synced() and [n["metadata"]["name"] for n in store.objects("Node")] == ["n1"]
    assert [p.source for p in store.problems] == [f"{tmp_path / 'bad.yaml'}:2:1"]  # file:line:column


async def test_a_loop_index_applies_changes_on_the_loop_in_order() -> None:
    store, seen = ClusterStore(["Node"]), Recorder()
    threads: set[int] = set()
    seen_put = seen.object_put

    def on_put(*args: Any) -> None:
        threads.add(threading.get_ident())
        seen_put(*args)

    seen.object_put = on_put  # type: ignore[method-assign]
    store.subscribe(LoopIndex(seen, asyncio.get_running_loop()))
    assert seen.events == []  # even the replay waits for the loop
    # The relist runs on a worker thread, like a reflector; its changes are queued for the loop
    # before the executor's own completion, so they have all run once the await returns.
    await asyncio.get_running_loop().run_in_executor(None, store.replace, "Node", [node("a"), node("b")])
    assert seen.events == [("applied",), ("put", "Node", "a", "new"), ("put", "Node", "b", "new"), ("applied",)]
    assert threads == {threading.get_ident()}


def test_a_kind_never_listed_is_not_said_to_serve_a_last_good_state(caplog) -> None:
    store = ClusterStore(["Node"], clock=lambda: 10.0)
    with caplog.at_level("WARNING", logger="colocate"):
        store.failed(NODE, "error", "connection refused")
    (record,) = caplog.records
    assert "cannot list nodes yet (connection refused)" in record.getMessage()
    assert "last good state" not in record.getMessage()


def test_an_object_with_malformed_labels_is_a_problem_not_a_per_request_failure(tmp_path: Path) -> None:
    (tmp_path / "ns.yaml").write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad", "labels": {"team": ["a", "b"]}}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "good", "labels": {"team": "a"}}},
            ]
        )
    )
    store = load_directory(tmp_path)
    snapshot = SnapshotIndex(store).build()
    assert snapshot.namespace_labels("bad") is None and snapshot.namespace_labels("good") == {"team": "a"}
    assert [p.message for p in snapshot.problems] == [
        "Namespace 'bad': metadata.labels: Invalid value: must map strings to strings; object skipped"
    ]


async def test_a_watch_cut_again_and_again_is_resumed_at_once_not_after_a_growing_backoff(
    api: ApiServer, kubeconfig: Path
) -> None:
    """Found by benchmarks/soak.py: every cut of an open watch doubled the wait before the next
    one, so after a few cuts a worker stayed up to `backoff_max` behind the API server."""
    from colocate.cluster.client import api_client
    from colocate.cluster.reflector import ReflectorSettings
    from policies.apis.constants import PROFILE_KIND
    from webhook.snapshots import ApiServerSnapshots, KubeSettings
    from webhook.state import StateHolder

    settings = KubeSettings(ReflectorSettings(backoff_initial=0.05, backoff_max=30.0))
    source = ApiServerSnapshots(api_client(kubeconfig), [WatchedKind.of(PROFILE_KIND)], settings)
    state = StateHolder()
    task = asyncio.create_task(source.run(state))
    try:
        await wait_for(lambda: state.ready, message="synced")
        for cut in range(10):  # without the reset the 10th wait would be 0.05 s x 2^9 = 25.6 s
            api.drop_watches()
            api.apply(make_profile(f"p{cut}", qosClass="BE"))
            await wait_for(
                lambda n=cut + 1: len(state.snapshot.profiles) == n,
                timeout=3.0,
                message=f"profile {cut} seen after cut {cut}",
            )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_kind_with_a_transform_is_kept_as_the_transform_makes_it_from_every_source(tmp_path: Path) -> None:
    """Reflector and directory alike: the store applies the kind's transform as objects enter, and
    its indexes see only what it keeps; other kinds stay whole."""
    slim = {"Pod": keep_metadata}
    whole_pod = pod("p", "n1")
    store, seen = ClusterStore(["Node", "Pod"], transforms=slim), Recorder()
    store.subscribe(seen)
    store.replaced(WatchedKind.of("Pod", metadata_only=True), [whole_pod])
    store.changed(NODE, "ADDED", node("n1"))
    assert store.objects("Pod") == [{"apiVersion": "v1", "kind": "Pod", "metadata": whole_pod["metadata"]}]
    assert store.objects("Node") == [node("n1")]
    store.changed(WatchedKind.of("Pod", metadata_only=True), "MODIFIED", pod("p", "n2", version="2"))
    assert store.objects("Pod")[0]["metadata"]["resourceVersion"] == "2" and "spec" not in store.objects("Pod")[0]
    seen.events.clear()
    store.replace("Pod", [pod("p", "n2", version="2")])  # a relist of the same version: nothing changed
    assert seen.events == [("applied",)]

    files = ClusterStore(transforms=slim)
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([whole_pod, node("n1")]))
    DirectorySource(tmp_path, files).scan()
    assert files.objects("Pod") == [{"apiVersion": "v1", "kind": "Pod", "metadata": whole_pod["metadata"]}]
    assert files.objects("Node") == [node("n1")]


def test_a_deletion_of_an_object_never_held_reaches_the_indexes_transformed() -> None:
    deleted: list[Object] = []

    class Deletions(Recorder):
        def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
            deleted.append(old)

    store = ClusterStore(["Pod"], transforms={"Pod": keep_metadata})
    store.subscribe(Deletions())
    store.delete("Pod", pod("never-seen", "n1"))
    assert deleted == [{"apiVersion": "v1", "kind": "Pod", "metadata": pod("never-seen")["metadata"]}]


def test_a_kind_is_slimmed_only_when_every_watch_of_it_is_metadata_only() -> None:
    assert transforms_of([WatchedKind.of("Pod", metadata_only=True), NODE]) == {"Pod": keep_metadata}
    assert transforms_of([WatchedKind.of("Pod", "a", metadata_only=True), WatchedKind.of("Pod", "b")]) == {}
