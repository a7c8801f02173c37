"""Each file here is one class of attack on a real `colocate serve` process over TLS on 127.0.0.1."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.served import Served


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """`served(*flags, **options)`: a ready server, killed at the end of the test."""
    servers: list[Served] = []

    def start(*extra: str, **options: Any) -> Served:
        servers.append(Served(tmp_path, *extra, **options))
        return servers[-1].wait_ready()

    yield start
    for server in servers:
        server.kill()
