"""The framework (Koordinator's `pkg/descheduler/framework/`): registry, Evictor proxy and limits,
phase order, the round's preconditions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler_plugins.descheduler.framework.config import parse_config
from scheduler_plugins.descheduler.framework.evictor import EvictionLimiter, EvictionLimits, Evictor
from scheduler_plugins.descheduler.framework.handle import Handle
from scheduler_plugins.descheduler.framework.interfaces import SUCCESS, EvictOptions, Object, Status
from scheduler_plugins.descheduler.framework.registry import PluginSpec, Registry
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from tests.scheduler_plugins.descheduler.helpers import FakeEvictions, view_of
from tests.support.builders import make_node, make_pod

calls: list[str] = []


class Recorder:
    """A Deschedule and Balance plugin that records its calls and evicts every pod it is shown."""

    def __init__(self, name: str, handle: Handle) -> None:
        self.name, self.handle = name, handle

    def deschedule(self, nodes: Sequence[Object]) -> Status:
        calls.append(f"deschedule:{self.name}")
        return SUCCESS

    def balance(self, nodes: Sequence[Object]) -> Status:
        calls.append(f"balance:{self.name}:{len(nodes)}")
        for node in nodes:
            for pod in self.handle.snapshot.pods_on(node["metadata"]["name"]):
                self.handle.evictor.evict(pod, EvictOptions(reason="test"))
        return Status("boom") if self.name == "Failing" else SUCCESS


def registry() -> Registry:
    from scheduler_plugins.descheduler.registry import in_tree_registry

    reg = in_tree_registry()
    for name in ("A", "B", "Failing"):
        reg.register(PluginSpec(name, lambda args, handle, n=name: Recorder(n, handle)))
    return reg


def configuration(profiles: list[dict[str, Any]], **top: Any) -> Any:
    return parse_config(
        {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration", "profiles": profiles, **top},
        registry(),
    )


def profile(name: str, *plugins: str, selector: dict[str, str] | None = None) -> dict[str, Any]:
    enabled = [{"name": p} for p in plugins]
    out: dict[str, Any] = {
        "name": name,
        "plugins": {"deschedule": {"enabled": enabled}, "balance": {"enabled": enabled}},
    }
    if selector:
        out["nodeSelector"] = {"matchLabels": selector}
    return out


def cluster(pods_per_node: int = 2) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for n in ("n1", "n2", "n3"):
        objects.append(make_node(n, cpu="4", memory="4Gi", labels={"zone": "a" if n != "n3" else "b"}))
        objects += [
            make_pod(f"{n}-p{i}", "ns1" if i % 2 else "ns2", node=n, owner_kind="ReplicaSet")
            for i in range(pods_per_node)
        ]
    return objects


def run(cfg: Any, objects: list[dict[str, Any]], backend: FakeEvictions | None = None, **kwargs: Any) -> Any:
    calls.clear()
    descheduler = Descheduler(cfg, registry(), lambda: 0.0, backend or FakeEvictions(), **kwargs)
    return descheduler.run_round(1, view_of(objects).snapshot())


def test_every_deschedule_plugin_runs_before_any_balance_plugin_per_profile_selector() -> None:
    run(configuration([profile("one", "A"), profile("two", "B", selector={"zone": "b"})]), cluster())
    assert calls == ["deschedule:A", "deschedule:B", "balance:A:3", "balance:B:1"]


def test_a_failing_plugin_aborts_the_remaining_profiles_of_its_phase() -> None:
    report = run(configuration([profile("one", "Failing"), profile("two", "B")]), cluster())
    assert calls == ["deschedule:Failing", "deschedule:B", "balance:Failing:3"]
    assert report.errors == ["profile one: Failing: boom"]


def test_evictions_carry_the_plugin_name_and_respect_the_per_node_limit() -> None:
    backend = FakeEvictions()
    report = run(configuration([profile("one", "A")], maxNoOfPodsToEvictPerNode=1), cluster(), backend)
    assert backend.evicted == ["ns2/n1-p0", "ns2/n2-p0", "ns2/n3-p0"]
    assert {e.plugin for e in report.evictions} == {"A"}
    assert len(report.skipped) == 3 and "maxNoOfPodsToEvictPerNode=1" in report.skipped[0].reason


@pytest.mark.parametrize(
    ("limits", "expected"), [({"maxNoOfPodsToEvictTotal": 2}, 2), ({"maxNoOfPodsToEvictPerNamespace": 1}, 2), ({}, 6)]
)
def test_total_and_namespace_limits(limits: dict[str, int], expected: int) -> None:
    backend = FakeEvictions()
    run(configuration([profile("one", "A")], **limits), cluster(), backend)
    assert len(backend.evicted) == expected


def test_limits_are_reset_every_round() -> None:
    cfg = configuration([profile("one", "A")], maxNoOfPodsToEvictTotal=1)
    backend = FakeEvictions()
    descheduler = Descheduler(cfg, registry(), lambda: 0.0, backend)
    snapshot = view_of(cluster()).snapshot()
    descheduler.run_round(1, snapshot)
    descheduler.run_round(2, snapshot)
    assert len(backend.evicted) == 2


def test_dry_run_counts_against_the_limits_and_evicts_nothing() -> None:
    backend = FakeEvictions()
    report = run(configuration([profile("one", "A")], maxNoOfPodsToEvictTotal=4), cluster(), backend, dry_run=True)
    assert backend.evicted == [] and len(report.evictions) == 4


def test_a_cluster_of_one_node_is_skipped_with_an_error() -> None:
    report = run(configuration([profile("one", "A")]), cluster()[:3])
    assert calls == [] and "the cluster size is 0 or 1" in report.errors[0]


def test_not_ready_nodes_and_nodes_outside_the_global_selector_are_not_candidates() -> None:
    objects = cluster()
    objects[0]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]  # n1
    objects.append(make_node("n4", cpu="4", memory="4Gi", labels={"zone": "a"}))
    run(configuration([profile("one", "A")], nodeSelector={"matchLabels": {"zone": "a"}}), objects)
    assert calls[-1] == "balance:A:2"  # n2 and n4


def test_the_evictor_without_an_evict_plugin_is_a_programming_error() -> None:
    evictor = Evictor((), (), EvictionLimiter(EvictionLimits()), dry_run=False)
    with pytest.raises(RuntimeError):
        evictor.evict(make_pod(node="n1"))


def test_the_registry_refuses_duplicates_and_unknown_removals_and_merges() -> None:
    reg = Registry([PluginSpec("A", lambda a, h: Recorder("A", h))])
    with pytest.raises(ValueError, match="already exists"):
        reg.register(PluginSpec("A", lambda a, h: Recorder("A", h)))
    with pytest.raises(ValueError, match="no plugin"):
        reg.unregister("B")
    other = Registry([PluginSpec("B", lambda a, h: Recorder("B", h))])
    reg.merge(other)
    assert reg.names() == ["A", "B"]
    reg.unregister("A")
    assert reg.names() == ["B"]
    with pytest.raises(ValueError):
        reg.merge(other)
