"""What one node's calculation reads, extracted once from the objects.

`NodeInput` (the Node and its pods), `MetricInput` (its NodeMetric) and `ZoneInput` (its
NodeResourceTopology) are plain frozen values; `Res` is `(cpu milli-cores, memory milli-bytes)`.
The Go-faithful float helpers (`multiply_value`, `multiply_milli`) are here because every
calculation scales capacities the same truncating way (`pkg/util/resource.go` MultiplyQuant).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, NamedTuple

from policies.apis.constants import (
    ANNOTATION_NODE_RESERVATION,
    BATCH_CPU,
    BATCH_MEMORY,
    MID_CPU,
    MID_MEMORY,
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    PriorityClass,
    QoSClass,
)
from policies.apis.cpuset import CPUSetError, parse_cpuset, resource_status_of
from policies.apis.nodemetric import NodeMetricReading, read_node_metric
from policies.apis.objects import annotations_of, metadata_of, name_of
from policies.apis.qos import pod_classes
from policies.apis.quantity import Quantity, QuantityError, QuantityFormat
from policies.apis.resources import pod_resources
from policies.apis.timestamps import parse_time

Res = tuple[int, int]
ZERO: Final[Res] = (0, 0)
ACTIVE_PHASES: Final = frozenset({"Running", "Pending"})
#: `GetDefaultPriorityByPriorityClass`
DEFAULT_PRIORITY: Final[Mapping[str, int]] = {
    PriorityClass.PROD: 9500,
    PriorityClass.MID: 7500,
    PriorityClass.BATCH: 5500,
    PriorityClass.FREE: 3500,
}


#: why an input was refused (a closed set: the manager's metric label and its Event's message)
REFUSED_NEGATIVE_USAGE: Final = "NegativeUsage"
REFUSED_DUPLICATE_POD_METRIC: Final = "DuplicatePodMetric"
REFUSED_NEGATIVE_CAPACITY: Final = "NegativeCapacity"
REFUSED_REASONS: Final = (REFUSED_NEGATIVE_USAGE, REFUSED_DUPLICATE_POD_METRIC, REFUSED_NEGATIVE_CAPACITY)


def add(a: Res, b: Res) -> Res:
    return (a[0] + b[0], a[1] + b[1])


def sub(a: Res, b: Res) -> Res:
    return (a[0] - b[0], a[1] - b[1])


def rmax(a: Res, b: Res) -> Res:
    return (a[0] if a[0] > b[0] else b[0], a[1] if a[1] > b[1] else b[1])


def clamp0(a: Res) -> Res:
    return (a[0] if a[0] > 0 else 0, a[1] if a[1] > 0 else 0)


def at_most(capacity: Res, amount: Res) -> Res:
    """The amount, never above the node's capacity (Koordinator floors the result at 0 only; the
    inputs are clamped at 0, and this bounds what is written whatever got through)."""
    return (min(amount[0], capacity[0]), min(amount[1], capacity[1]))


def ceil_div(numerator: int, denominator: int) -> int:
    return -((-numerator) // denominator)


def value_of(milli: int) -> int:
    """`Quantity.Value()`: whole units, rounded up."""
    return ceil_div(milli, 1000)


def multiply_milli(milli: int, factor: float) -> int:
    """`MultiplyMilliQuant`: int64(float64(milli) × factor), in milli."""
    return int(float(milli) * factor)


def multiply_value(milli: int, factor: float) -> int:
    """`MultiplyQuant`: int64(float64(Value()) × factor) whole units, returned in milli."""
    return int(float(value_of(milli)) * factor) * 1000


@lru_cache(maxsize=4096, typed=True)
def _milli_of(raw: str | int | float) -> int:
    return Quantity.parse(raw).milli_value()


def _milli(raw: object) -> int:
    """Raises QuantityError on what is not a quantity (cached by text: capacities repeat)."""
    if isinstance(raw, (str, int, float)):
        return _milli_of(raw)
    return Quantity.parse(raw).milli_value()


@lru_cache(maxsize=4096, typed=True)
def _lenient_milli_of(raw: str | int | float) -> int:
    try:
        return Quantity.parse(raw).milli_value()
    except QuantityError:
        return 0


def lenient_milli(raw: object) -> int:
    """The quantity in thousandths, 0 when it is not one (what the update rule compares; cached by
    text: the values repeat)."""
    if isinstance(raw, (str, int, float)):
        return _lenient_milli_of(raw)
    try:
        return Quantity.parse(raw).milli_value()
    except QuantityError:
        return 0


def percent_of(capacity: Res, cpu_percent: int, memory_percent: int) -> Res:
    """A share of the capacity, truncated as Koordinator's float multiplies do: cpu in milli
    (`multiply_milli`), memory in whole bytes (`multiply_value`); both in milli."""
    return (
        multiply_milli(capacity[0], float(cpu_percent) / 100),
        multiply_value(capacity[1], float(memory_percent) / 100),
    )


def res_of(raw: Mapping[str, Any] | None) -> Res:
    """cpu and memory of a ResourceList in milli; absent or malformed entries count 0."""
    if not isinstance(raw, Mapping):
        return ZERO
    amounts = []
    for name in (RESOURCE_CPU, RESOURCE_MEMORY):
        try:
            amounts.append(_milli(raw[name]) if name in raw else 0)
        except QuantityError:
            amounts.append(0)
    return (amounts[0], amounts[1])


#: the classes below prod, as plain text (what `prod_request` leaves out)
NOT_PROD: Final = frozenset({str(PriorityClass.MID), str(PriorityClass.BATCH), str(PriorityClass.FREE)})


class PodInput(NamedTuple):
    """One pod on the node: whether it counts (Running/Pending), its classes, request and NUMA binding.
    A NamedTuple rather than a frozen dataclass: one is made per pod when a node is first planned,
    150,000 in a 5,000-node recalculation, and a tuple is made in C (docs/benchmarks.md, Manager)."""

    key: str  # namespace/name
    active: bool
    priority: str
    qos: str
    request: Res
    numa_nodes: tuple[int, ...] = ()


class MetricInput:
    """The NodeMetric's status as the calculations read it; `update_time` in epoch seconds.

    A value (`Final` attributes), written as a plain class rather than a frozen dataclass: one is
    made per node and round (see `update.Decision`)."""

    __slots__ = (
        "update_time",
        "has_node_metric",
        "node_usage",
        "system_usage",
        "pods",
        "host_applications",
        "prod_reclaimable",
        "refused",
    )

    def __init__(
        self,
        update_time: float | None,
        has_node_metric: bool,
        node_usage: Res | None,
        system_usage: Res,
        pods: Mapping[str, tuple[str, Res]],
        host_applications: tuple[tuple[str, Res], ...] = (),
        prod_reclaimable: Res | None = None,
        refused: tuple[str, ...] = (),
    ) -> None:
        self.update_time: Final = update_time
        self.has_node_metric: Final = has_node_metric
        #: None unless nodeUsage has both cpu and memory
        self.node_usage: Final = node_usage
        self.system_usage: Final = system_usage
        #: namespace/name -> (priority of the metric, usage)
        self.pods: Final = pods
        self.host_applications: Final = host_applications
        self.prod_reclaimable: Final = prod_reclaimable
        #: why parts of the NodeMetric were refused (`REFUSED_REASONS`), sorted; empty when none was
        self.refused: Final = refused


@dataclass(frozen=True, slots=True)
class ZoneInput:
    """One NodeResourceTopology zone: its name and cpu/memory allocatable (None when it lists neither)."""

    name: str
    allocatable: Res


@dataclass(frozen=True, slots=True)
class NodeInput:
    """What the calculations read of the Node and its pods (`node_input_source` says which parts of
    the Node: a status write of the batch and mid resources leaves them as they were)."""

    name: str
    capacity: Res
    allocatable: Res
    memory_format: QuantityFormat
    reservation: Res | None  # the node.koordinator.sh/reservation annotation, None when absent or unusable
    pods: tuple[PodInput, ...] = field(default=())
    #: why parts of the Node were refused (`REFUSED_REASONS`): a negative capacity or allocatable
    #: is read as 0
    refused: tuple[str, ...] = ()
    #: capacity − allocatable (never negative), derived once: every calculation reads it
    kubelet_reserved: Res = field(init=False)
    #: max(kubelet reservation, annotation reservation), per resource
    reserved: Res = field(init=False)
    #: the keys of the active (Running/Pending) pods, whose metrics are not dangling
    active_keys: frozenset[str] = field(init=False)
    #: Σ request of the active prod pods (neither mid, batch nor free): the mid calculation's
    #: prod request, which depends on the pods alone (a NodeInput is kept while they are the same)
    prod_request: Res = field(init=False)
    #: (key, request cpu, request memory, is LSE) of the active pods above batch priority, and Σ of
    #: their requests: what the node-level HP sums read of the pods (`batch.hp_sums`)
    hp_pods: tuple[tuple[str, int, int, bool], ...] = field(init=False)
    hp_request: Res = field(init=False)

    def __post_init__(self) -> None:
        kubelet = clamp0(sub(self.capacity, self.allocatable))
        object.__setattr__(self, "kubelet_reserved", kubelet)
        object.__setattr__(self, "reserved", rmax(kubelet, self.reservation or ZERO))
        cpu = memory = hp_cpu = hp_memory = 0
        active_keys = []
        hp_pods = []
        for key, active, priority, qos, (request_cpu, request_memory), _ in self.pods:
            if not active:
                continue
            active_keys.append(key)
            if priority not in NOT_PROD:
                cpu += request_cpu
                memory += request_memory
            if priority not in LOW_PRIORITIES:
                hp_pods.append((key, request_cpu, request_memory, is_lse(qos)))
                hp_cpu += request_cpu
                hp_memory += request_memory
        object.__setattr__(self, "active_keys", frozenset(active_keys))
        object.__setattr__(self, "prod_request", (cpu, memory))
        object.__setattr__(self, "hp_pods", tuple(hp_pods))
        object.__setattr__(self, "hp_request", (hp_cpu, hp_memory))


#: the node's batch and mid resources, as the manager writes them
EXTENDED: Final = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)


@dataclass(frozen=True, slots=True)
class NodeRead:
    """The sections of a Node object a plan reads, and its current batch/mid texts (shared: read them)."""

    name: str
    labels: Mapping[str, Any]
    annotations: Mapping[str, Any]
    status: Mapping[str, Any]
    #: `status.allocatable`'s batch and mid resources as text
    current: Mapping[str, str]
    #: the same in thousandths (`lenient_milli`: what the update rule compares them by)
    current_milli: Mapping[str, int]
    #: whether the status has capacity and allocatable (else nothing may be written)
    writable: bool


def read_node(node: Mapping[str, Any], resources: Iterable[str] = EXTENDED) -> NodeRead:
    """The node's sections and its current texts of `resources` (the plugin table's)."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or {}
    return NodeRead(
        name=str(meta.get("name") or ""),
        labels=meta.get("labels") or {},
        annotations=meta.get("annotations") or {},
        status=status,
        current={name: str(allocatable[name]) for name in resources if name in allocatable},
        current_milli={name: lenient_milli(allocatable[name]) for name in resources if name in allocatable},
        writable="capacity" in status and "allocatable" in status and status.get("capacity") is not None,
    )


