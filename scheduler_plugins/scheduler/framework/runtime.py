"""The runtime of one profile: instantiates its plugins and runs each extension point in order.

Every method returns Status values; the scheduling loop (`framework/scheduling.py`, the extender's
verbs) decides what a failure means. The plugins are held by extension point, typed
(`ExtensionPoints`). Transformers (`pkg/scheduler/frameworkext/interface.go`) run only for plugins
enabled at the matching point, in profile order. Plugins that keep caches of cluster objects are
subscribed to the cluster state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

import numpy as np
import numpy.typing as npt

from colocate.cluster.plugins import IN_TREE, PLUGIN_FAILURES, PluginError
from scheduler_plugins.scheduler.framework import interfaces as fi
from scheduler_plugins.scheduler.framework.batch import BatchFilter
from scheduler_plugins.scheduler.framework.config import Profile
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.guard import guard
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.points import ExtensionPoints
from scheduler_plugins.scheduler.framework.registry import Registry
from scheduler_plugins.scheduler.framework.status import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    Status,
    error,
)
from scheduler_plugins.scheduler.framework.waiting import WaitingPod
from scheduler_plugins.scheduler.podinfo import PodInfo, clone


@dataclass
class PluginScores:
    """One score plugin's row: raw (what Score returned), normalised, and its weight."""

    plugin: str
    weight: int
    raw: list[int]
    normalized: list[int]


