"""A real kube-scheduler (v1.20, `kubescheduler.config.k8s.io/v1beta1`) running the koord-scheduler
profile with colocate's extender (manifests/koord-scheduler/koord-scheduler-config.yaml, rewritten
for 1.20): a BE pod is filtered by the nodes' real load and bound through the extender."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.scheduler_plugins.scheduler.test_extender_kube import Extender
from tests.support.builders import make_metric, make_pod
from tests.support.paths import REPO
from tests.support.realapi import ALL_CRDS, RealApi
from tests.support.realapi_process import Component
from tests.support.wait import wait_for

pytestmark = pytest.mark.realapi

KOORD_SCHEDULER_CONFIG = REPO / "manifests" / "koord-scheduler" / "koord-scheduler-config.yaml"
BATCH = {"kubernetes.io/batch-cpu": "60000", "kubernetes.io/batch-memory": "120Gi"}


def v1beta1(config: Mapping[str, Any], extender_port: int) -> dict[str, Any]:
    """The shipped koord-scheduler configuration as kube-scheduler 1.20 reads it: the same profile
    and extender, under `v1beta1`, pointed at the test's extender (the harness sets the client
    connection and turns leader election off)."""
    extenders = [
        {**extender, "urlPrefix": f"http://127.0.0.1:{extender_port}/scheduler"} for extender in config["extenders"]
    ]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1beta1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": config["profiles"],
        "extenders": extenders,
    }


@pytest.fixture
def nodes(realapi: RealApi) -> Iterator[tuple[str, str]]:
    """Two nodes with batch resources: `busy`, the larger (kube-scheduler's own scoring prefers it),
    reports 60 of its 64 cores in use; `quiet` reports 2 of 32."""
    realapi.install_crds(*ALL_CRDS)
    busy, quiet = f"busy-{realapi.run_id}", f"quiet-{realapi.run_id}"
    for name, cpu, used in ((busy, "64", "60"), (quiet, "32", "2")):
        realapi.add_node(name, capacity={"cpu": cpu, "memory": "128Gi", "pods": "110", **BATCH})
        metric = make_metric(name, cpu=used, memory="10Gi")
        realapi.apply([metric])
        realapi.write_status(metric)
    try:
        yield busy, quiet
    finally:
        for name in (busy, quiet):
            realapi.delete("slo.koordinator.sh/v1alpha1", "NodeMetric", name)
            realapi.core.delete_node(name)


async def test_kube_scheduler_with_the_extender_binds_a_be_pod_to_the_node_with_room(
    realapi: RealApi,
    realapi_namespace: str,
    realapi_scheduler: Callable[[Mapping[str, Any]], Component],
    nodes: tuple[str, str],
    tmp_path: Path,
) -> None:
    busy, quiet = nodes
    async with aiohttp.ClientSession() as session:
        extender = await Extender(realapi.kubeconfig, tmp_path / "extender.log", session).wait_ready()
        try:
            config = yaml.safe_load(KOORD_SCHEDULER_CONFIG.read_text())
            # started from the main thread: the harness ties a child's life to the thread that forks it
            realapi_scheduler(v1beta1(config, extender.port))
            pod = make_pod(
                "spark-executor",
                realapi_namespace,
                qos="BE",
                requests={"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "2Gi"},
                schedulerName="koord-scheduler",
            )
            await asyncio.to_thread(realapi.apply, [pod])

            bound = await wait_for(
                lambda: asyncio.to_thread(
                    lambda: realapi.core.read_namespaced_pod("spark-executor", realapi_namespace).spec.node_name
                ),
                timeout=60,
                interval=0.2,
                message=lambda: f"the pod bound; extender log:\n{(tmp_path / 'extender.log').read_text()[-3000:]}",
            )
        finally:
            extender.stop()

    assert bound == quiet  # LoadAwareScheduling refused `busy` (60 of 64 cores used), whatever its size
