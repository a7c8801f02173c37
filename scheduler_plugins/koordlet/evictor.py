"""The Evictor: an eviction decided by a strategy, carried out through the Eviction API
(`policy/v1`) with an Event on the pod.

`only_evict_by_api` (koordlet's `--only-evict-by-api`, default false): when true a pod counts as
evicted only if the API call succeeded; when false the pod's processes are killed first (SIGKILL
to every pid in its cgroup, as koordlet kills its containers), so the resource is released even
when a PodDisruptionBudget blocks the eviction.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from colocate.cluster.eviction import EvictionClient, Outcome
from scheduler_plugins.koordlet.refusals import Recorder
from scheduler_plugins.koordlet.strategies.base import Eviction

log = logging.getLogger("colocate.koordlet.evictor")


@dataclass(frozen=True)
class EvictOutcome:
    eviction: Eviction
    outcome: str  # evicted | killed | blocked | gone | failed | dry-run
    message: str = ""

    @property
    def released(self) -> bool:
        return self.outcome in ("evicted", "killed", "gone", "dry-run")


def kill_pids(procs_files: Iterable[Path], kill: Callable[[int, int], None] = os.kill) -> int:
    """SIGKILL every pid listed in the cgroup.procs files; the count killed."""
    killed = 0
    for procs in procs_files:
        try:
            pids = [int(line) for line in procs.read_text().split()]
        except (OSError, ValueError):
            continue
        for pid in pids:
            try:
                kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                continue
            except OSError as exc:
                log.warning("cannot kill pid %d: %s", pid, exc)
    return killed


class Evictor:
    def __init__(
        self,
        client: EvictionClient | None,
        recorder: Recorder | None,
        only_evict_by_api: bool,
        dry_run: bool,
        procs_files: Callable[[Eviction], list[Path]] | None = None,
    ) -> None:
        self.client, self.recorder = client, recorder
        self.only_evict_by_api, self.dry_run = only_evict_by_api, dry_run
        self.procs_files = procs_files

    def evict(self, eviction: Eviction) -> EvictOutcome:
        """Blocking (API call): run it off the event loop."""
        if self.dry_run:
            log.info("dry-run: evict %s (%s): %s", eviction.key, eviction.strategy, eviction.reason)
            return EvictOutcome(eviction, "dry-run")
        killed = False
        if not self.only_evict_by_api and self.procs_files is not None:
            killed = kill_pids(self.procs_files(eviction)) > 0
        namespace, _, name = eviction.key.partition("/")
        if self.client is None:
            outcome = EvictOutcome(eviction, "killed" if killed else "failed", "no API server to evict through")
        else:
            result = self.client.evict(namespace, name)
            if result.outcome is Outcome.EVICTED:
                outcome = EvictOutcome(eviction, "evicted")
            elif result.outcome is Outcome.GONE:
                outcome = EvictOutcome(eviction, "gone", result.message)
            elif killed:
                outcome = EvictOutcome(eviction, "killed", result.message)
            else:
                outcome = EvictOutcome(eviction, result.outcome.value, result.message)
        if self.recorder is not None:
            ok = outcome.outcome in ("evicted", "killed")
            self.recorder.record(
                eviction.pod,
                "Normal" if ok else "Warning",
                "evictPodSuccess" if ok else "evictPodFail",
                f"evicted by koordlet {eviction.strategy}: {eviction.reason}"
                if ok
                else f"koordlet {eviction.strategy} could not evict: {outcome.message}",
            )
        log.info("evict %s (%s): %s %s", eviction.key, eviction.strategy, outcome.outcome, outcome.message)
        return outcome
