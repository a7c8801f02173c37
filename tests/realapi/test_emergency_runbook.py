"""docs/deploy.md's emergency command, run verbatim against a real API server: with colocate's
webhook configurations registered from manifests/deploy and no webhook answering, a pod is refused;
after the command, it is created. The `ColocateWebhookDown` alert links to that section."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from colocate.cluster.rest import ApiError
from tests.docs.markdown import REPO, split
from tests.support.kustomize import render
from tests.support.realapi import RealApi

pytestmark = [
    pytest.mark.realapi,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="the runbook is kubectl: not installed"),
]

SECTION = "Emergency: take colocate out of the path"


def runbook() -> str:
    """The section's first shell block: the one command the alert's reader runs."""
    _, blocks = split((REPO / "docs" / "deploy.md").read_text())
    first = next(block for block in blocks if block.heading == SECTION and block.info == "sh")
    return "\n".join(first.lines)


def pod(name: str) -> dict[str, Any]:
    container = {"name": "main", "image": "registry.k8s.io/pause:3.9"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


@pytest.fixture
def registered(realapi: RealApi) -> Iterator[list[dict[str, Any]]]:
    """Both webhook configurations exactly as manifests/deploy renders them (the Service they call
    does not exist: colocate is down), removed after the test."""
    realapi.require_local("register webhooks that refuse every pod while colocate is down")
    configurations = [o for o in render(REPO / "manifests" / "deploy") if o["kind"].endswith("WebhookConfiguration")]
    assert len(configurations) == 2
    try:
        yield realapi.apply(configurations)
    finally:
        for configuration in configurations:
            realapi.delete(configuration["apiVersion"], configuration["kind"], configuration["metadata"]["name"])


def test_the_documented_command_lets_pods_through_while_the_webhook_is_down(
    realapi: RealApi, realapi_namespace: str, registered: list[dict[str, Any]]
) -> None:
    with pytest.raises(ApiError) as refused:
        realapi.apply([pod("before")], realapi_namespace)
    assert "koordinator.sh" in str(refused.value)  # refused by one of our webhooks, failing closed

    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", runbook()],
        env={**os.environ, "KUBECONFIG": str(realapi.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    created = realapi.apply([pod("after")], realapi_namespace)[0]
    assert created["metadata"]["name"] == "after"
    for configuration in registered:
        stored = realapi.get(configuration["apiVersion"], configuration["kind"], configuration["metadata"]["name"])
        assert stored is not None and {w["failurePolicy"] for w in stored["webhooks"]} == {"Ignore"}
