"""ONE function per verb, over the framework and the cluster state; the aiohttp adapter only moves
bytes. Two error families: a malformed request (`ArgsError`: a body that is not the wire type, or a
pod or node the API server could not have sent, answered 400 with the reason in Error) and a pod
the plugins reject (FailedNodes / FailedAndUnresolvableNodes). A bind whose PodUID is not the UID
of the pod it names is refused: a stale or forged bind never places another pod of the same name.

filter: PreFilter then Filter on each given node; a PreFilter rejection fails every node with its
code. prioritize: PreFilter (for the cycle state it leaves, e.g. the reservations a pod matches; its
verdict was filter's business), then PreScore, Score, NormalizeScore and weights; the weighted total is divided by the
sum of weights (so it stays 0..100) and scaled to 0..10 with `score × 10 // 100`. bind: PreFilter
(its cycle state again), Reserve, PreBind and Bind through the profile's plugins. preempt
(ProcessPreemption): the victims kube-scheduler chose, kept where colocate's plugins agree.

A third family: the cluster state is not there yet. An extender following the API server refuses
every verb with `NotSynced` until each watched kind has been listed once (the adapter answers 503,
which kube-scheduler counts as a failed extender call and retries the pod with backoff), rather
than judge pods against an empty or half-loaded cluster.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.extender import protocol as wire
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.guard import PluginRaised
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.preemption import Evaluator
from scheduler_plugins.scheduler.framework.runtime import Framework
from scheduler_plugins.scheduler.framework.status import Code, Status
from scheduler_plugins.scheduler.framework.waiting import WaitingPod
from scheduler_plugins.scheduler.podinfo import PodInfo

MAX_REMEMBERED_PODS = 10_000
RESOLVED_LISTS = 4
REASON_UNKNOWN_NODE = "node not found in the extender's cache"
REASON_PREFILTER_RESULT = "node(s) didn't satisfy plugin(s) PreFilter result"


class _GivenVictims:
    """The victims kube-scheduler chose are the only ones the extender may keep."""

    def __init__(self, uids: frozenset[str]) -> None:
        self.uids = uids

    def eligible(self, pod: PodInfo) -> tuple[bool, str]:
        return True, ""

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        return str(victim.metadata.get("uid") or "") in self.uids

    def num_candidates(self, nodes: int) -> int:
        return nodes


class NotSynced(Exception):
    """The cluster state has not been loaded yet: no verb can be answered truthfully."""


@dataclass
class _Resolved:
    """A NodeNames list resolved against `cluster.nodes` at `version` (`ClusterState.node_version`)."""

    names: list[str]
    version: int
    nodes: list[NodeInfo]
    unknown: dict[str, str]
    #: names of `nodes` (`names` itself when every name was known)
    hosts: list[str]


def _always() -> bool:
    return True


def _filter_error(status: Status) -> wire.ExtenderFilterResult:
    """The filter answer of a plugin error: no nodes, the plugin and its message in Error."""
    return {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": f"{status.plugin}: {status.message}",
    }


class ExtenderService:
    def __init__(
        self,
        framework: Framework,
        cluster: ClusterState,
        ready: Callable[[], bool] = _always,
        readiness: Callable[[], tuple[bool, str]] | None = None,
    ) -> None:
        self.framework = framework
        self.cluster = cluster
        self.ready = ready
        #: what /readyz answers: ready, and why not (or what it serves around)
        self.readiness = readiness or (lambda: (ready(), "ok" if ready() else "cluster state not synced"))
        self._seen: OrderedDict[str, PodInfo] = OrderedDict()
        framework.warm_up()  # before the server freezes the loaded state (see server.serve)
        #: the last few NodeNames lists resolved, most recent first
        self._resolved: list[_Resolved] = []

    def _require_sync(self) -> None:
        if not self.ready():
            raise NotSynced("the extender's cluster state is not synced with the API server yet")

    def _nodes(
        self, items: list[dict[str, Any]] | None, names: list[str] | None
    ) -> tuple[list[NodeInfo], dict[str, str]]:
        """The NodeInfos the request names (unknown names apart, with their reason). A name list
        equal to one of the last few resolved, with no node added or deleted since, resolves to the
        same list object: kube-scheduler sends the same feasible list for pod after pod, and the
        framework then also reuses that list's table indexes."""
        if names is None:
            nodes = []
            for item in items or []:
                cached = self.cluster.nodes.get(item["metadata"]["name"])
                nodes.append(cached if cached is not None else NodeInfo(item))
            return nodes, {}
        version = self.cluster.node_version
        for position, entry in enumerate(self._resolved):
            if entry.version == version and len(entry.names) == len(names) and entry.names == names:
                if position:
                    self._resolved.insert(0, self._resolved.pop(position))
                return entry.nodes, dict(entry.unknown)
        table = self.cluster.nodes
        found = [table.get(name) for name in names]
        if None in found:
            resolved = [node for node in found if node is not None]
            unknown = {name: REASON_UNKNOWN_NODE for name, node in zip(names, found, strict=True) if node is None}
        else:
            resolved, unknown = cast(list[NodeInfo], found), {}
        hosts = names if not unknown else [node.name for node in resolved]
        self._resolved = [_Resolved(names, version, resolved, unknown, hosts)] + self._resolved[: RESOLVED_LISTS - 1]
        return resolved, dict(unknown)

    def _resolved_entry(self, nodes: list[NodeInfo]) -> _Resolved | None:
        return next((entry for entry in self._resolved if entry.nodes is nodes), None)

    def _names_of(self, nodes: list[NodeInfo]) -> list[str]:
        """The names of `nodes`; for a list `_nodes` resolved, the ones it was resolved from."""
        entry = self._resolved_entry(nodes)
        return entry.hosts if entry is not None else [node.name for node in nodes]

    def _remember(self, pod: PodInfo) -> None:
        """Keep the pod so a later bind call (which carries only names) can find it; only the
        most recent MAX_REMEMBERED_PODS are kept, so a long-running extender does not grow."""
        self._seen.pop(pod.key, None)
        self._seen[pod.key] = pod
        while len(self._seen) > MAX_REMEMBERED_PODS:
            self._seen.popitem(last=False)

    def filter(self, body: Any) -> wire.ExtenderFilterResult:
        """An out-of-tree plugin that raises makes the answer's Error (its Status is Error)."""
        try:
            return self._filter(body)
        except PluginRaised as raised:
            return _filter_error(raised.status())

    def _filter(self, body: Any) -> wire.ExtenderFilterResult:
        """Raises ArgsError on a malformed body (the adapter answers 400 with it in Error)."""
        self._require_sync()
        pod_obj, items, names = wire.parse_extender_args(body)
        pod = PodInfo(pod_obj)
        self._remember(pod)
        nodes, unresolvable = self._nodes(items, names)
        failed: dict[str, str] = {}
        passed: list[NodeInfo] = []
        state = CycleState()
        pod, result, status = self.framework.run_pre_filter(state, pod)
        if status.code is Code.Error:
            return _filter_error(status)
        if not status.is_success:
            rejected = {node.name: status for node in nodes}
        else:
            if result is not None and result.node_names is not None:
                unresolvable.update({n.name: REASON_PREFILTER_RESULT for n in nodes if n.name not in result.node_names})
                nodes = [n for n in nodes if n.name in result.node_names]
            passed, rejected, _ = self.framework.find_feasible(state, pod, nodes)
        for name, node_status in rejected.items():
            target = unresolvable if node_status.code is Code.UnschedulableAndUnresolvable else failed
            target[name] = node_status.message or node_status.code.name
        if names is None:
            keep = {n.name for n in passed}
        return {
            "Nodes": (
                None if names is not None else {"items": [i for i in items or [] if i["metadata"]["name"] in keep]}
            ),
            # every node passed (in order: the walk starts at the first): the names asked about
            "NodeNames": (
                None
                if names is None
                else self._names_of(nodes)
                if len(passed) == len(nodes)
                else [n.name for n in passed]
            ),
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }

    def prioritize(self, body: Any) -> list[wire.HostPriority]:
        """Raises ArgsError on a malformed body (the adapter answers 400: the wire type has no Error)."""
        self._require_sync()
        pod_obj, items, names = wire.parse_extender_args(body)
        pod = PodInfo(pod_obj)
        nodes, _ = self._nodes(items, names)
        if not nodes:
            return []
        state = CycleState()
        try:
            pod, _, status = self.framework.run_pre_filter(state, pod)  # the state PreScore builds on
            if status.code is not Code.Error:
                status = self.framework.run_pre_score(state, pod, nodes)
            if status.is_success:
                table, status = self.framework.run_score(state, pod, nodes)
        except PluginRaised as raised:
            status = raised.status()
        if not status.is_success:
            raise RuntimeError(f"{status.plugin}: {status.code.name}: {status.message}")
        weight_sum = sum(p.weight for p in table.plugins)
        hosts = self._names_of(nodes)
        if not weight_sum:
            return [{"Host": host, "Score": 0} for host in hosts]
        scores = (table.total_array // weight_sum * wire.MAX_EXTENDER_PRIORITY // 100).tolist()
        return [{"Host": host, "Score": score} for host, score in zip(hosts, scores, strict=True)]

    def preempt(self, body: Any) -> wire.ExtenderPreemptionResult:
        """ProcessPreemption: of the victims kube-scheduler chose on each node, keep the nodes
        where colocate's plugins let the pod fit once they are gone, and on each the fewest of
        them (the shared evaluator's reprieve: budgets' pods given back first; the victims leave
        the plugins' own state through their PreFilter extensions, as in a PostFilter). A node whose
        victims the extender does not know, or where even all of them gone the pod does not pass
        colocate's Filter, is dropped; a pod PreFilter rejects drops every node. Raises ArgsError
        on a malformed body (the wire type has no Error field)."""
        self._require_sync()
        pod_obj, table = wire.parse_preemption_args(body)
        pod = PodInfo(pod_obj)
        state = CycleState()
        pod, _, status = self.framework.run_pre_filter(state, pod)
        out: dict[str, wire.MetaVictims] = {}
        if not status.is_success:
            return {"NodeNameToMetaVictims": out}
        fwk = self.framework
        evaluator = Evaluator(
            "extender", _GivenVictims(frozenset()), fwk, self.cluster.nodes, self.cluster.disruption_budgets()
        )
        for node_name, (uids, _) in sorted(table.items()):
            node = self.cluster.nodes.get(node_name)
            if node is None:
                continue
            by_uid = {str(p.metadata.get("uid") or ""): p for p in node.pods.values()}
            if not all(uid in by_uid for uid in uids):
                continue
            allowed = frozenset(uids)
            evaluator.policy = _GivenVictims(allowed)
            if not allowed:
                if fwk.run_filter_with_nominated_pods(state, pod, node).is_success:
                    out[node_name] = {"Pods": [], "NumPDBViolations": 0}
                continue
            candidate, _ = evaluator.select_victims_on_node(state, pod, node)
            if candidate is not None:
                out[node_name] = {
                    "Pods": [{"UID": str(v.pod.metadata.get("uid") or "")} for v in candidate.victims],
                    "NumPDBViolations": candidate.num_pdb_violations,
                }
        return {"NodeNameToMetaVictims": out}

    async def bind(self, body: Any) -> wire.ExtenderBindingResult:
        """Reserve and Permit, then the binding cycle. A pod that Permit parks (a gang member) is
        assumed on its node and its answer is held until it is allowed (its gang is complete) or
        rejected (its deadline passed, or its Strict gang was rejected): kube-scheduler runs each
        binding cycle in the background, so a held bind does not stop it from scheduling others."""
        self._require_sync()
        namespace, name, uid, node_name = wire.parse_binding_args(body)  # ArgsError: 400
        pod, _ = self.cluster.find_pod(namespace, name)
        if pod is not None and str(pod.metadata.get("uid") or "") != uid:
            return {"Error": f"PodUID {uid!r} is not the UID of pod {namespace}/{name}; not bound"}
        if pod is None and f"{namespace}/{name}" in self._seen:
            if str(self._seen[f"{namespace}/{name}"].metadata.get("uid") or "") != uid:
                return {"Error": f"PodUID {uid!r} is not the UID of pod {namespace}/{name}; not bound"}
            pod = self._seen.pop(f"{namespace}/{name}")
            self.cluster.pending[pod.key] = pod
        if pod is None:
            return {"Error": f"pod {namespace}/{name} is unknown to the extender (never seen in a filter call)"}
        if node_name not in self.cluster.nodes:
            return {"Error": f"node {node_name} is unknown to the extender"}
        state = CycleState()
        try:
            pod, _, status = self.framework.run_pre_filter(state, pod)  # the state Reserve builds on
            if status.is_success:
                status = self.framework.run_reserve_permit(state, pod, node_name)
            if status.code is Code.Wait:
                status = await self._wait_on_permit(pod, node_name)
            elif status.is_success:
                status = self.framework.run_binding_cycle(state, pod, node_name)
        except PluginRaised as raised:
            status = raised.status()
        return {"Error": "" if status.is_success else f"{status.plugin}: {status.message}"}

    async def _wait_on_permit(self, pod: PodInfo, node_name: str) -> Status:
        waiting = self.framework.handle.waiting.get(pod.key)
        if waiting is None:
            return Status(Code.Error, ("the pod waits on permit but is not parked",))
        self.cluster.assume(pod, node_name)
        settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake(_: WaitingPod) -> None:
            if not settled.done():
                settled.set_result(None)

        waiting.on_settle.append(wake)
        if waiting.outcome is None:
            try:
                await asyncio.wait_for(settled, max(0.0, waiting.deadline - self.framework.handle.clock()))
            except TimeoutError:
                self.framework.handle.waiting.expire(waiting.deadline)
        status = self.framework.finish_waiting(waiting)
        if not status.is_success:
            self.cluster.forget(pod, node_name)
        return status
