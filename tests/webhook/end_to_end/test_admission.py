"""Through the dispatcher, over HTTPS, against colocate reading the stand-in API server."""

from __future__ import annotations

from typing import Any

from tests.support.apiserver import ApiServer
from tests.support.builders import make_namespace, make_pod, make_profile
from tests.support.cluster import BATCH_LABELS, BATCH_SELECTOR, DEMO_NAMESPACE, DEMO_REQUESTS, qos_of
from tests.support.wait import wait_for

QOS = "koordinator.sh/qosClass"


async def test_a_profile_created_with_the_api_mutates_the_next_pods(api: ApiServer, cluster: Any) -> None:
    _, dispatcher = await cluster()
    before = await dispatcher.admit(make_pod("before", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS))
    assert before.allowed and qos_of(before) is None

    api.apply(make_profile("batch-be", selector=BATCH_SELECTOR, qosClass="BE", priorityClassName="koord-batch"))
    after = await wait_for(
        lambda: dispatcher.admit(make_pod("after", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)),
        until=lambda r: qos_of(r) == "BE",
        interval=0.1,
        message="the new profile to apply",
    )
    assert after.allowed and qos_of(after) == "BE"
    assert after.object["spec"]["priorityClassName"] == "koord-batch"
    assert after.called == ["mpod-create.koordinator.sh", "vpod.koordinator.sh"]

    api.delete("ClusterColocationProfile", "batch-be")
    gone = await wait_for(
        lambda: dispatcher.admit(make_pod("gone", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)),
        until=lambda r: qos_of(r) is None,
        interval=0.1,
        message="the deletion to apply",
    )
    assert gone.allowed and qos_of(gone) is None


async def test_system_and_own_namespaces_never_reach_the_webhook(api: ApiServer, cluster: Any) -> None:
    _, dispatcher = await cluster()
    api.apply(make_namespace("kube-system"))
    api.apply(make_namespace("etcd", {"control-plane": "x"}))
    api.apply(make_profile("everything-be", selector=BATCH_SELECTOR, qosClass="BE"))
    for namespace in ("kube-system", "koordinator-system", "etcd"):
        result = await dispatcher.admit(make_pod("system", namespace, labels=BATCH_LABELS, requests=DEMO_REQUESTS))
        assert result.allowed and result.called == [] and qos_of(result) is None, namespace


async def test_after_the_api_server_drops_its_watches_no_update_is_lost(api: ApiServer, cluster: Any) -> None:
    _, dispatcher = await cluster()
    api.apply(make_profile("first", selector=BATCH_SELECTOR, qosClass="LS"))
    await wait_for(
        lambda: dispatcher.admit(make_pod("warm", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)),
        until=lambda r: qos_of(r) == "LS",
        interval=0.1,
        message="the first profile to apply",
    )

    api.drop_watches()
    api.store.compact()  # and the history is gone: the server must relist, not just re-watch
    api.delete("ClusterColocationProfile", "first")
    api.apply(make_profile("second", selector=BATCH_SELECTOR, qosClass="BE", priorityClassName="koord-batch"))
    result = await wait_for(
        lambda: dispatcher.admit(make_pod("after-drop", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)),
        until=lambda r: qos_of(r) == "BE",
        interval=0.1,
        message="the profile created while the watch was down to apply",
    )
    assert qos_of(result) == "BE"
    assert api.requests["GET list ClusterColocationProfile"] >= 2


async def test_a_denied_pod_carries_the_webhook_message(api: ApiServer, cluster: Any) -> None:
    _, dispatcher = await cluster()
    pod = make_pod("lsr", DEMO_NAMESPACE, labels={QOS: "LSR"}, requests=DEMO_REQUESTS)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}, "limits": {"cpu": "500m"}}
    result = await dispatcher.admit(pod)
    assert not result.allowed
    assert 'admission webhook "vpod.koordinator.sh" denied the request' in result.message


async def test_with_no_ready_replica_failure_policy_fail_refuses_pods(api: ApiServer, cluster: Any) -> None:
    service, dispatcher = await cluster()
    await service.stop()
    service.ready.clear()
    result = await dispatcher.admit(make_pod("orphan", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS))
    assert not result.allowed and 'failed calling webhook "mpod-create.koordinator.sh"' in result.message
