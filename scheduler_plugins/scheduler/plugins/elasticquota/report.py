"""`colocate scheduler quota`: the runtime quota tree as a report (quantities as Kubernetes text).

Every quota is listed once, the root (whose runtime is the total the top-level quotas share: the
nodes' allocatable less what the system and default quotas use) first, then by name. Per resource:
`min`, `max`, `request` (what the quota asks of its parent: its live pods, pending ones included,
and its children's requests limited by their max), `used` (bound and reserved pods) and `runtime`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.constants import DEFAULT_QUOTA_NAME, ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME
from policies.quantity import scalar_text
from scheduler_plugins.scheduler.plugins.elasticquota.manager import QuotaManager


def _text(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: scalar_text(name, resources[name]) for name in sorted(resources)}


def quota_report(manager: QuotaManager) -> dict[str, Any]:
    states = manager.states()
    order = [ROOT_QUOTA_NAME, *sorted(n for n in states if n != ROOT_QUOTA_NAME)]
    quotas = []
    for name in order:
        state = states[name]
        quotas.append(
            {
                "name": name,
                "parent": state.spec.parent,
                "min": _text(state.spec.min),
                "max": _text(state.spec.max),
                "request": _text(state.request),
                "used": _text(state.used),
                "runtime": _text(state.runtime),
            }
        )
    return {"quotas": quotas}


def _cell(resources: Mapping[str, str]) -> str:
    return ",".join(f"{k.removeprefix('kubernetes.io/')}={v}" for k, v in resources.items()) or "-"


def quota_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """Table rows: NAME, PARENT, MIN, MAX, REQUEST, USED, RUNTIME (the special quotas' huge max
    is shown as "-")."""
    rows = []
    for q in report["quotas"]:
        special = q["name"] in (SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME)
        rows.append(
            [
                q["name"],
                q["parent"] or "-",
                _cell(q["min"]),
                "-" if special else _cell(q["max"]),
                _cell(q["request"]),
                _cell(q["used"]),
                "-" if special else _cell(q["runtime"]),
            ]
        )
    return rows
