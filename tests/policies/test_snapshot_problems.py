"""A snapshot names the problems of the objects it holds now: one that is fixed or deleted takes its
problem with it, whatever else changed since."""

from __future__ import annotations

from policies.admission.snapshot import SnapshotBuilder


def _pod(name: str, labels: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels}}


def test_problems_follow_the_objects_as_they_change() -> None:
    builder = SnapshotBuilder()
    builder.put(_pod("fine", {"a": "b"}), "fine.yaml")
    assert builder.build().problems == ()
    builder.put(_pod("broken", ["not", "a", "map"]), "broken.yaml")
    builder.put(_pod("other", {"a": "b"}), "other.yaml")
    (problem,) = builder.build().problems
    assert problem.source == "broken.yaml" and "metadata.labels" in problem.message
    builder.put(_pod("another", {"a": "b"}), "another.yaml")  # the pods change, the problem stays
    assert [p.source for p in builder.build().problems] == ["broken.yaml"]
    builder.put(_pod("broken", {"a": "b"}), "broken.yaml")  # fixed
    assert builder.build().problems == ()
    builder.put(_pod("broken", ["again"]), "broken.yaml")
    assert [p.source for p in builder.build().problems] == ["broken.yaml"]
    builder.delete("Pod", ("ns", "broken"))
    assert builder.build().problems == ()
    builder.put(_pod("broken", ["again"]), "broken.yaml")
    builder.put(_pod("worse", ["also"]), "worse.yaml")
    builder.delete("Pod", ("ns", "broken"))
    assert [p.source for p in builder.build().problems] == ["worse.yaml"]
