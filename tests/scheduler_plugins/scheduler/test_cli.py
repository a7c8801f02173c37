"""`colocate scheduler simulate|explain` as a user runs them, on the shipped example snapshot."""

import json
import shutil

import pytest

from colocate.main import main
from tests.support.paths import REPO

EXAMPLE = str(REPO / "manifests" / "scheduler" / "example-cluster")
NOW = "2024-05-01T10:01:00Z"


def run(capsys, *argv):
    code = main(["scheduler", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def pod_file(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: api-0, namespace: shop, labels: {koordinator.sh/qosClass: LS}}
spec:
  priority: 9500
  containers:
  - name: api
    resources: {requests: {cpu: "4", memory: 8Gi}, limits: {cpu: "4", memory: 8Gi}}
""")
    return str(path)


def test_simulate_places_pods_in_queue_order_and_reports_utilisation(capsys):
    code, out, _ = run(capsys, "simulate", "--cluster", EXAMPLE, "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 0
    placements = {p["pod"]: p for p in report["placements"]}
    assert [p["pod"] for p in report["placements"]] == [
        "shop/web-1",
        "ml/infer-1",
        "shop/db-0",
        "batch/spark-0",
        "batch/spark-1",
    ]
    assert placements["shop/web-1"]["node"] == "node-1"
    assert placements["batch/spark-0"]["node"] == "node-1"
    assert placements["batch/spark-1"]["node"] is None
    assert placements["ml/infer-1"]["node"] == "gpu-1"  # the only node with GPUs
    assert placements["batch/spark-1"]["reasons"] == {
        "gpu-1": "Insufficient kubernetes.io/batch-cpu, Insufficient kubernetes.io/batch-memory",
        "node-1": "node(s) cpu usage exceed threshold",
        "node-2": "Insufficient kubernetes.io/batch-cpu",
        "node-3": "node(s) nodeMetric expired",
    }
    node1 = next(n for n in report["nodes"] if n["name"] == "node-1")
    assert node1["before"]["kubernetes.io/batch-cpu"] == 0
    assert node1["after"]["kubernetes.io/batch-cpu"] == 30.0
    assert report["summary"]["scheduled"] == 4


def test_simulate_table_and_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "--cluster", EXAMPLE, "--now", NOW, "--progress")
    assert code == 0
    assert "shop/web-1     node-1" in out
    assert "5/5" in err


def test_explain_json_shape(capsys, pod_file):
    code, out, _ = run(capsys, "explain", "--cluster", EXAMPLE, "--pod", pod_file, "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert report["pod"] == "shop/api-0"
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["node-3"]["feasible"] is False
    assert nodes["node-3"]["filters"] == [
        {"plugin": "NodeResourcesFit", "code": "Success", "reasons": []},
        {"plugin": "LoadAwareScheduling", "code": "Unschedulable", "reasons": ["node(s) nodeMetric expired"]},
        {"plugin": "Reservation", "code": "Skip", "reasons": []},  # no reservation in the example cluster
    ]
    assert nodes["node-3"]["scores"] == [] and nodes["node-3"]["total"] is None
    for name in ("node-1", "node-2"):
        node = nodes[name]
        assert node["feasible"] is True
        assert [s["plugin"] for s in node["scores"]] == ["LoadAwareScheduling", "NodeResourcesFit"]
        assert node["total"] == sum(s["normalized"] * s["weight"] for s in node["scores"])
    best = max(("node-1", "node-2"), key=lambda n: (nodes[n]["total"], n[::-1]))
    assert report["selected"] == best


def test_explain_now_decides_metric_expiry(capsys, pod_file):
    _, out, _ = run(
        capsys, "explain", "--cluster", EXAMPLE, "--pod", pod_file, "--now", "2024-05-01T09:51:00Z", "-o", "json"
    )
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["node-3"]["feasible"] is True  # its metric is 60s old at this time


def test_explain_exits_1_when_no_node_fits(capsys, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text(
        "kind: Pod\nmetadata: {name: huge}\nspec: {containers: [{name: c, resources: {requests: {cpu: '64'}}}]}\n"
    )
    code, out, _ = run(capsys, "explain", "--cluster", EXAMPLE, "--pod", str(path), "--now", NOW)
    assert code == 1
    assert "selected: -" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["simulate", "--cluster", "/nonexistent"], "not a directory"),
        (["simulate", "--cluster", EXAMPLE, "--now", "yesterday"], "--now"),
        (["explain", "--cluster", EXAMPLE, "--pod", EXAMPLE + "/nodes.yaml"], "expected exactly one Pod"),
        (["extender", "--kubeconfig", "/nonexistent"], "--kubeconfig /nonexistent: no such file"),
    ],
)
def test_bad_input_exits_2_with_a_message(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err


def test_bad_config_names_the_field(capsys, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "profiles:\n- pluginConfig:\n  - name: LoadAwareScheduling\n    args: {usageThresholds: {cpu: 300}}\n"
    )
    code, _, err = run(capsys, "simulate", "--cluster", EXAMPLE, "--config", str(cfg))
    assert code == 2
    assert "profiles[0].pluginConfig[0].args.usageThresholds.cpu: must be in [0, 100]" in err


def test_extender_without_cluster_or_kubeconfig_outside_a_pod_says_what_to_give(capsys, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = run(capsys, "extender")
    assert code == 2
    assert "no cluster to read" in err and "--kubeconfig FILE" in err


def test_extender_takes_a_snapshot_or_an_api_server_not_both(capsys):
    code, _, err = run(capsys, "extender", "--cluster", EXAMPLE, "--kubeconfig", "/k")
    assert code == 2
    assert "not allowed with argument" in err


def test_simulate_shows_a_reservation_consumed_by_its_owner(capsys):
    example = str(REPO / "manifests" / "scheduler" / "examples" / "reservation")
    code, out, _ = run(capsys, "simulate", "--cluster", example, "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 0
    placements = {p["pod"]: p for p in report["placements"]}
    assert placements["Reservation/r-db"]["node"] == placements["shop/db-0"]["node"]
    assert placements["shop/db-0"]["reservation"] == "r-db"
    assert placements["shop/web-0"] == {**placements["shop/web-0"], "node": "node-2", "reservation": "r-web"}
    assert placements["shop/other-0"]["node"] == "node-1" and "reservation" not in placements["shop/other-0"]
    rows = {r["name"]: r for r in report["reservations"]}
    assert rows["r-web"] == {
        "name": "r-web",
        "node": "node-2",
        "phase": "Succeeded",
        "holding": False,
        "owners": ["shop/web-0"],
    }


@pytest.mark.parametrize("example, bound", [("gang-fits", 9), ("gang-does-not-fit", 0)])
def test_simulate_places_a_gang_of_one_driver_and_eight_executors_whole_or_not_at_all(capsys, example, bound):
    code, out, _ = run(
        capsys,
        "simulate",
        "--cluster",
        str(REPO / "manifests" / "scheduler" / "examples" / example),
        "--now",
        NOW,
        "-o",
        "json",
    )
    report = json.loads(out)
    assert code == 0 and report["summary"]["scheduled"] == bound and report["summary"]["pods"] == 9
    waited = [p for p in report["placements"] if p.get("waitedOnPermit") == "Coscheduling"]
    assert len(waited) == 8  # every member but the one that completes (or breaks) the gang waited


def test_explain_names_the_nodes_holding_a_reservation_the_pod_may_use(capsys, tmp_path):
    path = tmp_path / "owner.yaml"
    path.write_text("""
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec:
  containers: [{name: main, resources: {requests: {cpu: "6", memory: 8Gi}}}]
""")
    example = str(REPO / "manifests" / "scheduler" / "examples" / "reservation")
    code, out, _ = run(capsys, "explain", "--cluster", example, "--pod", str(path), "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["reservationNodes"] == ["node-2"] and report["selected"] == "node-2"


def test_simulate_warns_when_the_clock_ages_the_snapshot_and_names_the_now_that_replays_it(capsys):
    code, _, err = run(capsys, "simulate", "--cluster", EXAMPLE, "-o", "json")
    assert code == 0
    lines = err.splitlines()
    assert lines[0].startswith("warning: 3 of 3 NodeMetrics are older than nodeMetricExpirationSeconds (180s) at ")
    assert lines[-1] == "warning: replaying a snapshot? pass --now 2024-05-01T10:00:00Z (its newest NodeMetric)"
    code, _, err = run(capsys, "simulate", "--cluster", EXAMPLE, "--now", "2024-05-01T10:00:30Z", "-o", "json")
    assert code == 0 and err == (  # node-3's metric is 10 minutes old in the example, on purpose
        "warning: 1 of 3 NodeMetrics are older than nodeMetricExpirationSeconds (180s) at 2024-05-01T10:00:30Z: "
        "their nodes are scheduled as if they had no usage data\n"
    )


def test_the_reservation_example_says_which_now_it_needs_and_warns_without_it(capsys):
    example = REPO / "manifests" / "scheduler" / "examples" / "reservation"
    header = (example / "cluster.yaml").read_text().splitlines()[0]
    now = header.split("--now ")[1].split("`")[0]
    code, out, err = run(capsys, "simulate", "--cluster", str(example), "--now", now, "-o", "json")
    assert code == 0 and err == ""
    assert {r["phase"] for r in json.loads(out)["reservations"]} == {"Succeeded"}
    code, out, err = run(capsys, "simulate", "--cluster", str(example), "-o", "json")
    assert "warning: 2 Reservation(s) expired before " in err and "r-db (at 2024-05-02T09:00:00Z)" in err
    assert {r["phase"] for r in json.loads(out)["reservations"]} == {"Failed"}


def test_simulate_without_nodes_says_so_and_exits_2(capsys, tmp_path):
    (tmp_path / "pods.yaml").write_text((REPO / "manifests" / "samples" / "batch-pod.yaml").read_text())
    code, out, err = run(capsys, "simulate", "--cluster", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"error: --cluster {tmp_path}: no Nodes: there is nothing to schedule the pods onto\n"


async def test_simulate_and_explain_list_the_cluster_through_a_kubeconfig(capsys, api, kubeconfig, pod_file):
    import asyncio

    from colocate.cluster.files import read_manifest_file

    for path in sorted((REPO / "manifests" / "scheduler" / "example-cluster").glob("*.yaml")):
        for obj in read_manifest_file(path):
            api.apply(obj)
    argv = ["scheduler", "simulate", "--kubeconfig", str(kubeconfig), "--now", NOW, "-o", "json"]
    code = await asyncio.to_thread(main, argv)
    from_api = json.loads(capsys.readouterr().out)
    assert code == 0
    from_dir = json.loads(run(capsys, "simulate", "--cluster", EXAMPLE, "--now", NOW, "-o", "json")[1])
    assert [p["node"] for p in from_api["placements"]] == [p["node"] for p in from_dir["placements"]]
    argv = ["scheduler", "explain", "--kubeconfig", str(kubeconfig), "--now", NOW, "--pod", pod_file, "-o", "json"]
    code = await asyncio.to_thread(main, argv)
    assert code == 0 and json.loads(capsys.readouterr().out)["selected"]


def test_explain_lists_only_the_filters_that_refused_a_node_under_filter_failures(capsys, pod_file):
    code, out, _ = run(capsys, "explain", "--cluster", EXAMPLE, "--pod", pod_file, "--now", NOW)
    rows = {line.split()[0]: line for line in out.splitlines()[2:6]}
    assert code == 0 and "Skip" not in out
    assert rows["node-1"].endswith("  -")
    assert rows["node-3"].endswith("LoadAwareScheduling: Unschedulable (node(s) nodeMetric expired)")


def test_the_documented_preemption_example_evicts_around_the_budget(capsys):
    """docs/scheduler.md's `explain` of `examples/preemption`: the prod pod would evict train-b-1
    and free-0 on node-1, and keeps train-a-0, whose PodDisruptionBudget allows no disruption."""
    examples = REPO / "manifests" / "scheduler" / "examples"
    code, out, _ = run(
        capsys,
        "explain",
        "--cluster",
        str(examples / "preemption"),
        "--pod",
        str(examples / "preemption-pod.yaml"),
        "-o",
        "json",
    )
    (preemption,) = json.loads(out)["preemption"]
    assert code == 1 and preemption["nominatedNode"] == "node-1"  # 1: no node fits without preempting
    (candidate,) = [c for c in preemption["candidates"] if c["node"] == "node-1"]
    assert [v["pod"] for v in candidate["victims"]] == ["ml/train-b-1", "ml/free-0"]
    assert "ml/train-a-0" in {r["pod"] for r in candidate["reprieved"]}


def test_simulate_with_an_unreadable_node_metric_warns_and_schedules_its_node_without_usage(capsys, caplog, tmp_path):
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE, cluster)
    metrics = cluster / "nodemetrics.yaml"
    metrics.write_text(metrics.read_text().replace('cpu: "12"', 'cpu: "twelve"', 1))
    code, out, err = run(capsys, "simulate", "--cluster", str(cluster), "--now", NOW, "-o", "json")
    assert code == 0 and "Traceback" not in err  # it was, from the clock check
    assert "NodeMetric node-1 cannot be read" in caplog.text and "'twelve'" in caplog.text
    assert len(json.loads(out)["placements"]) == 5
