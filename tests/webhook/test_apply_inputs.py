"""`colocate apply -f` reads like kubectl, writes back in the shape it read, and reads a live cluster."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.main import main
from tests.support.apiserver import ApiServer
from tests.support.builders import make_profile
from tests.support.paths import REPO

CLUSTER = REPO / "manifests" / "cluster"
BATCH_POD = REPO / "manifests" / "samples" / "batch-pod.yaml"


def pod(name: str, **labels: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(BATCH_POD.read_text())
    obj["metadata"]["name"] = name
    obj["metadata"]["labels"].update(labels)
    return obj


def run(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["apply", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def qos(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["labels"].get("koordinator.sh/qosClass"))


def test_a_multi_document_file_gives_every_object_back_as_documents(capsys, tmp_path: Path) -> None:
    source = tmp_path / "pods.yaml"
    source.write_text(yaml.safe_dump_all([pod("a"), pod("b")]))
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", source, "-o", "yaml")
    assert code == 0 and err == ""
    assert [(o["metadata"]["name"], qos(o)) for o in yaml.safe_load_all(out)] == [("a", "BE"), ("b", "BE")]
    code, out, _ = run(capsys, "--cluster", CLUSTER, "-f", source)  # JSON: one List, as kubectl prints several
    listed = json.loads(out)
    assert listed["kind"] == "List" and [o["metadata"]["name"] for o in listed["items"]] == ["a", "b"]


def test_a_list_stays_a_list(capsys, tmp_path: Path) -> None:
    source = tmp_path / "list.json"
    source.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [pod("a")]}))
    code, out, _ = run(capsys, "--cluster", CLUSTER, "-f", source)
    listed = json.loads(out)
    assert code == 0 and listed["kind"] == "List" and [qos(o) for o in listed["items"]] == ["BE"]


def test_a_directory_and_several_f_flags(capsys, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.yaml").write_text(yaml.safe_dump(pod("a")))
    (tmp_path / "in" / "b.json").write_text(json.dumps(pod("b")))
    code, out, _ = run(capsys, "--cluster", CLUSTER, "-f", tmp_path / "in", "-f", BATCH_POD, "-o", "yaml")
    names = [o["metadata"]["name"] for o in yaml.safe_load_all(out)]
    assert code == 0 and names == ["a", "b", "spark-executor-1"]


def test_one_denied_object_exits_1_and_the_others_are_still_printed(capsys, tmp_path: Path) -> None:
    bad = pod("bad", **{"koordinator.sh/qosClass": "LSR"})
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}
    bad["metadata"]["labels"].pop("koordinator.sh/enable-colocation")
    source = tmp_path / "pods.yaml"
    source.write_text(yaml.safe_dump_all([pod("good"), bad]))
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", source, "-o", "yaml")
    assert code == 1 and [o["metadata"]["name"] for o in yaml.safe_load_all(out)] == ["good"]
    assert "Pod colocation-demo/bad: denied by" in err


def test_output_piped_into_scheduler_explain(capsys, monkeypatch) -> None:
    code, out, _ = run(capsys, "--cluster", CLUSTER, "-f", REPO / "manifests/scheduler/example-pod.yaml")
    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    code = main(
        [
            "scheduler",
            "explain",
            "--cluster",
            str(REPO / "manifests/scheduler/example-cluster"),
            "--pod",
            "-",
            "--now",
            "2024-01-01T00:00:00Z",
            "-o",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["selected"]


def test_a_typo_in_a_profile_is_refused_once_and_no_longer_matches_every_pod(capsys, tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(CLUSTER, state)
    (state / "typo.yaml").write_text(
        yaml.safe_dump(
            make_profile(
                "typo",
                selector={"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]},
                qosclass="BE",
                priorityClassName="koord-prod",
                lables={"a": "b"},
            )
        )
    )
    code, out, err = run(capsys, "--cluster", state, "-f", BATCH_POD, "--explain")
    assert code == 0
    assert err.count("ClusterColocationProfile 'typo' is invalid, not used") == 1
    assert 'spec.qosclass: unknown field (did you mean "qosClass"?)' in err
    assert "matched profiles, in the order applied: colocation-profile-example\n" in err
    assert json.loads(out)["spec"]["priorityClassName"] == "koord-batch"


def test_strict_makes_an_invalid_profile_exit_2_with_nothing_on_stdout(capsys, tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(CLUSTER, state)
    (state / "typo.yaml").write_text(yaml.safe_dump(make_profile("typo", qosclass="BE")))
    code, out, err = run(capsys, "--cluster", state, "-f", BATCH_POD, "--strict")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {state / 'typo.yaml'}: ClusterColocationProfile 'typo' is invalid, not used: ")
    code, out, _ = run(capsys, "--cluster", CLUSTER, "-f", BATCH_POD, "--strict")
    assert code == 0 and json.loads(out)["spec"]["priorityClassName"] == "koord-batch"


def test_a_pod_in_a_namespace_the_state_lacks_is_a_warning_with_its_name(capsys, tmp_path: Path) -> None:
    elsewhere = pod("a")
    elsewhere["metadata"]["namespace"] = "nowhere"
    source = tmp_path / "pod.yaml"
    source.write_text(yaml.safe_dump(elsewhere))
    code, _, err = run(capsys, "--cluster", CLUSTER, "-f", source)
    assert code == 0 and err.count("warning: namespace 'nowhere' is not in --cluster") == 1


async def test_apply_reads_profiles_namespaces_and_priority_classes_from_the_api_server(
    api: ApiServer, kubeconfig: Path, capsys
) -> None:
    for obj in yaml.safe_load_all((CLUSTER / "profiles.yaml").read_text()):
        api.apply(obj)
    for path in ("namespaces.yaml", "priorityclasses.yaml"):
        for obj in yaml.safe_load_all((CLUSTER / path).read_text()):
            if obj:
                api.apply(obj)
    argv = ["apply", "--kubeconfig", str(kubeconfig), "--context", "stand-in", "-f", str(BATCH_POD)]
    code = await asyncio.to_thread(main, argv)
    admitted = json.loads(capsys.readouterr().out)
    assert code == 0 and qos(admitted) == "BE" and admitted["spec"]["priority"] == 5000


def test_apply_against_an_unreachable_api_server_is_one_line_and_exit_2(capsys, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "x",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    code, out, err = run(capsys, "--kubeconfig", kubeconfig, "-f", BATCH_POD)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("error: listing ") and "cannot reach the API server at 127.0.0.1:9" in err


def test_the_missing_namespace_warning_says_what_apply_then_does(capsys, tmp_path: Path) -> None:
    """An unknown namespace's labels never rule a profile out (policies.admission.profile_matching):
    the warning must say that, not that the profile is judged against no labels."""
    batch = yaml.safe_load(BATCH_POD.read_text())
    batch["metadata"]["namespace"] = "nowhere"  # not in the state; the profile selects namespaces by label
    source = tmp_path / "pod.yaml"
    source.write_text(yaml.safe_dump(batch))
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", source, "-o", "json")
    assert code == 0 and json.loads(out)["spec"]["priorityClassName"] == "koord-batch"  # the profile applied
    (warning,) = [line for line in err.splitlines() if line.startswith("warning: namespace 'nowhere'")]
    assert "namespaceSelectors are not checked" in warning and "without labels" not in warning
