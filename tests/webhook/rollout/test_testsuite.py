"""`colocate test`: the sample suite passes (so CI runs it), a wrong expectation fails the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from colocate.main import main
from tests.support.paths import REPO

SAMPLE = REPO / "manifests" / "samples" / "tests"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = main(["test", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A copy of the sample suite, with the files it borrows from manifests/ beside it."""
    root = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests" / "cluster", root / "cluster")
    shutil.copytree(REPO / "manifests" / "samples", root / "samples")
    return root / "samples" / "tests"


def edit(suite: Path, change: dict[str, object], case: int | None = None) -> None:
    path = suite / "colocate-test.yaml"
    document = yaml.safe_load(path.read_text())
    (document["results"][case] if case is not None else document).update(change)
    path.write_text(yaml.safe_dump(document))


def test_the_sample_suite_passes_as_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, SAMPLE)
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[0].split() == ["#", "TEST", "RESOURCE", "EXPECTED", "RESULT", "REASON"]
    assert [line.split()[4] for line in lines[1:5]] == ["PASS"] * 4
    assert lines[-1] == "4 of 4 case(s) passed"


def test_json_output_lists_every_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, SAMPLE, "-o", "json")
    report = json.loads(out)
    assert code == 0 and (report["passed"], report["failed"]) == (4, 0)
    assert {r["resource"]: r["expected"] for r in report["results"]} == {
        "spark-executor-1": "expected/spark-executor-1.yaml",
        "checkout-1": "expected/checkout-1.yaml",
        "plain-1": "expected/plain-1.yaml",
        "web-1": "denied",
    }


def test_a_wrong_patched_resource_fails_and_names_the_difference(
    capsys: pytest.CaptureFixture[str], suite: Path
) -> None:
    expected = suite / "expected" / "spark-executor-1.yaml"
    pod = yaml.safe_load(expected.read_text())
    pod["metadata"]["labels"]["koordinator.sh/qosClass"] = "LS"
    expected.write_text(yaml.safe_dump(pod))
    code, out, _ = run(capsys, suite, "-o", "json")
    report = json.loads(out)
    assert code == 1 and (report["passed"], report["failed"]) == (3, 1)
    [failed] = [r for r in report["results"] if r["result"] == "fail"]
    assert failed["resource"] == "spark-executor-1"
    assert failed["reason"] == (
        "differs from expected/spark-executor-1.yaml (expected -> admitted): "
        'metadata.labels[koordinator.sh/qosClass]: "LS" -> "BE"'
    )


def test_a_field_the_chain_left_out_is_shown_as_none(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    expected = suite / "expected" / "plain-1.yaml"
    pod = yaml.safe_load(expected.read_text())
    pod["metadata"].setdefault("labels", {})["team"] = "data"
    expected.write_text(yaml.safe_dump(pod))
    code, out, _ = run(capsys, suite, "-o", "json")
    [failed] = [r for r in json.loads(out)["results"] if r["result"] == "fail"]
    assert code == 1 and failed["reason"].endswith('metadata.labels.team: "data" -> (none)')


def test_a_case_asserts_which_profiles_matched(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"matchedProfiles": ["latency-sensitive-example"]}, case=0)
    edit(suite, {"matchedProfiles": ["colocation-profile-example"]}, case=2)
    code, out, _ = run(capsys, suite, "-o", "json")
    failed = {r["resource"]: r["reason"] for r in json.loads(out)["results"] if r["result"] == "fail"}
    assert code == 1
    assert failed == {
        "spark-executor-1": "matched profiles colocation-profile-example, expected latency-sensitive-example",
        "plain-1": "matched profiles (none), expected colocation-profile-example",
    }


