"""The LowNodeLoad Balance plugin (Koordinator's
`pkg/descheduler/framework/plugins/loadaware/low_node_load.go`).

Per pool, in order (the top-level `__default_node_pool__` first): classify the pool's nodes that
no earlier pool took as a source; if hot nodes are confirmed by anomaly detection and cold nodes
exist, evict from the busiest hot node first — cheapest pods first, only pods that fit a cold node
(`nodeFit`) — until the node is no longer hot or the cold nodes' headroom is used up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Final

from policies.apis.constants import RESOURCE_PODS
from policies.apis.objects import labels_of, name_of, namespace_of, spec_of, status_of
from policies.apis.placement import SCHEDULING_EFFECTS, matches_node_selector_and_affinity, untolerated_taint
from policies.apis.quantity import QuantityError, resource_list
from policies.apis.resources import pod_resources
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.framework.handle import Handle
from scheduler_plugins.descheduler.framework.interfaces import SUCCESS, EvictOptions, Object, Status
from scheduler_plugins.descheduler.framework.report import EvictionEntry, NodeEntry
from scheduler_plugins.descheduler.plugins.lownodeload.anomaly import DetectorCache, filter_real_abnormal
from scheduler_plugins.descheduler.plugins.lownodeload.args import NAME, LowNodeLoadArgs, NodePool
from scheduler_plugins.descheduler.plugins.lownodeload.model import (
    BOTH_LOW,
    HIGH,
    LOW,
    NONE,
    PROD_HIGH,
    PROD_LOW,
    Amounts,
    NodeUsage,
    PoolThresholds,
    classify,
    new_thresholds,
    node_usage,
    overutilized,
    set_thresholds,
)
from scheduler_plugins.descheduler.plugins.lownodeload.sorting import sort_pods, usage_score

log = logging.getLogger("colocate.descheduler.lownodeload")

NO_METRIC_NOTE: Final = "no NodeMetric, or it is older than nodeMetricExpirationSeconds"


def available(nodes: Sequence[NodeUsage], names: Sequence[str], prod: bool) -> Amounts:
    """Σ (high threshold − usage) over `nodes`, per resource."""
    out = dict.fromkeys(names, 0)
    for node in nodes:
        high, usage = (node.prod_high, node.prod_usage) if prod else (node.high, node.usage)
        for name in names:
            out[name] += high.get(name, 0) - usage.get(name, 0)
    return out


class _Target:
    """A cold node as nodeFit sees it during one balance: usage booked so far, its requests."""

    def __init__(self, node: NodeUsage, prod: bool) -> None:
        self.node = node
        self.fit_usage = dict(node.prod_usage if prod else node.usage)
        self.tainted = any(t.get("effect") in SCHEDULING_EFFECTS for t in spec_of(node.node).get("taints") or [])
        self._requested: Amounts | None = None
        self._allocatable: Amounts = {}

    def fits_requests(self, requests: Mapping[str, int]) -> bool:
        if self._requested is None:
            self._requested = {}
            for pod in self.node.pods:
                try:
                    for name, amount in pod_resources(pod, "requests", resource_list).items():
                        self._requested[name] = self._requested.get(name, 0) + amount
                except QuantityError:
                    continue
            try:
                self._allocatable = resource_list(status_of(self.node.node).get("allocatable"))
            except QuantityError:
                self._allocatable = {}
        booked, allocatable = self._requested, self._allocatable
        if RESOURCE_PODS in allocatable and len(self.node.pods) + 1 > allocatable[RESOURCE_PODS]:
            return False
        return not any(
            amount > 0 and booked.get(r, 0) + amount > allocatable.get(r, 0) for r, amount in requests.items()
        )


class LowNodeLoad:
    name = NAME

    def __init__(self, args: LowNodeLoadArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.node_detectors = DetectorCache(args.detector_cache_timeout, handle.clock)
        self.prod_detectors = DetectorCache(args.detector_cache_timeout, handle.clock)

    # --- the filter of candidate pods -------------------------------------------------------------
    def pod_filter(self, pod: Object) -> bool:
        namespace = namespace_of(pod) or "default"
        if self.args.namespaces_include and namespace not in self.args.namespaces_include:
            return False
        if namespace in self.args.namespaces_exclude:
            return False
        if self.args.pod_selectors and not any(s.matches(labels_of(pod)) for s in self.args.pod_selectors):
            return False
        return self.handle.evictor.filter(pod)

    # --- the plugin --------------------------------------------------------------------------------
    def balance(self, nodes: Sequence[Object]) -> Status:
        if self.args.paused:
            log.info("LowNodeLoad is paused")
            return SUCCESS
        processed: set[str] = set()
        for pool in self.args.node_pools:
            self._process_pool(pool, nodes, processed)
        self.node_detectors.prune()
        self.prod_detectors.prune()
        return SUCCESS

    def _report(
        self, pool: NodePool, thresholds: PoolThresholds, node: NodeUsage | None, name: str, classification: str
    ) -> None:
        shown: dict[str, dict[str, float]] = {"low": dict(pool.low), "high": dict(pool.high)}
        if pool.prod_low or pool.prod_high:
            shown.update(prodLow=dict(pool.prod_low), prodHigh=dict(pool.prod_high))
        usage = (
            {r: round(node.percent(r), 2) for r in thresholds.resource_names if r in node.usage}
            if node is not None
            else {}
        )
        self.handle.report.nodes.append(
            NodeEntry(name, pool.name, classification, usage, shown, "" if node is not None else NO_METRIC_NOTE)
        )

    def _process_pool(self, pool: NodePool, nodes: Sequence[Object], processed: set[str]) -> None:
        snapshot, now = self.handle.snapshot, self.handle.clock()
        candidates = [
            n
            for n in nodes
            if name_of(n) not in processed and (pool.node_selector is None or pool.node_selector.matches(labels_of(n)))
        ]
        thresholds = new_thresholds(pool)
        names = thresholds.resource_names
        usages: list[NodeUsage] = []
        for node in candidates:
            name = name_of(node)
            usage = node_usage(
                node,
                snapshot.pods_on(name),
                snapshot.node_metrics.get(name),
                names,
                now,
                self.args.node_metric_expiration_seconds,
            )
            if usage is None:
                self._report(pool, thresholds, None, name, NONE)
            else:
                usages.append(usage)
        set_thresholds(usages, pool, thresholds)
        groups: dict[str, list[NodeUsage]] = {HIGH: [], PROD_HIGH: [], LOW: [], PROD_LOW: [], BOTH_LOW: [], NONE: []}
        for usage in usages:
            classification = classify(usage)
            groups[classification].append(usage)
            self._report(pool, thresholds, usage, usage.name, classification)
        high, prod_high = groups[HIGH], groups[PROD_HIGH]
        low, prod_low, both_low = groups[LOW], groups[PROD_LOW], groups[BOTH_LOW]
        if not high and not prod_high:
            log.debug("pool %s: no node is above the high thresholds", pool.name)
            return
        condition = pool.anomaly_condition
        abnormal_names = set(filter_real_abnormal([n.name for n in high], self.node_detectors, condition))
        abnormal_prod_names = set(filter_real_abnormal([n.name for n in prod_high], self.prod_detectors, condition))
        abnormal = [n for n in high if n.name in abnormal_names]
        abnormal_prod = [n for n in prod_high if n.name in abnormal_prod_names]
        if not abnormal and not abnormal_prod:
            log.info("pool %s: hot nodes not yet confirmed by anomaly detection", pool.name)
            return
        if not low and not prod_low and not both_low:
            log.info("pool %s: no node is under the low thresholds", pool.name)
            return
        self.node_detectors.reset([n.name for n in low + both_low])
        self.prod_detectors.reset([n.name for n in prod_low])
        all_low = len(low) + len(prod_low) + len(both_low)
        if all_low <= self.args.number_of_nodes:
            log.info(
                "pool %s: %d cold nodes, not more than numberOfNodes %d", pool.name, all_low, self.args.number_of_nodes
            )
            return
        if all_low == len(usages):
            log.info("pool %s: every node is cold", pool.name)
            return
        weights = pool.resource_weights
        abnormal.sort(key=lambda n: usage_score(n.usage, n.capacity, weights), reverse=True)
        abnormal_prod.sort(key=lambda n: usage_score(n.prod_usage, n.capacity, weights), reverse=True)
        node_avail = {
            r: a + b
            for (r, a), b in zip(
                available(low, names, False).items(), available(both_low, names, False).values(), strict=True
            )
        }
        self._balance(pool, abnormal, low + both_low, node_avail, False, names)
        both = available(both_low, names, False)
        both_avail = {r: min(both[r], node_avail[r]) for r in names}
        prod_both = available(both_low, names, True)
        prod_avail = {r: a + min(prod_both[r], both_avail[r]) for r, a in available(prod_low, names, True).items()}
        self._balance(pool, abnormal_prod, prod_low + both_low, prod_avail, True, names)
        for source in abnormal:
            self.node_detectors.get(source.name, condition).mark(normal=True)
        for source in abnormal_prod:
            self.prod_detectors.get(source.name, condition).mark(normal=True)
        processed.update(n.name for n in high)

    # --- eviction ----------------------------------------------------------------------------------
    def _fits_some_target(
        self, pod: Object, pod_usage: Mapping[str, int], targets: Sequence[_Target], prod: bool
    ) -> bool:
        """nodeFit: the target's usage plus the pod's stays within its high thresholds, and the pod
        fits it by selector, affinity, taints and requests; a fit books the usage on the target."""
        try:
            requests = pod_resources(pod, "requests", resource_list)
        except QuantityError:
            return False
        spec = spec_of(pod)
        constrained = bool(spec.get("nodeSelector") or (spec.get("affinity") or {}).get("nodeAffinity"))
        for target in targets:
            high = target.node.prod_high if prod else target.node.high
            # podFitsAnyNodeWithThreshold adds the pod's metric, which has no `pods` entry
            adds = {r: pod_usage.get(r, 0) for r in high}
            usage = target.fit_usage
            if any(usage.get(r, 0) + adds[r] > high[r] for r in high):
                continue
            if constrained and not matches_node_selector_and_affinity(pod, target.node.node):
                continue
            if target.tainted and untolerated_taint(pod, target.node.node):
                continue
            if not target.fits_requests(requests):
                continue
            for r, amount in adds.items():
                usage[r] = usage.get(r, 0) + amount
            return True
        return False

    @staticmethod
    def _reason(node: NodeUsage, prod: bool) -> str:
        usage, high = (node.prod_usage, node.prod_high) if prod else (node.usage, node.high)
        parts = []
        for resource in sorted(high):
            capacity = node.capacity.get(resource, 0)
            if resource in usage and usage[resource] > high[resource] and capacity:
                parts.append(
                    f"{'prod' if prod else 'node'} {resource} usage({100 * usage[resource] / capacity:.2f}%)"
                    f">threshold({100 * high[resource] / capacity:.2f}%)"
                )
        return "node is overutilized, " + ", ".join(parts)

    def _balance(
        self,
        pool: NodePool,
        sources: Sequence[NodeUsage],
        targets: Sequence[NodeUsage],
        avail: Amounts,
        prod: bool,
        names: Sequence[str],
    ) -> None:
        if not targets or not sources:
            return
        candidates = [_Target(t, prod) for t in targets]
        detectors = self.prod_detectors if prod else self.node_detectors
        for source in sources:
            usage, high = (source.prod_usage, source.prod_high) if prod else (source.usage, source.high)
            removable = [p for p in (source.prod_pods if prod else source.pods) if self.pod_filter(p)]
            over = [r for r in names if r in high and usage.get(r, 0) > high[r]]
            weights = {r: pool.resource_weights.get(r, 0) for r in over}
            exceed = {r: usage.get(r, 0) - high[r] for r in over}
            removable = sort_pods(removable, source.pod_usage, exceed, weights)
            if self.args.node_fit:
                # Koordinator books each fitting pod on its target in its pod list's (map) order;
                # here in victim order, so the pods evicted first are the ones that find room
                others = [t for t in candidates if t.node.name != source.name]
                removable = [
                    p
                    for p in removable
                    if pod_key(p) in source.pod_usage
                    and self._fits_some_target(p, source.pod_usage[pod_key(p)], others, prod)
                ]
            for pod in removable:
                if not overutilized(usage, high):
                    existing = detectors.existing(source.name)
                    if existing is not None:
                        existing.reset()
                    break
                if any(amount <= 0 for amount in avail.values()):
                    break
                if not self.handle.evictor.pre_eviction_filter(pod):
                    continue
                reason = self._reason(source, prod)
                if self.args.dry_run:
                    log.info("would evict %s from %s (LowNodeLoad dryRun): %s", pod_key(pod), source.name, reason)
                    self.handle.report.evictions.append(EvictionEntry(pod_key(pod), source.name, NAME, reason))
                elif not self.handle.evictor.evict(pod, EvictOptions(plugin_name=NAME, reason=reason)):
                    continue
                if pod_key(pod) not in source.pod_usage:
                    continue  # no PodMetric: nothing to account (Koordinator's evictPods)
                pod_usage = source.pod_usage[pod_key(pod)]
                for resource in avail:
                    amount = 1 if resource == RESOURCE_PODS else pod_usage.get(resource, 0)
                    avail[resource] -= amount
                    source.usage[resource] = source.usage.get(resource, 0) - amount
                    if prod:
                        source.prod_usage[resource] = source.prod_usage.get(resource, 0) - amount
