"""`--event-loop`: uvloop by default where installed, the stdlib loop on request, a clear error else."""

from __future__ import annotations

import asyncio

import pytest

from colocate.cli import eventloop
from colocate.cli.errors import UsageError


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_auto_and_uvloop_run_on_uvloop_and_asyncio_on_the_stdlib_loop():
    assert eventloop.run(_loop_module(), "auto").startswith("uvloop")
    assert eventloop.run(_loop_module(), "uvloop").startswith("uvloop")
    assert eventloop.run(_loop_module(), "asyncio").startswith("asyncio")


def test_auto_falls_back_to_the_stdlib_loop_without_uvloop_and_uvloop_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(eventloop, "_uvloop_factory", lambda: None)
    assert eventloop.run(_loop_module(), "auto").startswith("asyncio")
    with pytest.raises(UsageError, match="uvloop is not installed"):
        eventloop.loop_factory("uvloop")


def test_an_unknown_loop_is_a_usage_error():
    with pytest.raises(UsageError, match="--event-loop must be one of auto, uvloop, asyncio"):
        eventloop.loop_factory("trio")
