"""A component's `clientConnection.qps`/`burst` and its leader election's `renewDeadline`, against
the API-server stand-in with the real `kubernetes` client (client-go's
`flowcontrol.NewTokenBucketRateLimiter`; `leaderelection.LeaderElector.renew`)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from colocate.cluster.client import api_client
from colocate.cluster.leader import LeaseElector
from colocate.cluster.rest import ObjectClient
from colocate.cluster.running import keep_leading
from colocate.cluster.throttle import TokenBucket, throttle
from tests.support.apiserver import ApiServer
from tests.support.wait import wait_for


class FakeTime:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_a_bucket_lets_a_burst_through_then_one_request_per_token() -> None:
    time = FakeTime()
    bucket = TokenBucket(2.0, 3, clock=lambda: time.now, sleep=time.sleep)
    for _ in range(5):
        bucket.wait()
    assert time.slept == [0.5, 0.5]  # three at once, then one every 1/qps
    time.now += 10  # idle: the bucket refills up to its burst, no more
    for _ in range(4):
        bucket.wait()
    assert time.slept == [0.5, 0.5, 0.5]


async def test_every_request_of_a_throttled_client_takes_a_token(api: ApiServer, kubeconfig: Path) -> None:
    time = FakeTime()
    bucket = TokenBucket(1.0, 2, clock=lambda: time.now, sleep=time.sleep)
    objects = ObjectClient(throttle(api_client(kubeconfig), 1.0, 2, bucket))
    for _ in range(4):
        await asyncio.to_thread(objects.list, "Pod", "default")
    assert time.slept == [1.0, 1.0]
    assert api.requests["GET list Pod"] == 4


class Recorder:
    def __init__(self) -> None:
        self.values: list[float] = []

    def set(self, value: float) -> None:
        self.values.append(value)


async def lead(
    api: ApiServer, kubeconfig: Path, renew_deadline: float | None
) -> tuple[asyncio.Task[None], asyncio.Event, Recorder]:
    elector = LeaseElector(api_client(kubeconfig), "default", "me", name="lock", duration=dt.timedelta(seconds=15))
    leading, gauge = asyncio.Event(), Recorder()
    task = asyncio.create_task(keep_leading(elector, 0.02, leading, gauge, renew_deadline))  # type: ignore[arg-type]
    await asyncio.wait_for(leading.wait(), 10)
    return task, leading, gauge


async def test_within_the_renew_deadline_failed_renewals_keep_the_lead(api: ApiServer, kubeconfig: Path) -> None:
    task, leading, gauge = await lead(api, kubeconfig, renew_deadline=10.0)
    try:
        api.fail_requests(3)
        seen = len(gauge.values)
        await wait_for(lambda: api._failures == 0 and len(gauge.values) > seen + 4, message="failures, then renewals")
        assert 0 not in gauge.values and leading.is_set()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_past_the_renew_deadline_the_lead_is_given_up(api: ApiServer, kubeconfig: Path) -> None:
    task, leading, gauge = await lead(api, kubeconfig, renew_deadline=0.3)
    try:
        api.fail_requests(10_000)
        loop = asyncio.get_running_loop()
        failing_since = loop.time()
        await wait_for(lambda: not leading.is_set(), message="the lead given up")
        assert loop.time() - failing_since >= 0.3 - 0.02  # not before the deadline (one retry period)
        assert gauge.values[-1] == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_without_a_renew_deadline_one_failed_renewal_gives_up_the_lead(api: ApiServer, kubeconfig: Path) -> None:
    task, _, gauge = await lead(api, kubeconfig, renew_deadline=None)
    try:
        api.fail_requests(1)
        await wait_for(lambda: 0 in gauge.values, message="the lead given up (then taken again)")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