@dataclass
class ScoreTable:
    nodes: list[NodeInfo]
    plugins: list[PluginScores]
    totals: list[int]
    #: `totals` as an int64 array (what the scheduling loop and the extender compute with)
    total_array: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class Framework:
    def __init__(self, profile: Profile, registry: Registry, handle: Handle) -> None:
        self.profile = profile
        self.handle = handle
        self.plugins: dict[str, object] = {}
        handle.filtering = self
        handle.pre_filter = self.run_pre_filter
        for name in profile.plugin_names():
            source = registry.source(name)
            if source == IN_TREE:
                self.plugins[name] = registry[name].factory(profile.args.get(name), handle)
                continue
            try:
                self.plugins[name] = plugin = registry[name].factory(profile.args.get(name), handle)
            except PLUGIN_FAILURES as exc:  # a third-party constructor: one line, exit 2
                raise PluginError(
                    f"scheduler plugin {name} from distribution {source} failed to start: {exc!r}"
                ) from exc
            guard(plugin, name)
        self.points = points = ExtensionPoints.from_profile(profile, self.plugins)
        handle.nominate_reservation_filters = [
            p for p in points.filter if isinstance(p, fi.NominateReservationFilterPlugin)
        ]
        self.score_weights = {ref.name: ref.weight for ref in profile.enabled("score")}
        self._scorers = [
            (
                p,
                self.score_weights[p.name],
                p.normalize_score if isinstance(p, fi.ScoreExtensions) else None,
                v.score_array if isinstance(v := fi.vector_path(p), fi.VectorScore) else None,
            )
            for p in points.score
        ]
        self.before_pre_filter = [p for p in points.pre_filter if isinstance(p, fi.BeforePreFilterTransformer)]
        self.after_pre_filter = [p for p in points.pre_filter if isinstance(p, fi.AfterPreFilterTransformer)]
        self.before_filter = [p for p in points.filter if isinstance(p, fi.BeforeFilterTransformer)]
        self.before_score = [p for p in points.score if isinstance(p, fi.BeforeScoreTransformer)]
        self.after_post_filter = [p for p in points.post_filter if isinstance(p, fi.AfterPostFilterTransformer)]
        self._batch = BatchFilter()
        #: whether Filter and Score may use the plugins' batch forms; off, every node is asked one
        #: by one (the reference the batch forms must agree with)
        self.batch = True
        #: each Filter plugin with a vector path, and that path
        self._batch_filters = {
            p.name: (p, v) for p in points.filter if isinstance(v := fi.vector_path(p), fi.VectorFilter)
        }
        self.next_pod_plugins = [p for p in points.pre_enqueue if isinstance(p, fi.NextPodPlugin)]
        self.pre_bind_extensions = [p for p in points.pre_bind if isinstance(p, fi.PreBindExtensions)]
        self.pre_filter_extensions = [p for p in points.pre_filter if isinstance(p, fi.PreFilterExtensions)]
        for plugin in self.plugins.values():
            if isinstance(plugin, (fi.ClusterListener, fi.PodListener, fi.ObjectListener, fi.ReservationListener)):
                handle.cluster.subscribe(plugin)

    def warm_up(self) -> None:
        """Let every plugin that can build its per-node state now (`WarmUpPlugin`)."""
        for plugin in self.plugins.values():
            if isinstance(plugin, fi.WarmUpPlugin):
                plugin.warm_up()

    # --- queueing --------------------------------------------------------------------------------
    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.points.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_next_pod(self, queued: Mapping[str, PodInfo]) -> PodInfo | None:
        """The pod a NextPod plugin wants scheduled next (one of `queued`), or None: take the queue's."""
        for plugin in self.next_pod_plugins:
            chosen = plugin.next_pod(queued)
            if chosen is not None and chosen.key in queued:
                return chosen
        return None

    def sort_pods(self, pods: list[PodInfo]) -> list[PodInfo]:
        """Queue order: the QueueSort plugin's `less`, ties kept in arrival order."""
        if not self.points.queue_sort:
            return list(pods)
        less = self.points.queue_sort[0].less

        def compare(a: PodInfo, b: PodInfo) -> int:
            return -1 if less(a, b) else (1 if less(b, a) else 0)

        return sorted(pods, key=cmp_to_key(compare))

    # --- filtering -------------------------------------------------------------------------------
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, without: frozenset[str] = frozenset()
    ) -> tuple[PodInfo, fi.PreFilterResult | None, Status]:
        """Transformers and PreFilter plugins in order; `without` names plugins left out (a
        preempting PostFilter re-runs PreFilter without the plugin whose rejection it resolves)."""
        for transformer in self.before_pre_filter:
            new_pod, transformed, status = transformer.before_pre_filter(state, pod)
            if not status.is_success:
                return pod, None, status.with_plugin(transformer.name)
            if transformed:
                pod = new_pod
        names: frozenset[str] | None = None
        for plugin in self.points.pre_filter:
            if plugin.name in without:
                continue
            result, status = plugin.pre_filter(state, pod)
            if status.is_skip:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if not status.is_success:
                return pod, None, status.with_plugin(plugin.name)
            if result is not None and result.node_names is not None:
                names = result.node_names if names is None else names & result.node_names
        merged = fi.PreFilterResult(names)
        for checker in self.after_pre_filter:
            status = checker.after_pre_filter(state, pod, merged)
            if not status.is_success:
                return pod, None, status.with_plugin(checker.name)
        return pod, merged, SUCCESS

    def _before_filter_scope(self, state: CycleState) -> frozenset[str] | None:
        """The nodes BeforeFilter transformers may change for this cycle's pod; None: any node."""
        limits = state.before_filter_nodes
        scope: frozenset[str] = frozenset()
        for plugin in self.before_filter:
            limit = limits.get(plugin.name)
            if limit is None:
                return None
            scope = scope | limit
        return scope

    def _transform_for_filter(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[PodInfo, NodeInfo, Status]:
        limits = state.before_filter_nodes
        for plugin in self.before_filter:
            limit = limits.get(plugin.name)
            if limit is not None and node.name not in limit:
                continue
            new_pod, new_node, transformed, status = plugin.before_filter(state, pod, node)
            if not status.is_success:
                return pod, node, status.with_plugin(plugin.name)
            if transformed:
                pod, node = new_pod, new_node
        return pod, node, SUCCESS

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """The first failing Filter's status for this node, or Success."""
        if self.before_filter:
            pod, node, status = self._transform_for_filter(state, pod, node)
            if not status.is_success:
                return status
        skip = state.skip_filter_plugins
        for plugin in self.points.filter:
            if skip and plugin.name in skip:
                continue
            status = plugin.filter(state, pod, node)
            if status.code is not Code.Success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    # --- PreFilter extensions and nominated pods ---------------------------------------------------
    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status:
        """Every PreFilter extension's AddPod, in order, except for plugins PreFilter skipped."""
        return self._run_pre_filter_extensions("AddPod", state, pod, other, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status:
        """Every PreFilter extension's RemovePod, in order, except for plugins PreFilter skipped."""
        return self._run_pre_filter_extensions("RemovePod", state, pod, other, node)

    def _run_pre_filter_extensions(
        self, verb: str, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo
    ) -> Status:
        skip = state.skip_filter_plugins
        for plugin in self.pre_filter_extensions:
            if plugin.name in skip:
                continue
            run = plugin.add_pod if verb == "AddPod" else plugin.remove_pod
            status = run(state, pod, other, node)
            if not status.is_success:
                return error(f"running {verb} on PreFilter plugin {plugin.name}: {status.message}").with_plugin(
                    plugin.name
                )
        return SUCCESS

    def _nominated_for(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """The pods nominated to the node that this pod must leave room for: equal or higher
        priority, not the pod itself, still pending (a nominated pod that is gone is forgotten)."""
        pending = self.handle.cluster.pending
        nominator = self.handle.nominator
        out = []
        for p in nominator.pods_for(node_name):
            if p.key not in pending:
                nominator.delete(p.key)
            elif p.key != pod.key and p.priority >= pod.priority:
                out.append(p)
        return out

    def run_filter_with_nominated_pods(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        """Filter as if the pods nominated to the node were on it (kube's
        RunFilterPluginsWithNominatedPods): first with them added (their room is taken), then,
        when any were added and that passed, without them (a plugin such as inter-pod affinity may
        pass only because of them); the pod fits only if both pass."""
        nominated = self._nominated_for(pod, node.name) if len(self.handle.nominator) else ()
        if not nominated:
            return self.run_filter(state, pod, node)
        with_nominated, node_with = state.clone(), node.copy()
        for other in nominated:
            node_with.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(with_nominated, pod, other, node_with)
            if not status.is_success:
                return status
        status = self.run_filter(with_nominated, pod, node_with)
        if not status.is_success:
            return status
        return self.run_filter(state, pod, node)

    def _nominated_nodes(self, pod: PodInfo) -> frozenset[str]:
        """Nodes whose nominated pods this pod must count (none, the common case, costs nothing)."""
        nominator = self.handle.nominator
        if not len(nominator):
            return frozenset()
        return frozenset(n for n in nominator.nodes() if self._nominated_for(pod, n))

    def find_feasible(
        self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], wanted: int | None = None, start: int = 0
    ) -> tuple[list[NodeInfo], dict[str, Status], int]:
        """Filter `nodes` from index `start` (wrapping) until `wanted` feasible nodes are found
        (kube-scheduler's findNodesThatPassFilters). Returns (feasible, failed statuses, nodes
        processed). This is `run_filter` over many nodes, with the plugin loop inlined: it is the
        hottest loop of the scheduler."""
        total = len(nodes)
        wanted = total if wanted is None else wanted
        feasible: list[NodeInfo] = []
        failed: dict[str, Status] = {}
        scope = self._before_filter_scope(state) if self.before_filter else frozenset()
        nominated = self._nominated_nodes(pod)
        if scope is not None and nominated:
            scope = scope | nominated  # filtered one by one, with their nominated pods
        if scope is None:  # transformers may swap the pod or node anywhere: no batch, no inlining
            one_by_one = self.run_filter_with_nominated_pods if nominated else self.run_filter
            plugins: list[tuple[str, Any]] = [("", one_by_one)]
        else:
            skip = state.skip_filter_plugins
            active = [p for p in self.points.filter if p.name not in skip]
            if self.batch and total and all(p.name in self._batch_filters for p in active):
                batch = [self._batch_filters[p.name] for p in active]
                # the few nodes a transformer changes are filtered one by one, the rest in batch
                overrides = (
                    {n.name: self.run_filter_with_nominated_pods(state, pod, n) for n in nodes if n.name in scope}
                    if scope
                    else {}
                )
                found = self._batch.find_feasible(state, pod, nodes, batch, wanted, start, overrides)
                if found is not None:
                    return found
            plugins = [("", self.run_filter_with_nominated_pods)] if scope else [(p.name, p.filter) for p in active]
        success = Code.Success
        processed = 0
        for offset in range(total):
            node = nodes[(start + offset) % total] if start else nodes[offset]
            processed += 1
            for name, filter_ in plugins:
                status = filter_(state, pod, node)
                if status.code is not success:
                    failed[node.name] = status.with_plugin(name) if name else status
                    break
            else:
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
        return feasible, failed, processed

    def explain_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[Status, list[Status]]:
        """Every Filter plugin's status for this node (Skip for plugins PreFilter skipped); the node's
        outcome is still the first failure. Later plugins run for information only."""
        pod, node, status = self._transform_for_filter(state, pod, node)
        if not status.is_success:
            return status, [status]
        rows: list[Status] = []
        first = SUCCESS
        for plugin in self.points.filter:
            if plugin.name in state.skip_filter_plugins:
                rows.append(SKIP.with_plugin(plugin.name))
                continue
            status = plugin.filter(state, pod, node).with_plugin(plugin.name)
            rows.append(status)
            if first.is_success and not status.is_success:
                first = status
        return first, rows

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[fi.PostFilterResult | None, Status]:
        result, final = None, Status(Code.Unschedulable, ("no postFilter plugin made the pod schedulable",))
        for plugin in self.points.post_filter:
            result, status = plugin.post_filter(state, pod, statuses)
            if status.is_success or status.code is Code.Error:
                final = status.with_plugin(plugin.name)
                break
        for plugin in self.after_post_filter:
            plugin.after_post_filter(state, pod, statuses, final)
        return result, final

    # --- scoring ---------------------------------------------------------------------------------
    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        for plugin in self.points.pre_score:
            status = plugin.pre_score(state, pod, nodes)
            if status.is_skip:
                state.skip_score_plugins.add(plugin.name)
            elif not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[ScoreTable, Status]:
        """Score, NormalizeScore and weights; `totals[i] = Σ weight × normalised score`."""
        for transformer in self.before_score:
            new_pod, new_nodes, transformed, status = transformer.before_score(state, pod, nodes)
            if not status.is_success:
                return ScoreTable(nodes, [], []), status.with_plugin(transformer.name)
            if transformed:
                pod, nodes = new_pod, new_nodes
        rows: list[PluginScores] = []
        totals = np.zeros(len(nodes), dtype=np.int64)
        success = Code.Success
        for plugin, weight, normalizer, score_array in self._scorers:
            if plugin.name in state.skip_score_plugins:
                continue
            values = None
            if score_array is not None and self.batch:
                index = self._batch.indexes(nodes)
                values = None if index is None else score_array(state, pod, nodes, index)
            if values is not None:
                raw = values.tolist()
            else:
                score = plugin.score
                raw = []
                for node in nodes:
                    value, status = score(state, pod, node)
                    if status.code is not success:
                        return ScoreTable(nodes, rows, totals.tolist()), status.with_plugin(plugin.name)
                    raw.append(value)
            normalized = raw
            if normalizer is not None:
                scored = [fi.NodeScore(node.name, value) for node, value in zip(nodes, raw, strict=True)]
                status = normalizer(state, pod, scored)
                if not status.is_success:
                    return ScoreTable(nodes, rows, totals.tolist()), status.with_plugin(plugin.name)
                normalized = [s.score for s in scored]
                values = None
            if values is None:
                values = np.asarray(normalized, dtype=np.int64)
            if len(values) and (values.min() < MIN_NODE_SCORE or values.max() > MAX_NODE_SCORE):
                bad = next(v for v in normalized if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)
                return ScoreTable(nodes, rows, totals.tolist()), error(
                    f"plugin {plugin.name} returned an invalid score {bad}"
                ).with_plugin(plugin.name)
            rows.append(PluginScores(plugin.name, weight, raw, normalized))
            totals += values * weight
        return ScoreTable(nodes, rows, totals.tolist(), totals), SUCCESS

    # --- reserve, permit, binding ----------------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Reserve in order; on the first failure Unreserve every reserve plugin in reverse."""
        for plugin in self.points.reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success:
                self.run_unreserve(state, pod, node_name)
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for plugin in reversed(self.points.reserve):
            plugin.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Success, a rejection, or Wait: then the pod is parked in `handle.waiting` until every
        plugin that asked for Wait allows it, one rejects it, or the longest timeout passes."""
        wait, pending = 0.0, set()
        for plugin in self.points.permit:
            status, timeout = plugin.permit(state, pod, node_name)
            if status.code is Code.Wait:
                wait = max(wait, timeout)
                pending.add(plugin.name)
            elif not status.is_success:
                return status.with_plugin(plugin.name)
        if not pending:
            return SUCCESS
        self.handle.waiting.add(WaitingPod(pod, node_name, state, self.handle.clock() + wait, wait, pending))
        return Status(Code.Wait, (f"waiting on permit of {', '.join(sorted(pending))}",), ",".join(sorted(pending)))

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind plugins mutate a deep copy; PreBindExtensions turn the change into one patch."""
        modified = PodInfo(clone(pod.obj))
        for plugin in self.points.pre_bind:
            status = plugin.pre_bind(state, modified, node_name)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        for plugin in self.pre_bind_extensions:
            status = plugin.apply_patch(state, pod.obj, modified.obj)
            if status.is_skip:
                continue
            return status if status.is_success else status.with_plugin(plugin.name)
        return SUCCESS

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.points.bind:
            status = plugin.bind(state, pod, node_name)
            if status.is_skip:
                continue
            return status if status.is_success else status.with_plugin(plugin.name)
        return error("every bind plugin skipped the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for plugin in self.points.post_bind:
            plugin.post_bind(state, pod, node_name)

    def run_reserve_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """The end of the scheduling cycle: Reserve, then Permit; a rejection unreserves. Wait
        means the pod is parked (see `run_permit`); its binding cycle runs once it is allowed."""
        status = self.run_reserve(state, pod, node_name)
        if not status.is_success:
            return status
        status = self.run_permit(state, pod, node_name)
        if status.is_rejected or status.code is Code.Error:
            self.run_unreserve(state, pod, node_name)
        return status

    def run_binding_cycle(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """PreBind, Bind, then PostBind on success; a failure unreserves."""
        status = self.run_pre_bind(state, pod, node_name)
        if status.is_success:
            status = self.run_bind(state, pod, node_name)
        if not status.is_success:
            self.run_unreserve(state, pod, node_name)
            return status
        self.run_post_bind(state, pod, node_name)
        return SUCCESS

    def finish_waiting(self, waiting: WaitingPod) -> Status:
        """A settled waiting pod: its binding cycle if allowed, else Unreserve. Removes it."""
        self.handle.waiting.remove(waiting.pod.key)
        outcome = waiting.outcome
        if outcome is None or not outcome.is_success:
            self.run_unreserve(waiting.state, waiting.pod, waiting.node_name)
            return outcome or Status(Code.Unschedulable, ("still waiting on permit",))
        return self.run_binding_cycle(waiting.state, waiting.pod, waiting.node_name)
