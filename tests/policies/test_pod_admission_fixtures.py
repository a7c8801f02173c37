"""Koordinator-style cases as YAML fixtures: cluster state, a pod, and the pod (or denial) expected."""

from pathlib import Path

import pytest
import yaml

from policies.admission.snapshot import ClusterSnapshot
from tests.support.builders import KOORD_PRIORITY_CLASSES
from webhook.chain import request_for, run_chain
from webhook.registry import default_routes

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "pod_admission").glob("*.yaml"))


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_pod_admission_case(fixture):
    case = yaml.safe_load(fixture.read_text())
    snapshot = ClusterSnapshot.from_objects(("fixture", o) for o in [*KOORD_PRIORITY_CLASSES, *case["cluster"]])
    registry = default_routes()
    result = run_chain(request_for(case["pod"], registry), registry, snapshot, rand_int=lambda n: 99)
    if "denied" in case:
        assert (result.allowed, result.denied_by, result.code, result.message) == (
            False,
            case["denied"]["path"],
            case["denied"]["code"],
            case["denied"]["message"],
        )
    else:
        assert result.allowed, result.message
        assert result.object == case["expected"]
