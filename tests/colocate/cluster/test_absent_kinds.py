"""A kind whose CRD is not installed: the API server answers 404 for its collection. Waiting for it
kept `serve` unready forever, and with `failurePolicy: Fail` a webhook that is never ready refuses
pod creations cluster-wide. It now counts as listed and empty, `/readyz` names it, and a CRD
installed later is picked up (docs/serve.md, "A CRD that is not installed")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from colocate.cluster.client import api_client
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import ClusterStore
from tests.support.apiserver import ApiServer, default_types
from tests.support.builders import make_profile, make_quota
from tests.support.wait import wait_for
from webhook.registry import default_routes
from webhook.server import Lifecycle, readiness
from webhook.snapshots import ApiServerSnapshots, KubeSettings
from webhook.state import StateHolder
from webhook.watched import watched_kinds

FAST = KubeSettings(ReflectorSettings(watch_timeout=3, backoff_initial=0.05, backoff_max=0.2), debounce=0.05)
QUOTA_TYPE = next(t for t in default_types() if t.kind == "ElasticQuota")


@pytest.fixture
async def without_quotas() -> AsyncIterator[ApiServer]:
    """An API server where the ElasticQuota CRD is not installed."""
    async with ApiServer([t for t in default_types() if t.kind != "ElasticQuota"], bookmark_interval=0.2) as server:
        yield server


async def test_a_kind_not_served_is_empty_and_named_and_the_webhook_is_ready(
    without_quotas: ApiServer, tmp_path: Path
) -> None:
    api = without_quotas
    api.apply(make_profile("be", qosClass="BE"))
    source = ApiServerSnapshots(
        api_client(api.write_kubeconfig(tmp_path / "kubeconfig")), watched_kinds(default_routes()), FAST
    )
    state = StateHolder(stale_seconds=source.stale_seconds)
    task = asyncio.create_task(source.run(state, lambda snapshot: None))
    try:
        await wait_for(lambda: state.ready, timeout=20, message="ready without the ElasticQuota CRD")
        status, said = readiness(Lifecycle(), state)
        assert status == 200
        assert "ElasticQuota: not served by the API server" in said and "is its CRD installed?" in said
        assert [p.name for p in state.snapshot.profiles] == ["be"]  # admission goes on

        api.types[(QUOTA_TYPE.group, QUOTA_TYPE.version, QUOTA_TYPE.plural)] = QUOTA_TYPE  # installed late
        api.by_kind["ElasticQuota"] = QUOTA_TYPE
        api.apply(make_quota("team-a", "default", min={"cpu": "1"}, max={"cpu": "2"}))
        await wait_for(lambda: readiness(Lifecycle(), state) == (200, "ok"), timeout=20, message="the CRD seen")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_the_store_names_what_it_still_waits_for() -> None:
    store = ClusterStore(["Node", "Pod", "NodeMetric"])
    store.replace("Node", [])
    assert store.readiness() == (False, "cluster state not listed yet: waiting for NodeMetric, Pod")
