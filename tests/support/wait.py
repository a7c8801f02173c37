"""The one way tests wait for something to happen: poll a probe until its value will do.

    await wait_for(lambda: state.ready, message="the informer to sync")
    result = await wait_for(lambda: dispatcher.admit(pod), until=lambda r: qos_of(r) == "BE",
                            message="the new profile to reach the webhook")
    wait_for_sync(lambda: server.probe("/readyz")[0] == 200, ignore=(OSError,), timeout=20,
                  message="the server to become ready")

`probe` is called (and, in `wait_for`, awaited if it returns an awaitable) until `until(value)` holds,
by default until the value is truthy; that value is returned. The probe runs at least once, then
every `interval` seconds until `timeout`, when an `AssertionError` says what was awaited (`message`,
or a function that returns it, read only then, e.g. a log file) and the last value or exception.
Exceptions of the `ignore` types count as "not yet"; any other exception, such as an assertion that
a child process is still alive, ends the wait at once.

Use it for anything observable. A test that must let time pass (a timeout, a period, "nothing more
happens") sleeps instead, with a comment saying why.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

Message = str | Callable[[], str]


def _truthy(value: Any) -> bool:
    return bool(value)


def _failure(timeout: float, message: Message, last: object, error: BaseException | None) -> AssertionError:
    what = message() if callable(message) else message
    seen = f"last error: {error!r}" if error is not None else f"last value: {last!r}"
    return AssertionError(f"not within {timeout}s: {what or 'the condition'} ({seen})")


async def wait_for(
    probe: Callable[[], T | Awaitable[T]],
    *,
    until: Callable[[T], bool] = _truthy,
    timeout: float = 5.0,
    interval: float = 0.05,
    message: Message = "",
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Poll `probe` on the running event loop until `until(value)`; return that value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while True:
        error: BaseException | None = None
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
            last = value
            if until(value):  # type: ignore[arg-type]
                return value  # type: ignore[return-value]
        except ignore as exc:
            error = exc
        if loop.time() >= deadline:
            raise _failure(timeout, message, last, error)
        await asyncio.sleep(interval)


def wait_for_sync(
    probe: Callable[[], T],
    *,
    until: Callable[[T], bool] = _truthy,
    timeout: float = 5.0,
    interval: float = 0.05,
    message: Message = "",
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """`wait_for` for code with no event loop (a child process driven with blocking calls)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        error: BaseException | None = None
        try:
            last = value = probe()
            if until(value):
                return value
        except ignore as exc:
            error = exc
        if time.monotonic() >= deadline:
            raise _failure(timeout, message, last, error)
        time.sleep(interval)
