"""A profile's patch may set anything on a pod, as Koordinator allows, and that stays the default;
`apply --explain` and `audit` name the security-sensitive fields it sets, and the opt-in
`--refuse-sensitive-patches` refuses such profiles unless annotated `colocate.io/sensitive-patch:
allow`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from policies.admission.patch_risks import sensitive_fields
from tests.support.builders import make_profile
from tests.support.paths import REPO

CLUSTER = REPO / "manifests" / "cluster"
POD = REPO / "manifests" / "samples" / "batch-pod.yaml"
SELECTS_POD = {"matchLabels": {"koordinator.sh/enable-colocation": "true"}}
ROOTING = {
    "metadata": {"namespace": "kube-system"},
    "spec": {
        "hostNetwork": True,
        "nodeName": "master-0",
        "serviceAccountName": "cluster-admin",
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        "containers": [{"name": "main", "securityContext": {"privileged": True}}],
    },
}
FIELDS = (
    "metadata.namespace",
    "spec.hostNetwork",
    "spec.nodeName",
    "spec.serviceAccountName",
    "spec.volumes[0].hostPath",
    "spec.containers[0].securityContext",
)


def state(tmp_path: Path, annotations: dict[str, str] | None = None) -> Path:
    directory = tmp_path / "state"
    shutil.copytree(CLUSTER, directory)
    profile: dict[str, Any] = make_profile("rooting", selector=SELECTS_POD, patch=ROOTING)
    if annotations:
        profile["metadata"]["annotations"] = annotations
    (directory / "rooting.yaml").write_text(yaml.safe_dump(profile))
    return directory


def test_the_sensitive_fields_of_a_patch() -> None:
    assert sensitive_fields(ROOTING) == FIELDS
    assert sensitive_fields({"spec": {"terminationGracePeriodSeconds": 30}}) == ()


def test_by_default_such_a_profile_applies_and_explain_names_its_fields(tmp_path, capsys) -> None:
    assert main(["apply", "--cluster", str(state(tmp_path)), "-f", str(POD), "--explain"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["spec"]["hostNetwork"] is True  # Koordinator's behaviour stays the default
    assert f"profile/rooting: patches security-sensitive fields: {', '.join(FIELDS)}" in err.splitlines()


def test_audit_names_the_profiles_with_sensitive_patches(tmp_path, capsys) -> None:
    main(["audit", "--cluster", str(state(tmp_path))])
    assert f"profile rooting patches security-sensitive fields: {', '.join(FIELDS)}" in capsys.readouterr().out
    main(["audit", "--cluster", str(state(tmp_path / "json")), "-o", "json"])
    assert json.loads(capsys.readouterr().out)["sensitivePatches"] == {"rooting": list(FIELDS)}


def test_the_guard_refuses_such_a_profile_by_name(tmp_path, capsys) -> None:
    code = main(["apply", "--cluster", str(state(tmp_path)), "-f", str(POD), "--refuse-sensitive-patches"])
    out, err = capsys.readouterr()
    assert code == 0 and "hostNetwork" not in json.loads(out)["spec"]
    assert "rooting" in err and "changes security-sensitive fields (metadata.namespace," in err
    assert "refused by --refuse-sensitive-patches" in err


@pytest.mark.parametrize("value, applied", [("allow", True)])
def test_a_reviewed_profile_passes_the_guard(tmp_path, capsys, value: str, applied: bool) -> None:
    directory = state(tmp_path, {"colocate.io/sensitive-patch": value})
    assert main(["apply", "--cluster", str(directory), "-f", str(POD), "--refuse-sensitive-patches"]) == 0
    assert json.loads(capsys.readouterr().out)["spec"].get("hostNetwork") is applied


def test_an_unknown_annotation_value_makes_the_profile_invalid(tmp_path, capsys) -> None:
    directory = state(tmp_path, {"colocate.io/sensitive-patch": "yes-please"})
    main(["apply", "--cluster", str(directory), "-f", str(POD)])
    assert 'Unsupported value: "yes-please"' in capsys.readouterr().err