def reservation_of(annotations: Mapping[str, str]) -> Res | None:
    """`GetNodeReservationFromAnnotation`: resources, with `reservedCPUs` counting CPUs for cpu."""
    text = annotations.get(ANNOTATION_NODE_RESERVATION)
    if not text:
        return None
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            return None
        resources = raw.get("resources")
        cpu, memory = res_of(resources) if isinstance(resources, Mapping) else ZERO
        cpus = raw.get("reservedCPUs") or ""
        if cpus:
            cpu = len(parse_cpuset(str(cpus))) * 1000
    except (ValueError, CPUSetError):
        return None
    return (cpu, memory)


def _sum_requests(pod: Mapping[str, Any]) -> Res:
    """The pod's cpu and memory requests (`pod_resources`: containers, init containers, overhead),
    summed in nanos and rounded up to milli once, as Kubernetes sums quantities; 0 when malformed."""
    try:
        total = pod_resources(pod, "requests", _request_nanos)
    except (QuantityError, TypeError):
        return ZERO
    return (
        -(-total[RESOURCE_CPU] // 10**6) if RESOURCE_CPU in total else 0,
        -(-total[RESOURCE_MEMORY] // 10**6) if RESOURCE_MEMORY in total else 0,
    )


@lru_cache(maxsize=4096, typed=True)
def _nanos_of(raw: str | int | float) -> int:
    return Quantity.parse(raw).nanos


def _request_nanos(raw: Any) -> dict[str, int]:
    """A ResourceList's cpu and memory in nanos (cached by text: requests repeat across pods)."""
    if not isinstance(raw, (dict, Mapping)):  # `dict` first: the check against the ABC costs more
        return {}
    out = {}
    for name in (RESOURCE_CPU, RESOURCE_MEMORY):
        if name in raw:
            amount = raw[name]
            out[name] = _nanos_of(amount) if isinstance(amount, (str, int, float)) else Quantity.parse(amount).nanos
    return out


def pod_input(pod: Mapping[str, Any]) -> PodInput:
    qos, priority = pod_classes(pod)
    bound = resource_status_of(pod).numa_node_resources
    meta = metadata_of(pod)
    return PodInput(
        f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}",
        (pod.get("status") or {}).get("phase") in ACTIVE_PHASES,
        priority,  # the classes are `str` enums: each is the text it names
        qos,
        _sum_requests(pod),
        tuple(r.node for r in bound) if bound else (),
    )


def _format_of(raw: object) -> QuantityFormat:
    try:
        return Quantity.parse(raw).format
    except QuantityError:
        return QuantityFormat.BINARY_SI


def node_input(
    node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], pod_inputs: tuple[PodInput, ...] | None = None
) -> NodeInput:
    """`pod_inputs`: the pods' inputs when the caller kept them (`memo.MemoPlanner`), else read here.
    Reads of the Node only what `node_input_source` lists."""
    status = node.get("status") or {}
    capacity = status.get("capacity") or {}
    amounts = res_of(capacity), res_of(status.get("allocatable"))
    refused: tuple[str, ...] = ()
    if min(*amounts[0], *amounts[1]) < 0:  # no node has less than nothing
        refused = (REFUSED_NEGATIVE_CAPACITY,)
        amounts = clamp0(amounts[0]), clamp0(amounts[1])
    return NodeInput(
        name=name_of(node),
        capacity=amounts[0],
        allocatable=amounts[1],
        memory_format=_format_of(capacity.get(RESOURCE_MEMORY, "0")),
        reservation=reservation_of(annotations_of(node)),
        pods=pod_inputs if pod_inputs is not None else tuple(pod_input(p) for p in pods),
        refused=refused,
    )


