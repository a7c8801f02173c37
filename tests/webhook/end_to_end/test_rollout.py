"""A warn-only profile and the background audit, through `colocate serve` reading the stand-in API
server, called over HTTPS by the API-server-style dispatcher."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from policies.apis.kinds import kind_named
from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod, make_profile
from tests.support.cluster import (
    BATCH_LABELS,
    BATCH_SELECTOR,
    DEMO_NAMESPACE,
    DEMO_REQUESTS,
    FAST_ARGS,
    ColocateProcess,
    Service,
    cluster_files,
    inject_ca_bundle,
    make_certs,
    namespace_labels,
    qos_of,
    seed,
    webhook_configurations,
)
from tests.support.dispatcher import Dispatcher
from tests.support.wait import wait_for

REPORTS = kind_named("PolicyReport")


def metrics(port: int) -> str:
    """/metrics of the server whose metrics listener is `port` (plain HTTP, as Prometheus reads it)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


async def test_warn_only_warnings_reach_the_client_and_the_audit_writes_reports(
    api: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    seed(api, cluster_files())
    certs = make_certs(tmp_path / "certs")
    inject_ca_bundle(api, certs.ca)
    api.apply(
        make_profile(
            "batch-trial",
            metadata_annotations={"colocate.io/enforcement": "warn"},
            selector=BATCH_SELECTOR,
            qosClass="BE",
            priorityClassName="koord-batch",
        )
    )
    running = {
        **make_pod("old", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS),
        "status": {"phase": "Running"},
    }
    api.apply(running)
    process = ColocateProcess(
        kubeconfig, certs.directory, tmp_path / "colocate.log", (*FAST_ARGS, "--audit-interval", "300ms")
    )
    service = await Service([process]).start()
    try:
        async with Dispatcher(
            lambda: webhook_configurations(api), service.endpoints, lambda name: namespace_labels(api, name)
        ) as dispatcher:
            result = await wait_for(
                lambda: dispatcher.admit(make_pod("new", DEMO_NAMESPACE, labels=BATCH_LABELS, requests=DEMO_REQUESTS)),
                until=lambda r: bool(r.warnings),
                interval=0.1,
                message="the warn-only profile to be seen",
            )
        assert result.allowed and qos_of(result) is None  # evaluated, not applied
        [warning] = result.warnings
        assert warning.startswith("warn-only ClusterColocationProfile batch-trial would set ")
        assert result.audit_annotations["mpod-create.koordinator.sh/warn-only-profiles"] == "batch-trial"
        effects = json.loads(result.audit_annotations["mpod-create.koordinator.sh/warn-only-effects"])
        assert 'metadata.labels[koordinator.sh/qosClass]: (none) -> "BE"' in effects["batch-trial"]["changes"]

        report = await wait_for(
            lambda: api.store.list(REPORTS, DEMO_NAMESPACE),
            until=bool,
            interval=0.1,
            message="the background audit's PolicyReport",
        )
        [entry] = report[0]["results"]
        assert (entry["policy"], entry["result"], entry["resources"][0]["name"]) == ("batch-trial", "warn", "old")
        text = await wait_for(
            lambda: metrics(process.health_port),
            until=lambda t: 'colocate_audit_pods{profile="batch-trial",result="warn"} 1.0' in t,
            interval=0.1,
            message="the audit metrics",
        )
        assert 'colocate_warn_only_profile_effects_total{outcome="change",profile="batch-trial"}' in text
        assert "colocate_audit_drifted_pods 1.0" in text
    finally:
        await service.stop()
        process.kill()
