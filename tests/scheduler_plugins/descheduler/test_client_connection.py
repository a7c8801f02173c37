"""The DeschedulerConfiguration's `clientConnection` and debugging fields act or say why they
cannot (Koordinator's `pkg/descheduler/apis/config/v1alpha2/defaults.go`: qps 50, burst 100,
profiling on), against the API-server stand-in with the real `kubernetes` client."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from policies.apis.field_errors import ConfigError
from scheduler_plugins.descheduler.framework.config import ClientConnection, parse_config
from scheduler_plugins.descheduler.registry import in_tree_registry
from tests.scheduler_plugins.descheduler.test_whole_loop import CONFIG, cluster
from tests.support.apiserver import ApiServer
from tests.support.builders import NOW


def parse(**top: Any) -> Any:
    return parse_config(
        {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration", **top}, in_tree_registry()
    )


async def run(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[int, float]:
    path = tmp_path / "descheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    started = time.monotonic()
    code = await asyncio.to_thread(main, ["descheduler", "run", "--config", str(path), "--now", NOW, *flags])
    return code, time.monotonic() - started


async def test_qps_and_burst_hold_every_request_to_the_rate(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    config = {**CONFIG, "clientConnection": {"qps": 20, "burst": 1}}
    code, elapsed = await run(tmp_path, config, "--kubeconfig", str(kubeconfig), "-o", "json")
    assert code == 0, capsys.readouterr().err
    assert len(json.loads(capsys.readouterr().out)["rounds"][0]["evictions"]) == 3
    requests = sum(api.requests.values())
    assert requests >= 10
    # one token per request, 20 a second, none saved up: the requests cannot have been made faster
    assert elapsed >= (requests - 1) / 20 - 0.05, (requests, elapsed)


async def test_the_kubeconfig_of_client_connection_is_used_without_the_flag(
    api: ApiServer, kubeconfig: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for obj in cluster():
        api.apply(obj)
    code, _ = await run(tmp_path, {**CONFIG, "clientConnection": {"kubeconfig": str(kubeconfig)}}, "-o", "json")
    assert code == 0, capsys.readouterr().err
    assert len(api.evictions) == 3


def test_defaults_are_koordinators() -> None:
    assert parse().client_connection == ClientConnection("", 50.0, 100)
    assert parse(clientConnection={"qps": 0, "burst": 0}).client_connection == ClientConnection("", 50.0, 100)


@pytest.mark.parametrize(
    ("connection", "path"),
    [
        ({"qps": "fast"}, "clientConnection.qps"),
        ({"qps": -1}, "clientConnection.qps"),
        ({"burst": 1.5}, "clientConnection.burst"),
        ({"timeout": "1s"}, "clientConnection.timeout"),
    ],
)
def test_client_connection_errors_name_their_field(connection: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(clientConnection=connection)
    assert caught.value.path == path


def test_what_cannot_act_is_said_once_at_load(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="colocate.descheduler"):
        parse(
            enableProfiling=True,
            debuggingConfiguration={"enableContentionProfiling": True},
            clientConnection={"contentType": "application/vnd.kubernetes.protobuf"},
        )
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("enableProfiling: true is not acted on") for m in messages)
    assert any(m.startswith("debuggingConfiguration.enableContentionProfiling: true is not acted on") for m in messages)
    assert any(m.startswith("clientConnection.contentType:") and "application/json only" in m for m in messages)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="colocate.descheduler"):
        parse(enableProfiling=False, clientConnection={"contentType": "application/json"})
    assert caplog.records == []
