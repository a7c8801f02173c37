"""`colocate test` never lets a typo pass, selects cases, updates golden files, scaffolds a suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO
from tests.webhook.rollout.test_testsuite import edit, run
from webhook.rollout.testsuite import METADATA_KEYS, RESULT_KEYS, SUITE_KEYS


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    root = tmp_path / "manifests"
    shutil.copytree(REPO / "manifests" / "cluster", root / "cluster")
    shutil.copytree(REPO / "manifests" / "samples", root / "samples")
    return root / "samples" / "tests"


def misspell(key: str) -> str:
    return key[:-1] if len(key) > 2 else key + "x"


@pytest.mark.parametrize(
    ("key", "meant"),
    [("patchedResorce", "patchedResource"), ("mesage", "message"), ("matchedprofile", "matchedProfiles")],
)
def test_an_unknown_key_in_a_result_is_exit_2_naming_the_file_the_field_and_the_key_meant(
    capsys: pytest.CaptureFixture[str], suite: Path, key: str, meant: str
) -> None:
    edit(suite, {key: "x"}, case=2)
    code, out, err = run(capsys, suite)
    assert (code, out) == (2, "")
    assert err == f'error: {suite / "colocate-test.yaml"}: results[2].{key}: unknown field (did you mean "{meant}"?)\n'


def test_a_key_like_no_known_one_lists_the_supported_keys(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"zzz": "x"}, case=2)
    code, _, err = run(capsys, suite)
    assert code == 2 and err.endswith(f"results[2].zzz: unknown field (supported: {', '.join(RESULT_KEYS)})\n")


def test_every_unknown_field_is_named_in_one_run(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"resorces": []})
    edit(suite, {"mesage": "x"}, case=0)
    edit(suite, {"patchedResorce": "x"}, case=3)
    code, out, err = run(capsys, suite)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err == (
        f"error: {suite / 'colocate-test.yaml'}: ["
        'resorces: unknown field (did you mean "resources"?), '
        'results[0].mesage: unknown field (did you mean "message"?), '
        'results[3].patchedResorce: unknown field (did you mean "patchedResource"?)]\n'
    )


@pytest.mark.parametrize("key", [misspell(k) for k in SUITE_KEYS])
def test_an_unknown_top_level_key_is_exit_2(capsys: pytest.CaptureFixture[str], suite: Path, key: str) -> None:
    edit(suite, {key: []})
    code, _, err = run(capsys, suite)
    assert code == 2 and f"colocate-test.yaml: {key}: unknown field" in err


@pytest.mark.parametrize("key", [misspell(k) for k in METADATA_KEYS])
def test_an_unknown_metadata_key_is_exit_2(capsys: pytest.CaptureFixture[str], suite: Path, key: str) -> None:
    edit(suite, {"metadata": {"name": "x", key: "y"}})
    code, _, err = run(capsys, suite)
    assert code == 2 and f"colocate-test.yaml: metadata.{key}: unknown field" in err


def test_a_case_selector_runs_only_the_matching_cases(capsys: pytest.CaptureFixture[str]) -> None:
    sample = REPO / "manifests" / "samples" / "tests"
    code, out, _ = run(capsys, sample, "--test-case-selector", "test=example-*,resource=*-1", "-o", "json")
    assert code == 0 and '"passed": 4' in out
    code, out, _ = run(capsys, sample, "--test-case-selector", "resource=plain-1")
    assert code == 0 and out.splitlines()[-1] == "1 of 1 case(s) passed"


@pytest.mark.parametrize(
    "selector, message",
    [
        (
            "resorce=plain-1",
            "error: --test-case-selector: 'resorce=plain-1': expected KEY=PATTERN with KEY one of test, resource\n",
        ),
        ("resource=nothing", "error: --test-case-selector 'resource=nothing': no case matches\n"),
    ],
)
def test_a_selector_with_a_typo_or_matching_nothing_is_exit_2(
    capsys: pytest.CaptureFixture[str], selector: str, message: str
) -> None:
    code, out, err = run(capsys, REPO / "manifests" / "samples" / "tests", "--test-case-selector", selector)
    assert (code, out, err) == (2, "", message)


def test_update_rewrites_a_stale_golden_file_keeping_its_header(
    capsys: pytest.CaptureFixture[str], suite: Path
) -> None:
    golden = suite / "expected" / "plain-1.yaml"
    original = golden.read_text()
    stale = yaml.safe_load(original)
    stale["metadata"]["labels"] = {"stale": "yes"}
    golden.write_text(original.splitlines(keepends=True)[0] + yaml.safe_dump(stale))
    code, out, _ = run(capsys, suite)
    assert code == 1 and "differs from expected/plain-1.yaml" in out
    code, out, err = run(capsys, suite, "--update")
    assert code == 0 and out.splitlines()[-1] == "4 of 4 case(s) passed"
    assert err == f"updated {golden}\n"
    assert yaml.safe_load(golden.read_text()) == yaml.safe_load(original)
    assert golden.read_text().startswith("# What the example profiles make of plain-1")


def test_update_leaves_a_wrong_denial_failing(capsys: pytest.CaptureFixture[str], suite: Path) -> None:
    edit(suite, {"message": "not the message"}, case=3)
    code, _, err = run(capsys, suite, "--update")
    assert code == 1 and err == ""


def test_scaffold_writes_a_suite_that_passes_and_never_overwrites_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    directory = tmp_path / "mine"
    directory.mkdir()
    for name in ("cluster/profiles.yaml", "cluster/namespaces.yaml", "cluster/priorityclasses.yaml"):
        shutil.copy(REPO / "manifests" / name, directory)
    for name in ("batch-pod.yaml", "lsr-pod-without-cpu.yaml"):
        shutil.copy(REPO / "manifests" / "samples" / name, directory)
    code, out, err = run(capsys, "--scaffold", directory)
    assert (code, out) == (0, "")
    assert err.startswith(f"wrote {directory / 'colocate-test.yaml'}")
    written = yaml.safe_load((directory / "colocate-test.yaml").read_text())
    assert written["profiles"] == ["profiles.yaml"]
    assert written["cluster"] == ["namespaces.yaml", "priorityclasses.yaml"]
    assert [(r["resource"], r.get("result", "admitted")) for r in written["results"]] == [
        ("spark-executor-1", "admitted"),
        ("web-1", "denied"),
    ]
    code, out, _ = run(capsys, directory)
    assert code == 0 and out.splitlines()[-1] == "2 of 2 case(s) passed"
    code, out, err = run(capsys, "--scaffold", directory)
    assert (code, out) == (2, "") and "already exists" in err
