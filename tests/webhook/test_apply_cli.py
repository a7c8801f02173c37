"""`colocate apply`: the server's chain offline, with its exit codes."""

import io
import json
import shutil

import pytest
import yaml

from colocate.main import main
from tests.support.paths import REPO

CLUSTER = REPO / "manifests" / "cluster"
BATCH_POD = REPO / "manifests" / "samples" / "batch-pod.yaml"


def run(capsys, *args, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["apply", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_admitted_pod_is_printed_as_json(capsys):
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", BATCH_POD)
    assert code == 0 and err == ""
    pod = json.loads(out)
    assert pod["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {
        "kubernetes.io/batch-cpu": "1k",
        "kubernetes.io/batch-memory": "4Gi",
    }


def test_yaml_output_and_stdin(capsys, monkeypatch):
    code, out, _ = run(
        capsys, "--cluster", CLUSTER, "-f", "-", "-o", "yaml", stdin=BATCH_POD.read_text(), monkeypatch=monkeypatch
    )
    assert code == 0 and yaml.safe_load(out)["spec"]["priorityClassName"] == "koord-batch"


def test_explain_names_matched_profiles_and_their_changes(capsys):
    code, _, err = run(capsys, "--cluster", CLUSTER, "-f", BATCH_POD, "--explain")
    assert code == 0
    assert "matched profiles, in the order applied: colocation-profile-example" in err
    assert "profile/colocation-profile-example: 9 change(s)" in err
    assert 'add /metadata/labels/koordinator.sh~1qosClass "BE"' in err
    assert "batch/mid resource rewrite" in err and "plugin/ExtendedResourceSpec" in err


def test_denied_pod_exits_1_with_the_webhook_message(capsys, tmp_path):
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "x", "namespace": "default", "labels": {"koordinator.sh/qosClass": "LSR"}},
                "spec": {"containers": [{"name": "c"}]},
            }
        )
    )
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", pod)
    assert code == 1 and out == ""
    assert "denied by /validate-pod (code 400)" in err
    assert "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass= cannot be used in combination" in err


def test_unknown_priority_class_is_denied_by_the_mutating_step(capsys, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "p.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.koordinator.sh/v1alpha1",
                "kind": "ClusterColocationProfile",
                "metadata": {"name": "p"},
                "spec": {"priorityClassName": "missing"},
            }
        )
    )
    code, _, err = run(capsys, "--cluster", state, "-f", BATCH_POD)
    assert (
        code == 1 and 'denied by /mutate-pod (code 500): priorityclasses.scheduling.k8s.io "missing" not found' in err
    )


def test_update_runs_validation_against_the_old_object(capsys, tmp_path):
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x", "namespace": "default", "labels": {"koordinator.sh/qosClass": "LS"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    old.write_text(yaml.safe_dump(base))
    base["metadata"]["labels"]["koordinator.sh/qosClass"] = "LSE"
    base["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    new.write_text(yaml.safe_dump(base))
    code, _, err = run(capsys, "--cluster", CLUSTER, "-f", new, "--operation", "UPDATE", "--old-object", old)
    assert code == 1 and 'labels.koordinator.sh/qosClass: Invalid value: "LSE": field is immutable' in err
    code, _, _ = run(capsys, "--cluster", CLUSTER, "-f", old, "--operation", "update", "--old-object", old)
    assert code == 0


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not yaml: [", "error:"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", "no webhook admits kind Secret"),
        ("---\n", "bad.yaml: no objects"),
        ("a: 1\n---\nb: 2\n", "no webhook admits kind (none)"),  # several documents are fine; these lack a kind
    ],
)
def test_bad_input_exits_2(capsys, tmp_path, content, fragment):
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    code, out, err = run(capsys, "--cluster", CLUSTER, "-f", bad)
    assert code == 2 and out == "" and fragment in err


def test_missing_file_and_usage_errors_exit_2(capsys, tmp_path):
    assert run(capsys, "--cluster", CLUSTER, "-f", tmp_path / "nope.yaml")[0] == 2
    assert run(capsys, "--cluster", CLUSTER, "-f", BATCH_POD, "--operation", "UPDATE")[0] == 2
    assert main(["apply", "--cluster", str(CLUSTER)]) == 2  # -f is required
    capsys.readouterr()


def test_broken_profile_is_reported_and_the_others_still_apply(capsys, tmp_path):
    state = tmp_path / "state"
    shutil.copytree(CLUSTER, state)
    (state / "broken.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.koordinator.sh/v1alpha1",
                "kind": "ClusterColocationProfile",
                "metadata": {"name": "aaa-broken"},
                "spec": {"qosClass": "Gold"},
            }
        )
    )
    code, out, err = run(capsys, "--cluster", state, "-f", BATCH_POD)
    assert code == 0 and "warning:" in err and "'aaa-broken'" in err and "spec.qosClass" in err
    assert json.loads(out)["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
