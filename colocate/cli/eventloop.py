"""Which asyncio event loop a long-running command runs on.

`uvloop` (libuv, with its TCP and TLS transports written in Cython) is the default where it is
installed: on the admission path most of what is not colocate's own code is the event loop and the
TLS layer, and uvloop runs that part several microseconds per request cheaper than the stdlib loop
(`benchmarks/README.md`). `asyncio` is the standard library's loop, for a platform without uvloop
or to rule the loop out when chasing a problem. Everything above the loop is the same code on both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from colocate.cli.errors import UsageError

EVENT_LOOPS: Final = ("auto", "uvloop", "asyncio")
T = TypeVar("T")


def _uvloop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """The factory `name` stands for; `auto` is uvloop when it can be imported, else asyncio's."""
    if name not in EVENT_LOOPS:
        raise UsageError(f"--event-loop must be one of {', '.join(EVENT_LOOPS)}, got {name!r}")
    if name == "asyncio":
        return asyncio.new_event_loop
    factory = _uvloop_factory()
    if factory is not None:
        return factory
    if name == "uvloop":
        raise UsageError("--event-loop uvloop: uvloop is not installed (pip install uvloop)")
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T], event_loop: str = "auto") -> T:
    """`asyncio.run(main)` on the loop `event_loop` names."""
    with asyncio.Runner(loop_factory=loop_factory(event_loop)) as runner:
        return runner.run(main)


def is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    return type(loop).__module__.startswith("uvloop")


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait until `event` is set or `seconds` pass; True if it was set.

    A loop that wakes on an event or a period must not use `asyncio.wait_for(event.wait(), t)` on
    Python 3.11: when the event is set in the same turn of the loop as the task is cancelled,
    `wait_for` returns the result and drops the cancellation (CPython gh-86296, fixed in 3.12), and
    the loop runs on forever, so shutting the component down hangs. `asyncio.timeout` does not."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True
