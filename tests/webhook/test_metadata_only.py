"""Pods kept as metadata only: what the ElasticQuota checks read of them, decided exactly as on whole pods.

The quota tree reads a pod's namespace, name and quota label (`QUOTA_TREE_READS`, metadata-only), so
the webhook's store keeps apiVersion, kind and metadata of each Pod, unless the background audit
runs in the process (it re-admits whole pods). Agreement: on random clusters, every route decides
the same on the slimmed state as on the whole one.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from colocate.cluster.files import read_manifest_file
from colocate.cluster.kinds import keep_metadata, transforms_of
from colocate.cluster.store import ClusterStore
from policies.admission.plugin import CREATE, DELETE, UPDATE
from policies.admission.snapshot import ClusterSnapshot
from tests.support.admission import QUOTA_MUTATE, QUOTA_VALIDATE, admit
from tests.support.builders import make_pod, make_quota
from tests.webhook.test_watched import CLUSTER_OBJECTS, requests_for, samples
from webhook.admission import run_route
from webhook.registry import default_routes
from webhook.rollout.audit import AUDIT_READS, running_pods
from webhook.serve import ServeConfig, served_kinds
from webhook.snapshots import DirectorySnapshots, SnapshotIndex
from webhook.watched import watched_kinds

FIXTURES = Path(__file__).parent / "fixtures"
QUOTA_TREE = read_manifest_file(FIXTURES / "quota-tree.yaml")


def slimmed(objects: Iterable[Mapping[str, Any]], transforms: Mapping[str, Any] | None = None) -> ClusterSnapshot:
    """The snapshot the webhook serves of `objects`: through its store, with its transforms."""
    store = ClusterStore(
        transforms=transforms_of(watched_kinds(default_routes())) if transforms is None else transforms
    )
    index = SnapshotIndex(store)
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj["kind"]), []).append(copy.deepcopy(obj))
    for kind, items in by_kind.items():
        store.replace(kind, items)
    return index.build()


def whole(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return ClusterSnapshot.from_objects(("test", copy.deepcopy(obj)) for obj in objects)


def test_pods_are_watched_metadata_only_and_every_other_kind_whole() -> None:
    watched = {w.kind: w.metadata_only for w in watched_kinds(default_routes())}
    assert watched.pop("Pod") is True
    assert not any(watched.values())
    assert set(transforms_of(watched_kinds(default_routes()))) == {"Pod"}


def test_with_the_audit_pods_are_watched_whole() -> None:
    assert not any(w.metadata_only for w in watched_kinds(default_routes(), AUDIT_READS))
    assert transforms_of(served_kinds(ServeConfig(None, Path("certs"), audit_interval=60), default_routes())) == {}
    assert set(transforms_of(served_kinds(ServeConfig(None, Path("certs")), default_routes()))) == {"Pod"}


def test_serve_in_embedded_mode_slims_pods_too_and_keeps_them_whole_for_the_audit(tmp_path: Path) -> None:
    import yaml

    pod = make_pod("p", "ns-a1", labels={"quota.scheduling.koordinator.sh/name": "child-a"}, node="n1")
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(pod))
    for audit_interval, kept in ((0.0, {"apiVersion", "kind", "metadata"}), (60.0, set(pod))):
        config = ServeConfig(tmp_path, Path("certs"), audit_interval=audit_interval)
        source = DirectorySnapshots(tmp_path, transforms=transforms_of(served_kinds(config, default_routes())))
        snapshot = source.scan()
        assert snapshot is not None
        (served,) = snapshot.list("Pod")
        assert set(served) == kept
        assert served["metadata"] == pod["metadata"]


def test_the_audit_on_whole_pods_sees_their_phase() -> None:
    """The reason the audit keeps pods whole: on metadata alone a finished pod looks running."""
    done = {**make_pod("done"), "status": {"phase": "Succeeded"}}
    assert running_pods(whole([done])) == []
    assert [p["metadata"]["name"] for p in running_pods(slimmed([done]))] == ["done"]


# --- agreement: the slimmed state decides as the whole one -------------------------------------------

QUOTA_NAMES = sorted(o["metadata"]["name"] for o in QUOTA_TREE if o["kind"] == "ElasticQuota")
NAMESPACES = sorted({o["metadata"].get("namespace", "default") for o in QUOTA_TREE} | {"ns-a1", "ns-a2", "other"})


def random_pod(rng: random.Random, index: int) -> dict[str, Any]:
    labels = {"app": f"app-{index % 3}"}
    if rng.random() < 0.5:
        labels["quota.scheduling.koordinator.sh/name"] = rng.choice([*QUOTA_NAMES, "ghost"])
    pod = make_pod(
        f"pod-{index}",
        rng.choice(NAMESPACES),
        labels=labels,
        node=f"n{index % 4}",
        requests={"cpu": "1", "memory": "1Gi"},
        owner_kind=rng.choice([None, "ReplicaSet"]),
    )
    pod["metadata"].update(
        uid=f"uid-{index}",
        resourceVersion=str(index + 1),
        managedFields=[{"manager": "kubelet", "operation": "Update"}],
    )
    pod["status"] = {"phase": rng.choice(["Pending", "Running", "Succeeded"]), "podIP": f"10.0.0.{index}"}
    return pod


def random_quota(rng: random.Random) -> dict[str, Any]:
    name = rng.choice([*QUOTA_NAMES, "new", "ns-a1", "other"])
    return make_quota(
        name,
        rng.choice(NAMESPACES),
        parent=rng.choice([None, "parent", "child-a", "ghost"]),
        is_parent=rng.random() < 0.3,
        tree_id=rng.choice([None, "tree-1"]),
        min={"cpu": str(rng.randint(0, 4)), "memory": "1Gi"},
        max={"cpu": "20", "memory": "20Gi"},
        namespaces=rng.choice([None, ["ns-a1"], ["other"]]),
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_quota_routes_decide_the_same_on_metadata_only_pods(seed: int) -> None:
    rng = random.Random(seed)
    cluster = [*QUOTA_TREE, *(random_pod(rng, i) for i in range(rng.randint(0, 30)))]
    full, slim = whole(cluster), slimmed(cluster)
    assert all(set(p) == {"apiVersion", "kind", "metadata"} for p in slim.list("Pod"))
    assert "managedFields" not in str(list(slim.list("Pod")))
    stored = [o for o in QUOTA_TREE if o["kind"] == "ElasticQuota"]
    for _ in range(10):
        quota = random_quota(rng)
        old = rng.choice(stored)
        updated = {**copy.deepcopy(old), "spec": quota["spec"]}
        calls = (
            (QUOTA_MUTATE, CREATE, quota, None),
            (QUOTA_VALIDATE, CREATE, quota, None),
            (QUOTA_VALIDATE, UPDATE, updated, old),
            (QUOTA_VALIDATE, DELETE, rng.choice([*stored, quota]), None),
        )
        for path, operation, obj, previous in calls:
            expected = admit(path, copy.deepcopy(obj), full, operation, copy.deepcopy(previous))
            actual = admit(path, copy.deepcopy(obj), slim, operation, copy.deepcopy(previous))
            assert (actual.allowed, actual.code, actual.message, actual.patch) == (
                expected.allowed,
                expected.code,
                expected.message,
                expected.patch,
            ), (path, operation, obj)


def test_a_pod_kept_as_metadata_still_blocks_deleting_its_quota() -> None:
    pod = random_pod(random.Random(0), 1)
    pod["metadata"]["namespace"] = "elsewhere"
    pod["metadata"]["labels"]["quota.scheduling.koordinator.sh/name"] = "child-b"
    quota = next(o for o in QUOTA_TREE if o["metadata"]["name"] == "child-b")
    assert admit(QUOTA_VALIDATE, None, slimmed(QUOTA_TREE), DELETE, quota).allowed
    outcome = admit(QUOTA_VALIDATE, None, slimmed([*QUOTA_TREE, pod]), DELETE, quota)
    assert (outcome.allowed, outcome.message) == (False, "delete quota failed, quota child-b has 1 child pods: pod-1")


@pytest.mark.parametrize("route", default_routes().routes, ids=lambda r: r.path)
def test_every_route_decides_the_same_on_the_slimmed_samples(route: Any) -> None:
    """Every plugin that declares a metadata-only read, on every sample object: the declaration holds."""
    objects = [o for path in CLUSTER_OBJECTS for o in read_manifest_file(path)]
    objects += [random_pod(random.Random(i), i) for i in range(5)]
    full, slim = whole(objects), slimmed(objects)
    for request in requests_for(route, samples()):
        expected = run_route(route, copy.deepcopy(request), full, rand_int=lambda n: 0)
        actual = run_route(route, copy.deepcopy(request), slim, rand_int=lambda n: 0)
        assert (actual.allowed, actual.code, actual.message, actual.patch) == (
            expected.allowed,
            expected.code,
            expected.message,
            expected.patch,
        ), request


def test_keep_metadata_keeps_metadata_and_leaves_the_original_alone() -> None:
    pod = random_pod(random.Random(1), 7)
    original = copy.deepcopy(pod)
    kept = keep_metadata(pod)
    assert pod == original
    assert kept == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: v for k, v in pod["metadata"].items() if k != "managedFields"},
    }