def test_result_admitted_passes_whatever_the_patch(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    document = yaml.safe_load((suite / "colocate-test.yaml").read_text())
    document["results"][0] = {"resource": "spark-executor-1", "result": "admitted"}
    (suite / "colocate-test.yaml").write_text(yaml.safe_dump(document))
    code, out, _ = run(capsys, suite, "-o", "json")
    assert code == 0 and json.loads(out)["results"][0]["reason"] == "admitted"


def test_a_missing_warning_fails(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"warnings": ["checkout-priority-trial would set spec.priority"]}, case=1)
    code, out, _ = run(capsys, suite, "-o", "json")
    [failed] = [r for r in json.loads(out)["results"] if r["result"] == "fail"]
    assert code == 1 and failed["resource"] == "checkout-1"
    assert failed["reason"].startswith("no warning contains 'checkout-priority-trial would set spec.priority'")


def test_a_denial_with_another_message_fails(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"message": "must have whole CPUs"}, case=3)
    code, out, _ = run(capsys, suite)
    assert code == 1
    assert "FAIL" in out.splitlines()[4] and "expected a message containing 'must have whole CPUs'" in out
    assert out.splitlines()[-1] == "3 of 4 case(s) passed"


def test_an_admission_where_a_denial_is_expected_fails(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"result": "denied", "message": ""}, case=2)
    del_patched = yaml.safe_load((suite / "colocate-test.yaml").read_text())
    del del_patched["results"][2]["patchedResource"]
    (suite / "colocate-test.yaml").write_text(yaml.safe_dump(del_patched))
    code, out, _ = run(capsys, suite, "-o", "json")
    [failed] = [r for r in json.loads(out)["results"] if r["result"] == "fail"]
    assert code == 1 and failed["resource"] == "plain-1" and failed["reason"] == "admitted, expected a denial"


def test_a_denial_where_admission_is_expected_fails(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    document = yaml.safe_load((suite / "colocate-test.yaml").read_text())
    document["results"][3] = {"resource": "web-1"}
    (suite / "colocate-test.yaml").write_text(yaml.safe_dump(document))
    code, out, _ = run(capsys, suite, "-o", "json")
    [failed] = [r for r in json.loads(out)["results"] if r["result"] == "fail"]
    assert code == 1 and failed["reason"].startswith("denied by /validate-pod (code 400): ")


@pytest.mark.parametrize(
    "change, case, message",
    [
        ({"result": "maybe"}, 0, 'results[0].result: Unsupported value: "maybe"'),
        ({"resource": "nobody"}, 1, "results[1].resource: no resource named 'nobody'"),
        ({"patchedResource": "expected/missing.yaml"}, 0, "results[0].patchedResource: "),
        ({"operation": "PATCH"}, 0, "results[0].operation: must be one of CREATE, UPDATE, DELETE"),
        ({"profiles": ["nowhere.yaml"]}, None, "profiles[0]: "),
        ({"results": []}, None, "results: Required value"),
    ],
)
def test_a_suite_that_cannot_run_is_a_usage_error_naming_the_field(
    capsys: pytest.CaptureFixture[str], suite: Path, change: dict[str, object], case: int | None, message: str
) -> None:
    edit(suite, change, case)
    code, out, err = run(capsys, suite)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {suite / 'colocate-test.yaml'}: {message}")


def test_a_profile_that_does_not_parse_is_a_usage_error(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    profiles = suite.parent.parent / "cluster" / "profiles.yaml"
    profiles.write_text(profiles.read_text().replace("qosClass: LS\n", "qosClass: Gold\n"))
    code, _, err = run(capsys, suite)
    assert code == 2 and "latency-sensitive-example" in err and "spec.qosClass" in err


def test_suites_are_found_below_the_directory(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    code, out, _ = run(capsys, suite.parent.parent)
    assert code == 0 and out.splitlines()[-1] == "4 of 4 case(s) passed"
    code, _, err = run(capsys, suite / "expected")
    assert code == 2 and "no colocate-test.yaml found" in err


def test_a_profile_field_the_crd_does_not_know_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], suite: Path
) -> None:
    trial = suite / "warn-only-profile.yaml"
    trial.write_text(trial.read_text().replace("koordinatorPriority: 1500", "koordinatorpriority: 1500"))
    code, _, err = run(capsys, suite)
    assert code == 2 and "checkout-priority-trial" in err and "koordinatorpriority" in err