_ABSENT: Final = object()


def _cpu_and_memory(raw: object) -> tuple[object, ...] | None:
    """A ResourceList's cpu and memory entries with their types (None when it is no mapping)."""
    if not isinstance(raw, Mapping):
        return None
    cpu, memory = raw.get(RESOURCE_CPU, _ABSENT), raw.get(RESOURCE_MEMORY, _ABSENT)
    return (type(cpu), cpu, type(memory), memory)


def node_input_source(node: Mapping[str, Any]) -> tuple[object, ...]:
    """The parts of the Node `node_input` reads (its name, the cpu and memory of its capacity and
    allocatable, its reservation annotation): Nodes whose sources are equal give equal inputs for
    the same pods. A status write of the batch and mid resources, or an annotation write of
    others, leaves the source as it was."""
    status = node.get("status") or {}
    return (
        name_of(node),
        _cpu_and_memory(status.get("capacity") or {}),
        _cpu_and_memory(status.get("allocatable")),
        annotations_of(node).get(ANNOTATION_NODE_RESERVATION, _ABSENT),
    )


@lru_cache(maxsize=256)
def _update_time(text: str | None) -> float | None:
    """`parse_time`, cached by text: the koordlets of a cluster report at the same few instants."""
    return parse_time(text)


def _usage(amounts: Mapping[str, int] | None, refused: set[str]) -> Res:
    """A NodeMetric usage (millicores, bytes) in milli, each resource at least 0: no usage is
    negative, and a negative one would raise what the node seems to have free."""
    if not amounts:
        return ZERO
    cpu, memory = amounts.get(RESOURCE_CPU, 0), amounts.get(RESOURCE_MEMORY, 0)
    if cpu < 0 or memory < 0:
        refused.add(REFUSED_NEGATIVE_USAGE)
        cpu, memory = max(cpu, 0), max(memory, 0)
    return (cpu, memory * 1000)


