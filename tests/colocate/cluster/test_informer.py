"""The live cluster state: list/watch through the official client against the stand-in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.reflector import ReflectorSettings
from policies.admission.snapshot import ClusterSnapshot
from tests.support.apiserver import ApiServer
from tests.support.builders import make_namespace, make_pod, make_profile
from tests.support.wait import wait_for
from webhook.registry import Registry, default_routes, pod_routes
from webhook.snapshots import ApiServerSnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.watched import watched_kinds

FAST = KubeSettings(ReflectorSettings(watch_timeout=3, backoff_initial=0.05, backoff_max=0.2), debounce=0.05)


class Live:
    def __init__(self, source: ApiServerSnapshots, state: StateHolder, published: list[ClusterSnapshot]) -> None:
        self.source, self.state, self.published = source, state, published

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self.state.snapshot


@pytest.fixture
async def live(api: ApiServer, kubeconfig: Path) -> AsyncIterator[Callable[[], Live]]:
    tasks: list[asyncio.Task[None]] = []

    def start() -> Live:
        source = ApiServerSnapshots(api_client(kubeconfig), watched_kinds(default_routes()), FAST)
        state, published = StateHolder(), []
        tasks.append(asyncio.create_task(source.run(state, published.append)))
        return Live(source, state, published)

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def test_the_watched_kinds_follow_the_registry() -> None:
    kinds = {k.kind for k in watched_kinds(default_routes())}
    assert {"ClusterColocationProfile", "Namespace", "PriorityClass"} <= kinds
    pods_only = {k.kind for k in watched_kinds(Registry(tuple(pod_routes())))}
    assert pods_only == {"ClusterColocationProfile", "Namespace", "PriorityClass", "ElasticQuota"}


async def test_not_ready_until_every_kind_was_listed(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_namespace("a"))
    api.fail_requests(10_000)  # every list fails: back off, retry, stay unready
    state = live()
    kinds = [k.kind for k in watched_kinds(default_routes())]
    await wait_for(
        lambda: all(api.requests[f"GET list {kind}"] >= 2 for kind in kinds),
        message="every kind's list to fail and be retried",
    )
    assert not state.state.ready
    api.fail_requests(0)
    await wait_for(lambda: state.state.ready, message="the first list of every kind")
    assert state.snapshot.namespace_labels("a") is not None


async def test_a_burst_of_events_is_published_as_few_snapshots(api: ApiServer, live: Callable[[], Live]) -> None:
    state = live()
    await wait_for(lambda: state.state.ready, message="the first list of every kind")
    published_before = len(state.published)
    for index in range(300):
        api.apply(make_namespace(f"ns-{index}", {"team": "t"}))
    await wait_for(lambda: state.snapshot.namespace_labels("ns-299") is not None, message="the burst")
    assert all(
        state.snapshot.namespace_labels(f"ns-{i}") == {"team": "t", "kubernetes.io/metadata.name": f"ns-{i}"}
        for i in range(300)
    )
    assert len(state.published) - published_before < 30


async def test_an_unchanged_profile_is_not_parsed_again(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_profile("keep", qosClass="BE"))
    state = live()
    await wait_for(lambda: len(state.snapshot.profiles) == 1, message="the profile")
    kept = state.snapshot.profiles[0]
    api.apply(make_namespace("other"))
    api.drop_watches()
    api.store.compact()  # forces a relist of every kind
    api.apply(make_profile("new", qosClass="LS"))
    await wait_for(lambda: len(state.snapshot.profiles) == 2, message="the second profile")
    assert state.snapshot.profiles[0] is kept


async def test_a_broken_watch_keeps_the_last_state_and_says_how_stale(
    api: ApiServer, live: Callable[[], Live], caplog: pytest.LogCaptureFixture
) -> None:
    api.apply(make_profile("p", qosClass="BE"))
    state = live()
    await wait_for(lambda: state.state.ready, message="the first list of every kind")
    caplog.set_level(logging.WARNING, logger="colocate.informer")
    api.fail_requests(10_000, status=503)
    api.drop_watches()
    await wait_for(
        lambda: state.source.stale_seconds()["ClusterColocationProfile"] > 0.3,
        message="the profiles to be stale for 0.3s",
    )
    assert [p.name for p in state.snapshot.profiles] == ["p"] and state.state.ready
    assert "serving the last good state" in caplog.text
    api.fail_requests(0)
    api.apply(make_profile("q", qosClass="BE"))
    await wait_for(lambda: len(state.snapshot.profiles) == 2, message="the second profile")
    assert state.source.stale_seconds()["ClusterColocationProfile"] == 0.0


async def test_deletes_and_updates_arrive_through_the_watch(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_namespace("a", {"tier": "1"}))
    api.apply(make_profile("p", qosClass="BE"))
    state = live()
    await wait_for(lambda: state.state.ready, message="the first list of every kind")
    api.apply(make_namespace("a", {"tier": "2"}))
    api.delete("ClusterColocationProfile", "p")
    await wait_for(
        lambda: not state.snapshot.profiles and state.snapshot.namespace_labels("a").get("tier") == "2",
        message="the delete and the update",
    )
    assert api.requests["GET list Namespace"] == 1


async def test_pods_are_held_as_metadata_only_from_the_list_and_the_watch(
    api: ApiServer, live: Callable[[], Live]
) -> None:
    """The quota tree reads a pod's metadata only: the store keeps no spec or status of what the API
    server sends, listed or watched (`Read("Pod", metadata_only=True)`)."""
    listed = {
        **make_pod("listed", "ns-a", labels={"quota.scheduling.koordinator.sh/name": "q"}, node="n1"),
        "status": {"phase": "Running"},
    }
    api.apply(listed)
    state = live()
    await wait_for(lambda: state.state.ready, message="the first list of every kind")
    api.apply({**make_pod("watched", "ns-a"), "status": {"phase": "Pending"}})
    await wait_for(lambda: state.snapshot.get("Pod", "watched", "ns-a") is not None, message="the watched pod")
    for name in ("listed", "watched"):
        pod = state.snapshot.get("Pod", name, "ns-a")
        assert pod is not None and set(pod) == {"apiVersion", "kind", "metadata"}, pod
        assert pod["metadata"]["resourceVersion"] and pod["metadata"]["uid"]
    assert state.snapshot.get("Pod", "listed", "ns-a")["metadata"]["labels"] == listed["metadata"]["labels"]  # type: ignore[index]
