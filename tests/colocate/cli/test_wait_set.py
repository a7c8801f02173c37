"""`colocate.cli.eventloop.wait_set`: the wake-or-period wait of the manager's and the koordlet's loops.

The manager's `run_rounds` hung its `stop()` under load: `asyncio.wait_for(wake.wait(), t)` on
Python 3.11 returns the event's result and drops a cancellation that arrives in the same turn of
the loop as the event is set (CPython gh-86296), so the loop ran on after being cancelled."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from colocate.cli.eventloop import wait_set


async def naive(event: asyncio.Event, seconds: float) -> bool:
    """What the loops did before: the cancellation can be lost on Python 3.11."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
    return event.is_set()


async def cancellations_lost(wait: Callable[[asyncio.Event, float], Awaitable[bool]]) -> list[int]:
    """Set the event, let the loop turn `turns` times, then cancel a task looping on `wait`: the
    turns after which the task did not end (it kept looping: its cancellation was dropped)."""
    lost = []
    for turns in range(6):
        event = asyncio.Event()
        waiting = asyncio.Event()

        async def loop(event: asyncio.Event, waiting: asyncio.Event) -> None:
            while True:
                waiting.set()
                await wait(event, 3600)
                event.clear()

        task = asyncio.create_task(loop(event, waiting))
        await waiting.wait()
        event.set()
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=1)
        if not done:
            lost.append(turns)
            task.cancel()  # it waits again, on an event nobody sets: this cancellation lands
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return lost


async def test_a_cancellation_is_never_lost_whenever_the_event_is_set() -> None:
    assert await cancellations_lost(wait_set) == []


async def test_the_reference_shows_the_race_this_guards_against() -> None:
    """The test above can fail: asyncio.wait_for loses the cancellation for some interleaving here."""
    import sys

    if sys.version_info >= (3, 12):
        pytest.skip("asyncio.wait_for keeps the cancellation from Python 3.12 on")
    assert await cancellations_lost(naive) != []


async def test_the_wait_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_set(event, 0.01) is False
    event.set()
    assert await wait_set(event, 10) is True
