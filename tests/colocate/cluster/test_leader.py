"""Lease election: one leader among contenders, take-over only after the lease expired (injected clock)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from colocate.cluster.client import api_client
from colocate.cluster.leader import LeaseElector, decide
from tests.certs.conftest import NOW
from tests.support.apiserver import ApiServer

DURATION = dt.timedelta(seconds=15)
SECOND = dt.timedelta(seconds=1)


def test_decide_acquires_a_missing_lease_and_keeps_off_a_live_one() -> None:
    first = decide(None, "a", NOW, DURATION, "lease", namespace="ns")
    assert first.leader and first.create and first.lease["spec"]["holderIdentity"] == "a"
    held = first.lease
    assert not decide(held, "b", NOW + 14 * SECOND, DURATION, "lease").leader
    renewed = decide(held, "a", NOW + 14 * SECOND, DURATION, "lease")
    assert renewed.leader and not renewed.create and renewed.lease["spec"]["leaseTransitions"] == 0
    taken = decide(held, "b", NOW + 16 * SECOND, DURATION, "lease")
    assert taken.leader and taken.lease["spec"]["holderIdentity"] == "b"
    assert taken.lease["spec"]["leaseTransitions"] == 1


def test_a_lease_whose_renew_time_cannot_be_read_counts_as_expired_not_as_a_crash() -> None:
    held = decide(None, "a", NOW, DURATION, "lease").lease
    assert held is not None
    for renew in ("not a time", "0001-01-01T00:00:00Z"):
        unreadable = {**held, "spec": {**held["spec"], "renewTime": renew}}
        assert decide(unreadable, "b", NOW + SECOND, DURATION, "lease").leader


def test_a_lease_renewed_with_microseconds_is_held_to_the_microsecond() -> None:
    held = decide(None, "a", NOW, DURATION, "lease").lease
    assert held is not None
    just_before = NOW + DURATION - dt.timedelta(microseconds=1)
    assert not decide(held, "b", just_before, DURATION, "lease").leader
    assert decide(held, "b", NOW + DURATION, DURATION, "lease").leader


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        return self.now


async def test_two_contenders_get_one_leader_and_the_other_takes_over_when_it_stops(
    api: ApiServer, kubeconfig: Path
) -> None:
    clock = Clock()
    a, b = (
        LeaseElector(
            api_client(kubeconfig),
            "koordinator-system",
            name,
            name="colocate-webhook-certs",
            duration=DURATION,
            clock=clock,
        )
        for name in ("replica-a", "replica-b")
    )
    rounds = await asyncio.gather(*(asyncio.to_thread(e.try_acquire_or_renew) for e in (a, b)))
    assert sorted(rounds) == [False, True]  # at the same instant, exactly one wins (the other's write conflicts)
    leader, follower = (a, b) if rounds[0] else (b, a)
    for _ in range(3):
        clock.now += 5 * SECOND
        assert await asyncio.to_thread(leader.try_acquire_or_renew)
        assert not await asyncio.to_thread(follower.try_acquire_or_renew)
    clock.now += 16 * SECOND  # the leader stopped renewing
    assert await asyncio.to_thread(follower.try_acquire_or_renew)
    assert not await asyncio.to_thread(leader.try_acquire_or_renew)
    lease = api.store.get(api.by_kind["Lease"], "koordinator-system", "colocate-webhook-certs")
    assert lease["spec"]["holderIdentity"] == follower.identity and lease["spec"]["leaseTransitions"] == 1
