"""The live cluster state: list/watch through the official client against the stand-in."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from cluster.client import api_client
from cluster.kube import KubeSettings, KubeSource
from cluster.reflector import ReflectorSettings
from policies.snapshot import ClusterSnapshot
from tests.support.apiserver import ApiServer
from tests.support.builders import make_namespace, make_profile
from webhook.registry import default_routes
from webhook.state import StateHolder
from webhook.watched import WATCHED_KINDS, watched_kinds

FAST = KubeSettings(ReflectorSettings(watch_timeout=3, backoff_initial=0.05, backoff_max=0.2), debounce=0.05)


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


class Live:
    def __init__(self, source: KubeSource, state: StateHolder, published: list[ClusterSnapshot]) -> None:
        self.source, self.state, self.published = source, state, published

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self.state.snapshot


@pytest.fixture
async def live(api: ApiServer, kubeconfig: Path) -> AsyncIterator[Callable[[], Live]]:
    tasks: list[asyncio.Task[None]] = []

    def start() -> Live:
        source = KubeSource(api_client(kubeconfig), watched_kinds(default_routes()), FAST)
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
    assert kinds <= {k.kind for k in WATCHED_KINDS}


async def test_not_ready_until_every_kind_was_listed(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_namespace("a"))
    api.fail_requests(10_000)  # every list fails: back off, retry, stay unready
    state = live()
    await asyncio.sleep(0.3)
    assert not state.state.ready
    api.fail_requests(0)
    await until(lambda: state.state.ready)
    assert state.snapshot.namespace_labels("a") is not None


async def test_a_burst_of_events_is_published_as_few_snapshots(api: ApiServer, live: Callable[[], Live]) -> None:
    state = live()
    await until(lambda: state.state.ready)
    published_before = len(state.published)
    for index in range(300):
        api.apply(make_namespace(f"ns-{index}", {"team": "t"}))
    await until(lambda: state.snapshot.namespace_labels("ns-299") is not None)
    assert all(state.snapshot.namespace_labels(f"ns-{i}") == {"team": "t", "kubernetes.io/metadata.name": f"ns-{i}"}
               for i in range(300))
    assert len(state.published) - published_before < 30


async def test_an_unchanged_profile_is_not_parsed_again(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_profile("keep", qosClass="BE"))
    state = live()
    await until(lambda: len(state.snapshot.profiles) == 1)
    kept = state.snapshot.profiles[0]
    api.apply(make_namespace("other"))
    api.drop_watches()
    api.store.compact()  # forces a relist of every kind
    api.apply(make_profile("new", qosClass="LS"))
    await until(lambda: len(state.snapshot.profiles) == 2)
    assert state.snapshot.profiles[0] is kept


async def test_a_broken_watch_keeps_the_last_state_and_says_how_stale(
        api: ApiServer, live: Callable[[], Live], caplog: pytest.LogCaptureFixture) -> None:
    api.apply(make_profile("p", qosClass="BE"))
    state = live()
    await until(lambda: state.state.ready)
    caplog.set_level(logging.WARNING, logger="colocate.informer")
    api.fail_requests(10_000, status=503)
    api.drop_watches()
    await until(lambda: state.source.stale_seconds()["ClusterColocationProfile"] > 0.3)
    assert [p.name for p in state.snapshot.profiles] == ["p"] and state.state.ready
    assert "serving the last good state" in caplog.text
    api.fail_requests(0)
    api.apply(make_profile("q", qosClass="BE"))
    await until(lambda: len(state.snapshot.profiles) == 2)
    assert state.source.stale_seconds()["ClusterColocationProfile"] == 0.0


async def test_deletes_and_updates_arrive_through_the_watch(api: ApiServer, live: Callable[[], Live]) -> None:
    api.apply(make_namespace("a", {"tier": "1"}))
    api.apply(make_profile("p", qosClass="BE"))
    state = live()
    await until(lambda: state.state.ready)
    api.apply(make_namespace("a", {"tier": "2"}))
    api.delete("ClusterColocationProfile", "p")
    await until(lambda: not state.snapshot.profiles and state.snapshot.namespace_labels("a").get("tier") == "2")
    assert api.requests["GET list Namespace"] == 1
