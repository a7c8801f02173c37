"""Rolling a replica must not fail a single admission: SIGTERM one of two under steady load."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod, make_profile
from tests.support.cluster import BATCH_LABELS, BATCH_SELECTOR, DEMO_NAMESPACE, DEMO_REQUESTS, qos_of
from tests.support.wait import wait_for


async def test_sigterm_under_load_fails_no_admission(api: ApiServer, cluster: Any) -> None:
    api.apply(make_profile("batch-be", selector=BATCH_SELECTOR, qosClass="BE", priorityClassName="koord-batch"))
    service, dispatcher = await cluster(replicas=2)
    doomed, survivor = service.replicas
    results: list[Any] = []
    stop = asyncio.Event()

    async def client(index: int) -> None:
        count = 0
        while not stop.is_set():
            count += 1
            pod = make_pod(f"load-{index}-{count}", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)
            results.append(await dispatcher.admit(pod))

    clients = [asyncio.create_task(client(i)) for i in range(6)]
    await wait_for(lambda: len(results) > 20, timeout=10, message="the load to flow")
    before = len(results)
    doomed.terminate()
    started = time.monotonic()
    code = await doomed.wait(timeout=10)
    exited_after = time.monotonic() - started
    alone = len(results)  # and the survivor keeps serving alone
    await wait_for(lambda: len(results) > alone + 20, timeout=10, message="the survivor to serve alone")
    stop.set()
    await asyncio.wait_for(asyncio.gather(*clients), 10)

    failures = [r.message for r in results if not r.allowed]
    assert failures == []
    assert all(qos_of(r) == "BE" for r in results)
    assert before > 0 and len(results) > before
    assert code == 0 and exited_after < 1 + 5 + 2  # drain delay + shutdown timeout + slack
    assert "draining" in doomed.log.read_text()
    assert survivor.process.poll() is None