def _pod_usages(reading: NodeMetricReading, refused: set[str]) -> dict[str, tuple[str, Res]]:
    """namespace/name -> (priority, usage); a pod listed twice counts once, at the larger usage of
    each resource (Koordinator keeps the last entry, which lets a second entry hide the first)."""
    pods: dict[str, tuple[str, Res]] = {}
    for pod in reading.pods:
        usage = _usage(pod.usage, refused)
        seen = pods.get(pod.key)
        if seen is not None:
            refused.add(REFUSED_DUPLICATE_POD_METRIC)
            usage = rmax(seen[1], usage)
        pods[pod.key] = (pod.priority, usage)
    return pods


def metric_input(metric: Mapping[str, Any] | None) -> MetricInput | None:
    """The NodeMetric's status, or None without a NodeMetric; raises QuantityError on a bad quantity.
    What no koordlet reports (a negative usage, a pod listed twice) is refused: counted in
    `refused` and read as the nearest possible value (0, the larger entry)."""
    if metric is None:
        return None
    reading = read_node_metric(metric)
    refused: set[str] = set()
    usage = reading.node_usage
    node_usage = _usage(usage, refused) if usage and RESOURCE_CPU in usage and RESOURCE_MEMORY in usage else None
    pods = _pod_usages(reading, refused)
    system = reading.system_usage
    hosts = reading.host_applications
    reclaimable = reading.prod_reclaimable
    return MetricInput(
        _update_time(reading.update_time),
        reading.has_node_metric,
        node_usage,
        _usage(system, refused),
        pods,
        tuple((app.priority, _usage(app.usage, refused)) for app in hosts) if hosts else (),
        _usage(reclaimable, refused) if reclaimable is not None else None,
        tuple(sorted(refused)),
    )


