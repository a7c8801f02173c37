"""Warn-only profiles: evaluated, never applied; what they would do reaches the client as warnings."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from colocate.main import main
from policies.admission.snapshot import ClusterSnapshot
from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_container, make_namespace, make_pod, make_profile, make_reservation
from tests.webhook.conftest import RunningServer
from webhook.chain import request_for, run_chain
from webhook.registry import default_routes
from webhook.rollout.audit import audit

REGISTRY = default_routes()
WARN = {"colocate.io/enforcement": "warn"}
BATCH_WARN = make_profile(
    "batch-trial",
    metadata_annotations=WARN,
    selector={"matchLabels": {"app": "spark"}},
    qosClass="BE",
    priorityClassName="koord-batch",
    labels={"team": "data"},
)
OWNER = make_profile("owner", selector={"matchLabels": {"app": "spark"}}, labels={"owner": "analytics"})
POD = make_pod(
    "spark-1", "default", labels={"app": "spark"}, containers=[make_container(requests={"cpu": "1", "memory": "1Gi"})]
)


def snapshot(*profiles: dict[str, Any]) -> ClusterSnapshot:
    return make_snapshot(*profiles, make_namespace("default"))


async def mutate(server: RunningServer, pod: dict[str, Any]) -> dict[str, Any]:
    response = await server.post("/mutate-pod", admission_review(pod))
    assert response.status == 200
    answer: dict[str, Any] = (await response.json())["response"]
    return answer


def patched(pod: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    operations = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    result: dict[str, Any] = jsonpatch.apply_patch(pod, operations)
    return result


async def test_warnings_and_audit_annotations_reach_an_https_client_and_nothing_is_applied(
    server: RunningServer,
) -> None:
    server.publish(snapshot(BATCH_WARN, OWNER))
    response = await mutate(server, POD)
    enforced_only = run_chain(request_for(POD, REGISTRY), REGISTRY, snapshot(OWNER))
    assert response["allowed"] is True and patched(POD, response) == enforced_only.object
    [warning] = response["warnings"]
    assert warning.startswith(
        "warn-only ClusterColocationProfile batch-trial would set metadata.labels.team: "
        '(none) -> "data", metadata.labels[koordinator.sh/qosClass]: (none) -> "BE", '
    )
    assert len(warning) <= 256
    annotations = response["auditAnnotations"]
    assert annotations["warn-only-profiles"] == "batch-trial"
    changes = json.loads(annotations["warn-only-effects"])["batch-trial"]["changes"]
    assert 'spec.priorityClassName: (none) -> "koord-batch"' in changes
    assert 'spec.containers[0].resources.requests.cpu: "1" -> (none)' in changes
    metrics = await (await server.session.get(server.probes + "/metrics")).text()
    assert 'colocate_warn_only_profile_effects_total{outcome="change",profile="batch-trial"} 1.0' in metrics
    assert 'colocate_profile_matches_total{profile="batch-trial"}' not in metrics


async def test_a_warn_only_profile_alone_gives_no_patch(server: RunningServer) -> None:
    server.publish(snapshot(BATCH_WARN))
    response = await mutate(server, POD)
    assert response["allowed"] is True and "patch" not in response and len(response["warnings"]) == 1


async def test_a_denial_it_would_cause_is_a_warning(server: RunningServer) -> None:
    missing = make_profile(
        "gold-trial",
        metadata_annotations=WARN,
        selector={"matchLabels": {"app": "spark"}},
        priorityClassName="koord-gold",
    )
    lsr = make_profile(
        "lsr-trial",
        metadata_annotations=WARN,
        selector={"matchLabels": {"app": "spark"}},
        qosClass="LSR",
        priorityClassName="koord-prod",
    )
    server.publish(snapshot(missing, lsr))
    response = await mutate(
        server, make_pod("p", "default", labels={"app": "spark"}, containers=[make_container(requests={"cpu": "500m"})])
    )
    assert response["allowed"] is True and "patch" not in response
    assert response["warnings"] == [
        "warn-only ClusterColocationProfile gold-trial would deny the request: "
        'priorityclasses.scheduling.k8s.io "koord-gold" not found',
        "warn-only ClusterColocationProfile lsr-trial would deny the request: "
        'pod.spec.containers[*].resources.requests: Invalid value: "500m": the requested CPUs of LSR Pod must be '
        "integer",
    ]
    metrics = await (await server.session.get(server.probes + "/metrics")).text()
    assert 'colocate_warn_only_profile_effects_total{outcome="deny",profile="gold-trial"} 1.0' in metrics


def test_no_warning_when_it_would_change_nothing() -> None:
    same = make_profile(
        "same-trial",
        metadata_annotations=WARN,
        selector={"matchLabels": {"app": "spark"}},
        labels={"owner": "analytics"},
    )
    result = run_chain(request_for(POD, REGISTRY), REGISTRY, snapshot(OWNER, same))
    assert result.allowed and result.warnings == []


def test_reservations_get_warnings_too() -> None:
    reservation = make_reservation("r1", labels={"app": "spark"})
    result = run_chain(request_for(reservation, REGISTRY), REGISTRY, snapshot(BATCH_WARN))
    assert result.allowed and result.object == reservation
    assert result.warnings and result.warnings[0].startswith("warn-only ClusterColocationProfile batch-trial")


def test_an_unknown_enforcement_refuses_the_profile() -> None:
    typo = make_profile("typo", metadata_annotations={"colocate.io/enforcement": "warm"}, labels={"x": "y"})
    [problem] = snapshot(typo).problems
    assert problem.message.startswith("ClusterColocationProfile 'typo' is invalid")
    assert problem.message.endswith(
        'metadata.annotations[colocate.io/enforcement]: Unsupported value: "warm": supported values: "enforce", "warn"'
    )


def test_the_audit_reports_a_warn_only_profile_as_warn() -> None:
    admitted = run_chain(request_for(POD, REGISTRY), REGISTRY, snapshot(BATCH_WARN, OWNER))
    assert admitted.object is not None
    report = audit(snapshot(BATCH_WARN, OWNER, {**admitted.object, "status": {"phase": "Running"}}))
    [pod] = report.drifted()
    assert [(r.profile, r.result) for r in pod.results] == [("batch-trial", "warn"), ("owner", "pass")]


def test_apply_prints_the_warnings_as_kubectl_does(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.support.builders import KOORD_PRIORITY_CLASSES

    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "objects.yaml").write_text(
        yaml.safe_dump_all([*KOORD_PRIORITY_CLASSES, BATCH_WARN, make_namespace("default")])
    )
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(POD))
    assert main(["apply", "--cluster", str(tmp_path / "cluster"), "-f", str(tmp_path / "pod.yaml")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == POD
    assert err.splitlines()[-1].startswith("Warning: warn-only ClusterColocationProfile batch-trial would set ")
