"""BECPUIdle: put every BE pod's cgroup under SCHED_IDLE (`cpu.idle = 1`).

A QoS strategy returns what to write, never writes: `koordlet plan` prints it, `koordlet run`
applies it. Enabled with `--qos-extension-plugins BECPUIdle=true`; it runs after the built-in
strategies on the reconcile interval. Pods that are not BE are left alone (a pod that stops being BE
is recreated by Kubernetes, so there is nothing to undo).
"""

from __future__ import annotations

from typing import Any

from colocate.api.koordlet import (
    CgroupWrite,
    Level,
    RoundInput,
    StrategyOptions,
    StrategyResult,
    resources,
    strategy_entry,
)

NAME = "BECPUIdle"


class BECPUIdle:
    name = NAME

    def __init__(self, options: StrategyOptions) -> None:
        self.interval = options.reconcile_interval

    def enabled(self) -> bool:
        return self.interval > 0  # its gate was checked before it was built

    def setup(self, ctx: Any) -> None:
        return None

    def round(self, inp: RoundInput) -> StrategyResult:
        result = StrategyResult(NAME)
        be = [pod for pod in inp.pods if pod.is_be]
        result.writes = [CgroupWrite(NAME, pod.dir, resources.CPU_IDLE, 1, Level.POD) for pod in be]
        result.status["idlePods"] = len(be)
        return result


#: what the `colocate.koordlet.strategies` entry point names
ENTRY = strategy_entry(NAME, BECPUIdle)
