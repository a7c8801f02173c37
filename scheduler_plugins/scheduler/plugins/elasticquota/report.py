"""`colocate scheduler quota`: the runtime quota tree as a report (quantities as Kubernetes text).

Every quota is listed once, the root (whose runtime is the total the top-level quotas share: the
nodes' allocatable less what the system and default quotas use) first, then by name. Per resource:
`min`, `max`, `request` (what the quota asks of its parent: its live pods, pending ones included,
and its children's requests limited by their max), `used` (bound and reserved pods) and `runtime`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.apis.constants import DEFAULT_QUOTA_NAME, ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME
from policies.apis.quantity import scalar_text
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


COLUMNS = ("min", "max", "request", "used", "runtime")


def _children(report: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    children: dict[str, list[Mapping[str, Any]]] = {}
    for quota in report["quotas"]:
        children.setdefault(quota["parent"], []).append(quota)
    return children


def quota_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """Table rows of the tree: the quota (indented under its parent), then one row per resource it
    names, with its MIN, MAX, REQUEST, USED and RUNTIME; a quota that names none gets one row of
    "-". The special quotas' huge max and runtime are shown as "-". A quota whose parent is not in
    the tree is listed at the top level."""
    children = _children(report)
    names = {q["name"] for q in report["quotas"]}
    top = [q for q in report["quotas"] if not q["parent"] or q["parent"] not in names]
    rows: list[list[str]] = []

    def visit(quota: Mapping[str, Any], prefix: str, branch: str, seen: frozenset[str]) -> None:
        special = quota["name"] in (SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME)
        shown = {c: ({} if special and c in ("max", "runtime") else quota[c]) for c in COLUMNS}
        resources = sorted({r for c in COLUMNS for r in shown[c]}) or ["-"]
        below = [c for c in children.get(quota["name"], ()) if c["name"] not in seen]
        inner = prefix + ("│  " if branch == "├─ " else "   " if branch else "")
        guide = (inner + ("│" if below else "")).rstrip()  # the lines the tree continues with
        for i, resource in enumerate(resources):
            label = prefix + branch + quota["name"] if i == 0 else guide
            cells = [shown[c].get(resource, "-") for c in COLUMNS] if resource != "-" else ["-"] * len(COLUMNS)
            rows.append([label, resource.removeprefix("kubernetes.io/"), *cells])
        for j, child in enumerate(below):
            visit(child, inner, "└─ " if j == len(below) - 1 else "├─ ", seen | {child["name"]})

    for quota in top:
        visit(quota, "", "", frozenset({quota["name"]}))
    return rows
