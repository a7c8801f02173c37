"""Through the dispatcher, over HTTPS, against colocate reading the stand-in API server."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tests.support.apiserver import ApiServer
from tests.support.builders import make_namespace, make_pod, make_profile
from tests.support.cluster import BATCH_LABELS, BATCH_SELECTOR, DEMO_NAMESPACE, DEMO_REQUESTS, qos_of
from tests.support.dispatcher import Admission

QOS = "koordinator.sh/qosClass"


async def eventually(admit: Callable[[], Awaitable[Admission]], check: Callable[[Admission], bool],
                     timeout: float = 5.0) -> Admission:
    """Admit pods until one passes `check` (the watch has delivered the change) or time runs out."""
    result = await admit()
    for _ in range(int(timeout / 0.1)):
        if check(result):
            return result
        await asyncio.sleep(0.1)
        result = await admit()
    return result


async def test_a_profile_created_with_the_api_mutates_the_next_pods(api: ApiServer, cluster: Any) -> None:
    _, dispatcher = await cluster()
    before = await dispatcher.admit(make_pod("before", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS))
    assert before.allowed and qos_of(before) is None

    api.apply(make_profile("batch-be", selector=BATCH_SELECTOR, qosClass="BE", priorityClassName="koord-batch"))
    after = await eventually(lambda: dispatcher.admit(make_pod("after", DEMO_NAMESPACE, labels=BATCH_LABELS,
                                                               requests=DEMO_REQUESTS)),
                             lambda r: qos_of(r) == "BE")
    assert after.allowed and qos_of(after) == "BE"
    assert after.object["spec"]["priorityClassName"] == "koord-batch"
    assert after.called == ["mpod-create.koordinator.sh", "vpod.koordinator.sh"]

    api.delete("ClusterColocationProfile", "batch-be")
    gone = await eventually(lambda: dispatcher.admit(make_pod("gone", DEMO_NAMESPACE, labels=BATCH_LABELS,
                                                              requests=DEMO_REQUESTS)),
                            lambda r: qos_of(r) is None)
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
    await eventually(lambda: dispatcher.admit(make_pod("warm", DEMO_NAMESPACE, labels=BATCH_LABELS,
                                                       requests=DEMO_REQUESTS)),
                     lambda r: qos_of(r) == "LS")

    api.drop_watches()
    api.store.compact()  # and the history is gone: the server must relist, not just re-watch
    api.delete("ClusterColocationProfile", "first")
    api.apply(make_profile("second", selector=BATCH_SELECTOR, qosClass="BE", priorityClassName="koord-batch"))
    result = await eventually(lambda: dispatcher.admit(make_pod("after-drop", DEMO_NAMESPACE, labels=BATCH_LABELS,
                                                                requests=DEMO_REQUESTS)),
                              lambda r: qos_of(r) == "BE")
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
