"""CgroupReconcile (Koordinator's
`pkg/koordlet/qosmanager/plugins/cgreconcile/cgroup_reconcile.go`): the class's memory QoS
(memory.min/low/high, watermarks, memcg priority, OOM group, page cache) at QoS, pod and container
level, and the CPU side Koordinator leaves to its runtime hooks: BE `cpu.shares` and CFS quota from
batch-cpu, group identity and idle from the class cpuQOS. Runs when the NodeSLO has a
`resourceQOSStrategy`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, RESOURCE_MEMORY, KubernetesQoSClass, QoSClass
from policies.apis.objects import annotations_of
from scheduler_plugins.koordlet import features
from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite
from scheduler_plugins.koordlet.cgroups.layout import Level
from scheduler_plugins.koordlet.nodeslo import MEMORY_QOS_KEYS, ClassQOS, MemoryQOS
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, StrategyResult

NAME = "CgroupReconcile"
Writer = Callable[[str, r.Resource, int, Level], None]
PAGE_SIZE = 4096
SHARES_PER_CORE = 1024
BE_SHARES = 2
ANNOTATION_MEMORY_QOS = "koordinator.sh/memoryQOS"
#: a disabled class writes sloconfig's "none" values
NONE_MEMORY_QOS = MemoryQOS(wmark_scale_permill=50)


def _class_of(pod: PodView) -> QoSClass:
    if pod.qos is QoSClass.LSE:
        return QoSClass.LSR
    return pod.qos if pod.qos in (QoSClass.LSR, QoSClass.LS, QoSClass.BE, QoSClass.SYSTEM) else QoSClass.LS


def memory_config(pod: PodView, classes: Mapping[str, ClassQOS]) -> MemoryQOS:
    """The class's memory QoS (none values when disabled), with the pod annotation's override."""
    config = classes[_class_of(pod)].memory
    base = config if config.enable else NONE_MEMORY_QOS
    try:
        override = json.loads(annotations_of(pod.pod).get(ANNOTATION_MEMORY_QOS) or "{}")
    except ValueError:
        override = {}
    if not isinstance(override, dict) or not override:
        return base
    if override.get("enable") is False:
        return NONE_MEMORY_QOS
    values = {
        attr: int(override[key])
        for attr, key in MEMORY_QOS_KEYS.items()
        if isinstance(override.get(key), int) and not isinstance(override.get(key), bool)
    }
    if override.get("enable") is True and not config.enable:
        return MemoryQOS(enable=True, **{**{a: getattr(config, a) for a in MEMORY_QOS_KEYS}, **values})
    return MemoryQOS(**{**{a: getattr(base, a) for a in MEMORY_QOS_KEYS}, "enable": base.enable, **values})


def min_low(request: int, config: MemoryQOS) -> tuple[int, int]:
    low_min = request * config.min_limit_percent // 100
    low = request * config.low_limit_percent // 100
    if 0 < low < low_min:
        low = low_min
    return low_min, low


def memory_high(request: int, limit: int, node_allocatable: int, throttling: int) -> int:
    if throttling == 0:
        return r.MAX_INT64
    top = limit if limit > 0 else node_allocatable
    value = request + (top - request) * throttling // 100
    return value // PAGE_SIZE * PAGE_SIZE


def _common(config: MemoryQOS) -> list[tuple[r.Resource, int]]:
    return [
        (r.MEMORY_WMARK_RATIO, config.wmark_ratio),
        (r.MEMORY_WMARK_SCALE_FACTOR, config.wmark_scale_permill),
        (r.MEMORY_WMARK_MIN_ADJ, config.wmark_min_adj),
        (r.MEMORY_USE_PRIORITY_OOM, config.priority_enable),
        (r.MEMORY_PRIORITY, config.priority),
        (r.MEMORY_OOM_GROUP, config.oom_kill_group),
    ]


def _page_cache(limit: int, config: MemoryQOS) -> list[tuple[r.Resource, int]]:
    size = config.page_cache_limit_size
    if size > 0 and limit > 0:
        size = min(size, limit)
    elif size <= 0 and config.page_cache_limit_percent > 0 and limit > 0:
        size = limit * config.page_cache_limit_percent // 100
    if not config.page_cache_enable and size <= 0:
        return []
    return [(r.PAGECACHE_ENABLE, 1 if size > 0 else 0), (r.PAGECACHE_SIZE, max(size, 0))]


class CgroupReconcile:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.options = options
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.options.gates.enabled(features.CGROUP_RECONCILE) and self.interval > 0

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        slo = inp.state.node_slo
        if slo is None or slo.resource_qos is None:
            result.status["reason"] = inp.state.node_slo_error or "no resourceQOSStrategy in the NodeSLO"
            return result
        classes = slo.resource_qos
        allocatable = inp.node_amount("allocatable", RESOURCE_MEMORY)
        qos_min: dict[str, int] = {}
        qos_low: dict[str, int] = {}
        writes = result.writes

        def write(cgroup: str, resource: r.Resource, value: int, level: Level) -> None:
            writes.append(CgroupWrite(NAME, cgroup, resource, value, level))

        for pod in inp.pods:
            config = memory_config(pod, classes)
            be = pod.qos is QoSClass.BE
            mem_name = BATCH_MEMORY if be else RESOURCE_MEMORY
            request = sum(c.requests.get(mem_name, 0) for c in pod.containers)
            unlimited = any(c.limits.get(mem_name, 0) <= 0 for c in pod.containers)
            pod_limit = 0 if unlimited else sum(c.limits.get(mem_name, 0) for c in pod.containers)
            pod_min, pod_low = min_low(request, config)
            qos_min[pod.kube_qos] = qos_min.get(pod.kube_qos, 0) + pod_min
            qos_low[pod.kube_qos] = qos_low.get(pod.kube_qos, 0) + pod_low
            for resource, value in [
                (r.MEMORY_MIN, pod_min),
                (r.MEMORY_LOW, pod_low),
                *_common(config),
                *_page_cache(pod_limit, config),
            ]:
                write(pod.dir, resource, value, Level.POD)
            for c in pod.containers:
                if c.dir is None:
                    continue
                c_req, c_limit = c.requests.get(mem_name, 0), c.limits.get(mem_name, 0)
                c_min, c_low = min_low(c_req, config)
                for resource, value in [
                    (r.MEMORY_MIN, c_min),
                    (r.MEMORY_LOW, c_low),
                    (r.MEMORY_HIGH, memory_high(c_req, c_limit, allocatable, config.throttling_percent)),
                    *_common(config),
                    *_page_cache(c_limit, config),
                ]:
                    write(c.dir, resource, value, Level.CONTAINER)
            self._cpu(pod, classes, write)
        for kube_qos in (KubernetesQoSClass.GUARANTEED, KubernetesQoSClass.BURSTABLE, KubernetesQoSClass.BEST_EFFORT):
            qos_dir = inp.layout.qos_dir(kube_qos)
            klass = {
                KubernetesQoSClass.GUARANTEED: QoSClass.LSR,
                KubernetesQoSClass.BURSTABLE: QoSClass.LS,
                KubernetesQoSClass.BEST_EFFORT: QoSClass.BE,
            }[kube_qos]
            config = classes[klass].memory if classes[klass].memory.enable else NONE_MEMORY_QOS
            write(qos_dir, r.MEMORY_MIN, qos_min.get(kube_qos, 0), Level.QOS)
            write(qos_dir, r.MEMORY_LOW, qos_low.get(kube_qos, 0), Level.QOS)
            for resource, value in _common(config)[3:]:
                write(qos_dir, resource, value, Level.QOS)
            cpu = classes[klass].cpu
            if cpu.enable:
                write(qos_dir, r.CPU_BVT_WARP_NS, cpu.group_identity, Level.QOS)
        return result

    def _cpu(self, pod: PodView, classes: Mapping[str, ClassQOS], write: Writer) -> None:
        cpu = classes[_class_of(pod)].cpu
        if cpu.enable:
            write(pod.dir, r.CPU_BVT_WARP_NS, cpu.group_identity, Level.POD)
            if pod.qos is QoSClass.BE:
                write(pod.dir, r.CPU_IDLE, cpu.sched_idle, Level.POD)
        if pod.qos is not QoSClass.BE:
            return
        pod_request = sum(c.requests.get(BATCH_CPU, 0) for c in pod.containers)
        write(pod.dir, r.CPU_SHARES, max(BE_SHARES, pod_request * SHARES_PER_CORE // 1000), Level.POD)
        limits = [c.limits.get(BATCH_CPU, 0) for c in pod.containers]
        pod_quota = -1 if any(v <= 0 for v in limits) else sum(limits) * r.DEFAULT_CFS_PERIOD // 1000
        write(pod.dir, r.CPU_CFS_QUOTA, pod_quota, Level.POD)
        for c in pod.containers:
            if c.dir is None:
                continue
            c_req, c_lim = c.requests.get(BATCH_CPU, 0), c.limits.get(BATCH_CPU, 0)
            write(c.dir, r.CPU_SHARES, max(BE_SHARES, c_req * SHARES_PER_CORE // 1000), Level.CONTAINER)
            write(c.dir, r.CPU_CFS_QUOTA, c_lim * r.DEFAULT_CFS_PERIOD // 1000 if c_lim > 0 else -1, Level.CONTAINER)