def zones_of(nrt: Mapping[str, Any] | None) -> tuple[ZoneInput, ...]:
    """The NRT's zones when some zone lists cpu or memory (`isNRTResourcesCreated`), else ()."""
    if not isinstance(nrt, Mapping):
        return ()
    zones = nrt.get("zones") or []
    found = False
    out = []
    for zone in zones:
        alloc: dict[str, Any] = {}
        for info in zone.get("resources") or []:
            if info.get("name") in (RESOURCE_CPU, RESOURCE_MEMORY):
                found = True
                alloc[info["name"]] = info.get("allocatable", "0")
        out.append(ZoneInput(str(zone.get("name") or ""), res_of(alloc)))
    return tuple(out) if found else ()


def hp_host_usage(metric: MetricInput, than: str) -> Res:
    """Σ usage of host applications whose class' default priority is above `than`'s (`GetHostAppHPUsed`)."""
    if not metric.host_applications:
        return ZERO
    floor = DEFAULT_PRIORITY.get(than, 0)
    total = ZERO
    for priority, usage in metric.host_applications:
        if DEFAULT_PRIORITY.get(priority, 0) > floor:
            total = add(total, usage)
    return total


def system_used(metric: MetricInput, than: str) -> Res:
    """The system's usage plus that of the host applications whose class is above `than`'s."""
    if not metric.host_applications:
        return metric.system_usage
    return add(metric.system_usage, hp_host_usage(metric, than))


#: the batch and free classes, as plain text (a set of `str` hashes and compares in C)
LOW_PRIORITIES: Final = frozenset({str(PriorityClass.BATCH), str(PriorityClass.FREE)})


def is_low_priority(priority: str) -> bool:
    return priority in LOW_PRIORITIES


def is_lse(qos: str) -> bool:
    return qos == QoSClass.LSE


def finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))
