"""What a long-running cluster component (the descheduler, the manager) does around its rounds:
wait until its view of the cluster has been listed once, and hold its Lease while it runs.

Both are awaited, never polled: a view calls `on_synced` from the store's thread once every kind is
listed, and the elector is asked again every `retry_period`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, Final, Protocol

from kubernetes import client
from prometheus_client import Gauge

from colocate.cluster.leader import LeaseElector

log = logging.getLogger(__name__)

LISTING_TIMEOUT_SECONDS: Final = 60.0
"""How long a run of a bounded number of rounds waits for the API server's first listing."""


class NotListed(ValueError):
    """The cluster state was not listed in time: bad input (an API server that answers no list)."""


class SyncedView(Protocol):
    """A view of the store that says when every kind has been listed once."""

    on_synced: Callable[[], None] | None

    @property
    def synced(self) -> bool: ...


async def wait_synced(view: SyncedView) -> None:
    """Until every kind of `view` has been listed once."""
    loop, synced = asyncio.get_running_loop(), asyncio.Event()

    def notify() -> None:
        loop.call_soon_threadsafe(synced.set)

    view.on_synced = notify
    if view.synced:
        synced.set()
    await synced.wait()


async def wait_listed(view: SyncedView, *, bounded: bool) -> None:
    """`wait_synced`; a `bounded` run (a number of rounds) gives up after `LISTING_TIMEOUT_SECONDS`
    with `NotListed`, where one that runs until stopped waits as long as it takes."""
    try:
        await asyncio.wait_for(wait_synced(view), LISTING_TIMEOUT_SECONDS if bounded else None)
    except TimeoutError as exc:
        raise NotListed(f"the cluster state was not listed within {LISTING_TIMEOUT_SECONDS:g}s") from exc


async def hold_lease(
    api: client.ApiClient,
    lease: tuple[str, str],
    durations: tuple[float, float],
    leading: asyncio.Event,
    gauge: Gauge,
    renew_deadline: float | None = None,
) -> None:
    """Hold the Lease `lease` (namespace, name) as this process (host name and a fresh uuid, as
    client-go's leader election names a candidate) for `durations` (lease duration, retry period,
    in seconds): `keep_leading`."""
    namespace, name = lease
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    elector = LeaseElector(api, namespace, identity, name=name, duration=timedelta(seconds=durations[0]))
    await keep_leading(elector, durations[1], leading, gauge, renew_deadline)


class Beside:
    """The tasks that run beside a component's rounds (watches, the Lease, exports) and the probe
    servers, all stopped when the rounds end however they end: `async with Beside() as beside`."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[None]] = []
        self.stops: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        self.tasks.append(asyncio.create_task(work))

    async def __aenter__(self) -> Beside:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for stop in self.stops:
            await stop()


async def keep_leading(
    elector: LeaseElector,
    retry_period: float,
    leading: asyncio.Event,
    gauge: Gauge,
    renew_deadline: float | None = None,
) -> None:
    """Acquire and renew the lease every `retry_period`; `leading` is set, and `gauge` is 1, while we
    hold it. An API server that cannot be reached means we cannot know we still lead: we stop —
    at once, or, with `renew_deadline` (client-go's `renewDeadline`, shorter than the lease), once
    no renewal has succeeded for that long; meanwhile the lease we wrote still holds the others off.
    A lease another holder has taken stops us at once."""
    loop = asyncio.get_running_loop()
    renewed = loop.time()
    while True:
        try:
            leader = await asyncio.to_thread(elector.try_acquire_or_renew)
            if leader:
                renewed = loop.time()
        except Exception as exc:  # noqa: BLE001 - unreachable, refused: either way not known to lead
            within = renew_deadline is not None and loop.time() - renewed < renew_deadline
            leader = leading.is_set() and within
            log.warning("leader election failed%s: %s", " (still within renewDeadline)" if leader else "", exc)
        if leader != leading.is_set():
            log.info("%s the lease %s/%s", "acquired" if leader else "lost", elector.namespace, elector.name)
        (leading.set if leader else leading.clear)()
        gauge.set(1 if leader else 0)
        await asyncio.sleep(retry_period)
