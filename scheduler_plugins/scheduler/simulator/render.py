"""Plain-text tables for `simulate`, `explain` and `quota` with `-o table`."""

from __future__ import annotations

import json
from typing import Any

from colocate.cli.output import table
from scheduler_plugins.scheduler.plugins.elasticquota.report import quota_rows


def _percentages(values: dict[str, float]) -> str:
    return " ".join(f"{name.removeprefix('kubernetes.io/')}={v:g}%" for name, v in values.items()) or "-"


def simulation_table(report: dict[str, Any]) -> str:
    placements = table(
        ["POD", "NODE", "RESULT"],
        [
            [
                p["pod"],
                p["node"] or "-",
                (
                    f"score {p['score']}"
                    if p["node"] and p.get("score") is not None
                    else ("scheduled" if p["node"] else f"{p['code']}: {p.get('message', '')}")
                )
                + (f" (reservation {p['reservation']})" if p.get("reservation") else "")
                + (f" (waited on permit: {p['waitedOnPermit']})" if p.get("waitedOnPermit") else "")
                + (
                    f" (preempted {', '.join(v['pod'] for v in p['victims']) or 'nothing'} on {p['nominatedNode']})"
                    if p.get("preemptedBy")
                    else (f" (nominated to {p['nominatedNode']})" if p.get("nominatedNode") else "")
                ),
            ]
            for p in report["placements"]
        ],
    )
    nodes = table(
        ["NODE", "PODS", "BEFORE", "AFTER"],
        [
            [n["name"], f"{n['podsBefore']}->{n['podsAfter']}", _percentages(n["before"]), _percentages(n["after"])]
            for n in report["nodes"]
        ],
    )
    reservations = ""
    if report.get("reservations"):
        reservations = "\n\n" + table(
            ["RESERVATION", "NODE", "PHASE", "HOLDING", "CONSUMED BY"],
            [
                [r["name"], r["node"] or "-", r["phase"], "yes" if r["holding"] else "no", ",".join(r["owners"]) or "-"]
                for r in report["reservations"]
            ],
        )
    s = report["summary"]
    summary = (
        f"{s['scheduled']}/{s['pods']} pods scheduled, {s['unschedulable']} unschedulable, "
        f"{s['seconds']}s ({s['podsPerSecond']} pods/s)"
    )
    return f"{placements}\n\n{nodes}{reservations}\n\n{summary}"


#: filter outcomes that are not failures: passed, or the plugin had nothing to say (`Skip`)
NOT_FAILURES = frozenset({"Success", "Skip"})


def explain_table(report: dict[str, Any]) -> str:
    rows = []
    for node in report["nodes"]:
        failures = [
            f"{f['plugin']}: {f['code']}" + (f" ({'; '.join(f['reasons'])})" if f["reasons"] else "")
            for f in node["filters"]
            if f["code"] not in NOT_FAILURES
        ]
        scores = " ".join(f"{s['plugin']}={s['raw']}/{s['normalized']}x{s['weight']}" for s in node["scores"])
        rows.append(
            [
                node["name"],
                "yes" if node["feasible"] else "no",
                node["total"],
                scores or "-",
                "; ".join(failures) or "-",
            ]
        )
    lines = [
        f"pod {report['pod']}",
        table(["NODE", "FEASIBLE", "TOTAL", "SCORES (raw/normalized x weight)", "FILTER FAILURES"], rows),
    ]
    for node in report["nodes"]:
        for plugin, detail in (node.get("details") or {}).items():
            lines.append(f"{node['name']} {plugin}: {json.dumps(detail, separators=(',', ':'))}")
    if report.get("reservationNodes"):
        lines.append(f"reservations usable on: {', '.join(report['reservationNodes'])}")
    for preemption in report.get("preemption") or ():
        lines.append(_preemption_lines(preemption))
    if report.get("error"):
        lines.append(f"error: {report['error']}")
    lines.append(f"selected: {report['selected'] or '-'}")
    return "\n".join(lines)


def _preemption_lines(preemption: dict[str, Any]) -> str:
    """What a preempting PostFilter plugin would do: the node, each victim and why."""
    head = f"{preemption['plugin']}: " + (
        f"would preempt on {preemption['nominatedNode']}"
        if preemption.get("nominatedNode")
        else f"would not preempt ({preemption.get('message', '')})"
    )
    chosen = [c for c in preemption["candidates"] if c["node"] == preemption.get("nominatedNode")]
    rows = [[c["node"], v["pod"], "evict", v["reason"]] for c in chosen for v in c["victims"]]
    rows += [[c["node"], r["pod"], "keep", r["reason"]] for c in chosen for r in c["reprieved"]]
    return "\n".join([head, table(["NODE", "POD", "ACTION", "WHY"], rows)] if rows else [head])


def quota_table(report: dict[str, Any]) -> str:
    return table(["QUOTA", "RESOURCE", "MIN", "MAX", "REQUEST", "USED", "RUNTIME"], quota_rows(report))
