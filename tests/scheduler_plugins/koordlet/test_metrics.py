"""Metrics from the machine's files (fake /proc and cgroup trees with the kernel's formats), the
metric cache, and the NodeMetric status in the schema LoadAware reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.metricsadvisor.cache import MetricCache, percentile
from scheduler_plugins.koordlet.metricsadvisor.collector import Collector, usage_from_cache
from scheduler_plugins.koordlet.metricsadvisor.reporter import CollectPolicy, node_metric_status
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from scheduler_plugins.koordlet.states import NodeState
from tests.support.builders import make_node, make_node_slo, make_pod, pod_uid

MEMINFO = """MemTotal:       16000000 kB
MemFree:         1000000 kB
MemAvailable:   12000000 kB
Buffers:          100000 kB
"""
V1_MEMORY_STAT = "cache 1000\nrss 5000\ntotal_cache 1000\ntotal_inactive_file 4096\ntotal_active_file 0\n"
V2_MEMORY_STAT = "anon 5000\nfile 8192\ninactive_file 8192\nactive_file 0\n"
V2_CPU_STAT = "usage_usec {usec}\nuser_usec 1\nsystem_usec 1\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def proc_stat(busy: int, idle: int) -> str:
    # cpu user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


def pod(short: str, qos: str | None = None, **kw: Any) -> dict[str, Any]:
    """The pod `p-<short>`, whose UID is `pod_uid(short)`."""
    p = make_pod(f"p-{short}", node="n1", qos=qos, **kw)
    p["metadata"]["uid"] = pod_uid(short)
    return p


def state(*pods: dict[str, Any], slo: dict[str, Any] | None = None) -> NodeState:
    return NodeState(make_node("n1"), NodeSLO.parse(slo) if slo else None, None, tuple(pods))


@pytest.mark.parametrize(
    "version, driver", [(CgroupVersion.V1, CgroupDriver.CGROUPFS), (CgroupVersion.V2, CgroupDriver.SYSTEMD)]
)
def test_node_and_pod_usage_from_proc_and_cgroup_files(
    tmp_path: Path, version: CgroupVersion, driver: CgroupDriver
) -> None:
    layout = CgroupLayout(tmp_path / "cg", version, driver)
    be = pod("u-1", qos="BE")
    be_dir = layout.pod_dir("BestEffort", pod_uid("u-1"))
    cache = MetricCache()
    collector = Collector(layout, cache, proc=tmp_path / "proc", cpu_count=lambda: 4)

    def files(busy: int, idle: int, cpu_ns: int) -> None:
        write(tmp_path / "proc", {"stat": proc_stat(busy, idle), "meminfo": MEMINFO})
        if version is CgroupVersion.V1:
            write(
                tmp_path / "cg",
                {
                    f"cpuacct/{be_dir}/cpuacct.usage": f"{cpu_ns}\n",
                    f"memory/{be_dir}/memory.usage_in_bytes": "1052672\n",
                    f"memory/{be_dir}/memory.stat": V1_MEMORY_STAT,
                },
            )
        else:
            write(
                tmp_path / "cg",
                {
                    "cgroup.controllers": "cpu memory\n",
                    f"{be_dir}/cpu.stat": V2_CPU_STAT.format(usec=cpu_ns // 1000),
                    f"{be_dir}/memory.current": "1056768\n",
                    f"{be_dir}/memory.stat": V2_MEMORY_STAT,
                },
            )

    files(1000, 1000, 0)
    collector.collect(state(be), 100.0)
    files(1500, 1500, 1_500_000_000)  # half the jiffies busy; the pod used 1.5 s of CPU in 2 s
    collector.collect(state(be), 102.0)
    used = usage_from_cache(cache, state(be), 102.0, max_age=5, be_window=5)
    assert used.node is not None
    assert (used.node.cpu_milli, used.node.memory) == (2000, 4000000 * 1024)
    assert used.pods["default/p-u-1"].cpu_milli == 750
    assert used.pods["default/p-u-1"].memory == 1048576
    assert used.be_cpu is not None and used.be_cpu.usage_milli >= 0


def test_a_pod_cgroup_without_a_pod_counts_under_its_uid(tmp_path: Path) -> None:
    layout = CgroupLayout(tmp_path, CgroupVersion.V1)
    write(
        tmp_path,
        {
            "cpuacct/kubepods/burstable/podorphan-1/cpuacct.usage": "0\n",
            "memory/kubepods/burstable/podorphan-1/memory.usage_in_bytes": "8192\n",
        },
    )
    cache = MetricCache()
    Collector(layout, cache, proc=tmp_path / "noproc").collect(state(), 1.0)
    assert usage_from_cache(cache, state(), 1.0, 5, 5).pods["uid:orphan-1"].memory == 8192


def test_the_cache_is_bounded_and_answers_windows() -> None:
    cache = MetricCache(retention=10, max_points=5)
    for t in range(20):
        cache.add("s", float(t), float(t))
    assert cache.window("s", 19, 100) == [15.0, 16.0, 17.0, 18.0, 19.0]
    assert cache.latest("s", 25, 5) is None and cache.latest("s", 20, 5) == 19
    assert cache.average("s", 19, 2) == 18.0
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90) == 9
    assert percentile([5], 99) == 5


def test_pod_churn_does_not_grow_the_cache_or_the_collector(tmp_path: Path) -> None:
    """A koordlet on a node where pods come and go: a deleted pod's counter reading is dropped on
    the next round, and its series once its newest sample is older than the retention."""
    layout = CgroupLayout(tmp_path / "cg", CgroupVersion.V1)
    cache = MetricCache(retention=60)
    collector = Collector(layout, cache, proc=tmp_path / "noproc")
    for round_ in range(200):
        short = f"churn-{round_}"
        pod_dir = layout.pod_dir("BestEffort", pod_uid(short))
        write(
            tmp_path / "cg",
            {
                f"cpuacct/{pod_dir}/cpuacct.usage": f"{round_}\n",
                f"memory/{pod_dir}/memory.usage_in_bytes": "4096\n",
            },
        )
        collector.collect(state(pod(short, qos="BE")), float(round_ * 10))
        (tmp_path / "cg" / "cpuacct" / pod_dir / "cpuacct.usage").unlink()  # the pod is gone
        (tmp_path / "cg" / "memory" / pod_dir / "memory.usage_in_bytes").unlink()
    pods = {name.split("/")[1] for name in cache.names("pod/")}
    assert len(pods) <= 60 / 10 + 1 + 60 / 4 / 10  # the retention's worth, and one sweep's lag
    assert pod_uid("churn-199") in pods and pod_uid("churn-0") not in pods
    assert not any(key.startswith(f"pod/{pod_uid('churn-0')}") for key in collector._last)
    assert len(collector._last) <= 2  # this round's pod cpu reading at most (no /proc here)


def test_the_node_metric_status_is_what_load_aware_reads() -> None:
    from scheduler_plugins.clock import fixed_clock
    from scheduler_plugins.scheduler.plugins.loadaware.cache import AssignCache

    cache = MetricCache()
    for t in range(0, 300, 10):
        cache.add("node/cpu", float(t), 1000.0 + t * 10)
        cache.add("node/memory", float(t), 2.0 * 1024**3)
        cache.add(f"pod/{pod_uid('u-1')}/cpu", float(t), 500.0)
        cache.add(f"pod/{pod_uid('u-1')}/memory", float(t), 1024.0**2)
        cache.add("hostapp/nginx/cpu", float(t), 100.0)
    slo = make_node_slo("n1", host_applications=[{"name": "nginx", "priority": "koord-prod", "qos": "LS"}])
    status = node_metric_status(
        cache,
        state(pod("u-1", qos="BE"), slo=slo),
        290.0,
        1714557600.0,
        CollectPolicy.of(
            {
                "spec": {
                    "metricCollectPolicy": {
                        "aggregateDurationSeconds": 60,
                        "nodeAggregatePolicy": {"durations": ["5m", "10m"]},
                    }
                }
            }
        ),
    )
    assert status["updateTime"] == "2024-05-01T10:00:00Z"
    # the mean of the samples of 230..290 s
    # quantities in their canonical text, as the koordlet's resource.Quantity marshals them
    assert status["nodeMetric"]["nodeUsage"] == {"resources": {"cpu": "3600m", "memory": "2Gi"}}
    first = status["nodeMetric"]["aggregatedNodeUsages"][0]
    assert first["duration"] == "5m0s" and set(first["usage"]) == {"p50", "p90", "p95", "p99"}
    assert status["podsMetric"] == [
        {
            "namespace": "default",
            "name": "p-u-1",
            "priority": "koord-batch",
            "qos": "BE",
            "podUsage": {"resources": {"cpu": "500m", "memory": "1Mi"}},
        }
    ]
    assert status["hostApplicationMetric"] == [
        {"name": "nginx", "usage": {"resources": {"cpu": "100m"}}, "priority": "koord-prod", "qos": "LS"}
    ]
    assign = AssignCache(
        ["cpu", "memory"],
        lambda pod: [0, 0],
        lambda pod: None,  # type: ignore[arg-type,return-value]
        False,
        fixed_clock(1714557600.0),
    )
    assign.set_metric("n1", {"spec": {}, "status": status})
    assert assign.estimated_usage("n1", False, "", 0) == [3600, 2 * 1024**3]
    assert assign.estimated_usage("n1", False, "p95", 300) == [3800, 2 * 1024**3]  # rank 29 of 30 samples


def test_the_status_clamps_negatives_leaves_out_the_unmeasured_and_clears_host_applications() -> None:
    """A counter that went backwards reports 0; a pod with only a memory sample reports only memory;
    with no host application left the merge-patched status still replaces the list; and the status
    reads back (`read_node_metric`) as the reading the reporter rendered it from."""
    from policies.apis.nodemetric import read_node_metric
    from scheduler_plugins.koordlet.metricsadvisor.reporter import node_metric_reading

    cache = MetricCache()
    cache.add("node/cpu", 100.0, -250.0)
    cache.add(f"pod/{pod_uid('u-1')}/memory", 100.0, 4096.0)
    node = state(pod("u-1", qos="LS"), pod("u-2", qos="BE"))  # u-2 has no sample: left out
    policy = CollectPolicy()

    status = node_metric_status(cache, node, 100.0, 1714557600.0, policy)

    assert status["nodeMetric"]["nodeUsage"] == {"resources": {"cpu": "0"}}
    assert status["podsMetric"] == [
        {
            "namespace": "default",
            "name": "p-u-1",
            "priority": "koord-prod",
            "qos": "LS",
            "podUsage": {"resources": {"memory": "4Ki"}},
        }
    ]
    assert status["hostApplicationMetric"] == []
    reading = node_metric_reading(cache, node, 100.0, 1714557600.0, policy)
    assert read_node_metric({"spec": {}, "status": status}) == reading
