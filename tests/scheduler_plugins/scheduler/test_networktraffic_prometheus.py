"""NetworkTraffic against a real Prometheus (Debian's `prometheus` package), loaded with known
samples through `promtool tsdb create-blocks-from openmetrics`. Skipped only when the binaries
are missing."""

import shutil
import subprocess
import time
import urllib.request

import pytest

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import NodeScore
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.plugins.networktraffic import NetworkTraffic, parse_args
from scheduler_plugins.scheduler.podinfo import PodInfo
from tests.support.builders import make_node, make_pod
from tests.support.cluster import free_port
from tests.support.wait import wait_for_sync

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    not (PROMETHEUS and PROMTOOL), reason="prometheus/promtool not installed (apt-get install -y prometheus)"
)
STEP, SAMPLES = 15, 40  # 10 minutes of samples every 15 s
READY_TIMEOUT_SECONDS = 60
PER_SAMPLE = {("node-a", "ens192"): 1000, ("node-b", "ens192"): 3000, ("node-c", "eth0"): 999999}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    root = tmp_path_factory.mktemp("prom")
    start = (int(time.time()) // 3600 - 2) * 3600  # two hours ago, well inside retention
    lines = ["# TYPE node_network_receive_bytes_total gauge"]
    for i in range(SAMPLES):
        for (node, device), value in PER_SAMPLE.items():
            lines.append(
                f'node_network_receive_bytes_total{{kubernetes_node="{node}",device="{device}"}} '
                f"{value} {start + i * STEP}"
            )
    lines.append("# EOF")
    (root / "samples.om").write_text("\n".join(lines) + "\n")
    data = root / "data"
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(root / "samples.om"), str(data)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    (root / "prometheus.yml").write_text("global: {}\n")
    port = free_port()
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={root / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=30d",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"prometheus did not become ready (exit code {proc.poll()})")
        with urllib.request.urlopen(f"{address}/-/ready", timeout=2) as resp:
            return bool(resp.status == 200)

    try:
        wait_for_sync(
            ready, timeout=READY_TIMEOUT_SECONDS, interval=0.2, ignore=(OSError,), message="prometheus to become ready"
        )
        yield address, start + (SAMPLES - 1) * STEP
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_scores_from_real_prometheus(prometheus):
    address, at = prometheus
    plugin = NetworkTraffic(
        parse_args({"prometheusAddress": address, "networkInterface": "ens192", "timeRangeInMinutes": 3}, "args"),
        Handle(cluster=None, client=None, clock=lambda: float(at)),
    )
    pod, state = PodInfo(make_pod()), CycleState()
    raw = {}
    for name in ("node-a", "node-b", "node-c"):
        value, status = plugin.score(state, pod, NodeInfo(make_node(name, cpu="32", memory="128Gi")))
        assert status.is_success, status
        raw[name] = value
    # a 3m window at a 15 s step holds 12 or 13 samples depending on range boundaries
    assert raw["node-a"] in (12 * 1000, 13 * 1000)
    assert raw["node-b"] == 3 * raw["node-a"]
    assert raw["node-c"] == 0  # its traffic is on eth0, not the configured interface
    entries = [NodeScore(n, v) for n, v in raw.items()]
    plugin.normalize_score(state, pod, entries)
    assert {e.name: e.score for e in entries} == {"node-a": 67, "node-b": 0, "node-c": 100}


def test_window_with_no_samples_scores_every_node_100(prometheus):
    address, at = prometheus
    plugin = NetworkTraffic(
        parse_args({"prometheusAddress": address}, "args"),
        Handle(cluster=None, client=None, clock=lambda: float(at + 3600)),
    )
    pod, state = PodInfo(make_pod()), CycleState()
    entries = []
    for name in ("node-a", "node-b"):
        value, status = plugin.score(state, pod, NodeInfo(make_node(name, cpu="32", memory="128Gi")))
        assert status.is_success and value == 0
        entries.append(NodeScore(name, value))
    plugin.normalize_score(state, pod, entries)
    assert [e.score for e in entries] == [100, 100]
