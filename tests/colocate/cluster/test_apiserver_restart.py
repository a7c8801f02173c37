"""After an API server restart every watch resumes within about a second of the server answering
again, whatever backoff each had reached while it was down; meanwhile `/readyz` says the state is
stale, and turns unready once it is stale beyond `STALE_READY_SECONDS` (docs/serve.md).

Against a real kube-apiserver, admission used profiles 16.8 s stale, about 10 s after the server
was ready again: each watch reconnected on its own backoff. This measures the time from the
stand-in answering `/readyz` again to a profile created then reaching the webhook's snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import STALE_READY_SECONDS, stale_readiness
from tests.support.apiserver import ApiServer
from tests.support.builders import make_profile
from tests.support.wait import wait_for
from webhook.registry import default_routes
from webhook.server import Lifecycle, readiness
from webhook.snapshots import ApiServerSnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.watched import watched_kinds

#: production's backoff (client-go's 0.8 s doubling to 30 s); only the watch timeout is short
PRODUCTION_BACKOFF = KubeSettings(ReflectorSettings(watch_timeout=30))
#: failures in a row each watch sees while the server is down: its backoff reaches 0.8 * 2**4 = 12.8 s
FAILURES_WHILE_DOWN = 5
#: "within about a second" of the server answering again
RESUMED_WITHIN = 1.5


async def test_every_watch_resumes_within_a_second_of_the_server_answering_again(
    api: ApiServer, kubeconfig: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="colocate.informer")
    api.apply(make_profile("before", qosClass="BE"))
    failures: Counter[str] = Counter()
    source = ApiServerSnapshots(
        api_client(kubeconfig),
        watched_kinds(default_routes()),
        PRODUCTION_BACKOFF,
        on_failure=lambda kind, reason: failures.update([kind]),
    )
    state = StateHolder(stale_seconds=source.stale_seconds)
    task = asyncio.create_task(source.run(state, lambda snapshot: None))
    try:
        await wait_for(lambda: state.ready, timeout=20, message="the first list of every kind")
        await api.go_down()
        kinds = [k.kind for k in watched_kinds(default_routes())]
        await wait_for(
            lambda: all(failures[kind] >= FAILURES_WHILE_DOWN for kind in kinds),
            timeout=60,
            interval=0.2,
            message=lambda: f"every watch to back off {FAILURES_WHILE_DOWN} times: {failures}",
        )
        status, said = readiness(Lifecycle(), state)
        assert status == 200 and "watches reconnecting: " in said  # stale, and says so
        await api.come_back()
        answering = asyncio.get_running_loop().time()
        api.apply(make_profile("after", qosClass="LS"))
        await wait_for(
            lambda: {p.name for p in state.snapshot.profiles} == {"before", "after"},
            timeout=20,
            message="the profile created after the restart",
        )
        took = asyncio.get_running_loop().time() - answering
        print(f"\nprofile in effect {took:.2f}s after the API server answered again")
        assert took < RESUMED_WITHIN
        assert readiness(Lifecycle(), state) == (200, "ok")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_readyz_turns_unready_once_a_watch_is_broken_beyond_the_bound() -> None:
    state = StateHolder(ready=True)
    state.stale_seconds = lambda: {"Pod": 0.0, "ClusterColocationProfile": 2.5}
    status, said = readiness(Lifecycle(), state)
    assert status == 200 and said == "ok; watches reconnecting: ClusterColocationProfile 2.5s"
    state.stale_seconds = lambda: {"Pod": 0.0, "ClusterColocationProfile": STALE_READY_SECONDS + 1}
    status, said = readiness(Lifecycle(), state)
    assert status == 503 and said.startswith(f"cluster state stale beyond {STALE_READY_SECONDS:g}s")
    assert "ClusterColocationProfile" in said


def test_the_bound_and_the_kinds_not_served_are_said() -> None:
    assert stale_readiness({}, ["ElasticQuota"]) == (
        True,
        "ok; not served by the API server (treated as none): ElasticQuota",
    )
    assert stale_readiness({"Node": 0.0}) == (True, "ok")


async def test_the_stand_in_restarts_with_its_objects_and_certificates(tmp_path: Path) -> None:
    async with ApiServer() as server:
        server.apply(make_profile("kept", qosClass="BE"))
        port = server.port
        await server.go_down()
        await server.come_back()
        assert server.port == port
        client = api_client(server.write_kubeconfig(tmp_path / "kubeconfig"))
        response = await asyncio.to_thread(
            client.call_api, *client.param_serialize("GET", "/readyz", auth_settings=["BearerToken"])
        )
        assert response.status == 200
        assert [p["metadata"]["name"] for p in server.store.list(server.by_kind["ClusterColocationProfile"])] == [
            "kept"
        ]
