"""Memory a storm of connections took is given back to the system once it is over.

A thousand connections each holding a head or a body take their buffers from the C allocator;
when they close, glibc keeps the freed pages for the process (1,000 connections with 56 KiB heads
took a server from 93 to 226 MiB, and it stayed there after they closed). A process that keeps
the high-water mark of every storm is one that the next storm OOM-kills sooner. So once the open
connections have fallen well below their peak, the process asks glibc to return its free pages
(`malloc_trim`; elsewhere, e.g. musl, there is nothing to ask and this does nothing). One call
costs a few milliseconds of the event loop, at most once per `interval`.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable
from typing import Final, Protocol

log = logging.getLogger("colocate.connections")

TRIM_INTERVAL: Final = 5.0
#: a storm is over when this many fewer connections are open than at the peak since the last trim
STORM_CONNECTIONS: Final = 64


class Connections(Protocol):
    open: int
    peak: int


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's `malloc_trim(0)`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int

    def give_back() -> None:
        trim(0)

    return give_back


def storm_over(connections: Connections) -> bool:
    """Whether a storm has passed since the last trim (and then the peak starts afresh)."""
    if connections.peak - connections.open < STORM_CONNECTIONS:
        return False
    connections.peak = connections.open
    return True


async def give_back_after_storms(connections: Connections, interval: float = TRIM_INTERVAL) -> None:
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await asyncio.sleep(interval)
        if storm_over(connections):
            trim()
            log.debug("a storm of connections is over: free memory returned to the system")
