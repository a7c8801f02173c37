"""The Evictor proxy every plugin evicts through (Koordinator's `runtime/evictor_proxy.go`,
`pkg/descheduler/evictions/`), and the eviction limits.

`filter`/`pre_eviction_filter` are the AND of every enabled Filter plugin. `evict` asks the
limiter (per node, per namespace, total; reset each round), then — unless in dry run, where it
only records what it would do — calls the **first** enabled Evict plugin; a pod evicted (or, in dry
run, that would be) is counted by the limiter and reported with the plugin that asked. An Evict
plugin that migrates (`MigratingEvictPlugin`) is asked to `plan` under dry run, so the report
lists the PodMigrationJobs it would create.
"""

from __future__ import annotations

import contextvars
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from colocate.cluster.plugins import PLUGIN_FAILURES
from policies.apis.objects import name_of, namespace_of, node_name_of
from scheduler_plugins.descheduler.framework.interfaces import (
    EvictOptions,
    EvictPlugin,
    FilterPlugin,
    MigratingEvictPlugin,
    Object,
)
from scheduler_plugins.descheduler.framework.report import EvictionEntry, RoundReport

log = logging.getLogger("colocate.descheduler")

#: the plugin running now: copied into `EvictOptions.plugin_name` when the caller left it empty
current_plugin: contextvars.ContextVar[str] = contextvars.ContextVar("descheduler_plugin", default="")


@contextmanager
def running(plugin_name: str) -> Iterator[None]:
    token = current_plugin.set(plugin_name)
    try:
        yield
    finally:
        current_plugin.reset(token)


def pod_key(pod: Object) -> str:
    return f"{namespace_of(pod) or 'default'}/{name_of(pod)}"


@dataclass(frozen=True)
class EvictionLimits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


class EvictionLimiter:
    """Counts the round's evictions against the configured limits (None: unlimited)."""

    def __init__(self, limits: EvictionLimits) -> None:
        self.limits = limits
        self.by_node: Counter[str] = Counter()
        self.by_namespace: Counter[str] = Counter()
        self.total = 0

    def reset(self) -> None:
        self.by_node.clear()
        self.by_namespace.clear()
        self.total = 0

    def refusal(self, node: str, namespace: str) -> str | None:
        """Why one more eviction on `node` in `namespace` is over a limit, or None."""
        limits = self.limits
        if limits.total is not None and self.total >= limits.total:
            return f"maximum number of pods evicted per round reached (maxNoOfPodsToEvictTotal={limits.total})"
        if limits.per_node is not None and self.by_node[node] >= limits.per_node:
            return (
                f"maximum number of pods evicted from node {node} reached (maxNoOfPodsToEvictPerNode={limits.per_node})"
            )
        if limits.per_namespace is not None and self.by_namespace[namespace] >= limits.per_namespace:
            return (
                f"maximum number of pods evicted from namespace {namespace} reached "
                f"(maxNoOfPodsToEvictPerNamespace={limits.per_namespace})"
            )
        return None

    def count(self, node: str, namespace: str) -> None:
        self.by_node[node] += 1
        self.by_namespace[namespace] += 1
        self.total += 1


class Evictor:
    """One profile's proxy; the limiter is shared by every profile (the limits are global)."""

    def __init__(
        self, filters: Sequence[FilterPlugin], evicts: Sequence[EvictPlugin], limiter: EvictionLimiter, dry_run: bool
    ) -> None:
        self.filters, self.evicts, self.limiter, self.dry_run = tuple(filters), tuple(evicts), limiter, dry_run
        self.report = RoundReport(0)

    def filter(self, pod: Object) -> bool:
        """Every Filter plugin lets the pod be considered; one that raises says no (and is reported)."""
        for plugin in self.filters:
            try:
                if not plugin.filter(pod):
                    return False
            except PLUGIN_FAILURES as exc:  # a plugin's bug keeps the pod, and is reported
                self._raised(plugin.name, exc)
                return False
        return True

    def pre_eviction_filter(self, pod: Object) -> bool:
        for plugin in self.filters:
            try:
                if not plugin.pre_eviction_filter(pod):
                    return False
            except PLUGIN_FAILURES as exc:
                self._raised(plugin.name, exc)
                return False
        return True

    def _raised(self, plugin: str, exc: BaseException) -> None:
        """A Filter or Evict plugin raised: the pod stays; the round's report names the plugin once."""
        line = f"plugin {plugin} raised {type(exc).__name__}: {exc}; the pods it was asked about stay"
        if not any(f.startswith(f"plugin {plugin} raised") for f in self.report.failed_plugins):
            log.error("%s", line)
            self.report.failed_plugins.append(line)

    def evict(self, pod: Object, options: EvictOptions | None = None) -> bool:
        if not self.evicts:
            raise RuntimeError("the Evictor has no Evict plugin: a profile must enable one")
        options = options or EvictOptions()
        if not options.plugin_name:
            options = replace(options, plugin_name=current_plugin.get())
        node, namespace = node_name_of(pod), namespace_of(pod) or "default"
        entry = EvictionEntry(pod_key(pod), node, options.plugin_name, options.reason)
        refusal = self.limiter.refusal(node, namespace)
        if refusal is not None:
            log.debug("not evicting %s: %s", entry.pod, refusal)
            self.report.skipped.append(replace(entry, reason=refusal))
            return False
        first = self.evicts[0]
        jobs_before = len(self.report.migrations)
        try:
            if self.dry_run:
                log.info("would evict %s from %s (dry run, %s): %s", entry.pod, node, entry.plugin, entry.reason)
                if isinstance(first, MigratingEvictPlugin) and not first.plan(pod, options):
                    return False
            elif not first.evict(pod, options):
                return False
        except PLUGIN_FAILURES as exc:  # a raising Evict plugin answers "no": the pod stays
            self._raised(first.name, exc)
            return False
        self.limiter.count(node, namespace)
        if not self.dry_run and len(self.report.migrations) > jobs_before:
            self.report.migrating.append(entry)  # a PodMigrationJob: an eviction once it evicts
        else:
            self.report.evictions.append(entry)
        return True
