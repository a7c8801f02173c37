"""The HTML report of `colocate whatif`: one self-contained page (plotly.js inlined from the
`plotly` package's offline bundle, no network when opened) that an operator reads in a minute.

It says what was asked (the inputs), answers in sentences with units (the summary), and shows the
timeline of used cpu by class against the nodes' capacity and the LS suppress threshold, pending
pods and evictions, and a node x time heat map of used cpu. Compared runs are named after their
profiles folders and laid out in one grid, so each row (summary, plot) lines up across the two.
Figures are plain plotly JSON built here, so the page is deterministic (no random element ids).

Everything a snapshot or workload spells (node names, folder names) is data: text is HTML-escaped,
and JSON inside `<script>` has `<`, `>` and `&` as `\\u` escapes, so no `</script>` or `<!--` in a
name can end the script. Why plotly: docs/whatif.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .pods import CLASSES
from .records import USED, RunResult

#: one height for every plot of a kind, so the rows of a comparison line up
PLOT_HEIGHT: Final = 340
_STYLE: Final = (
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1600px}"
    "h1{font-size:1.5em;margin:0 0 .5em}h2{font-size:1.2em;margin:.2em 0}"
    ".grid{display:grid;column-gap:2em;row-gap:.5em}"
    "table.inputs{border-collapse:collapse;margin-bottom:1em}"
    ".inputs th{text-align:left;padding:2px 12px 2px 0;font-weight:600;color:#555}.inputs td{padding:2px 0}"
    "ul.summary{margin:.2em 0;padding-left:1.2em;line-height:1.5}"
)


def script_json(value: Any) -> str:
    """`value` as JSON safe to embed in a `<script>` element: `<`, `>` and `&` escaped as `\\u`
    sequences (still the same JSON), so no string in it can close the element or open a comment."""
    text = json.dumps(value, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f} %"


def _wait(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def summary_sentences(run: RunResult, baseline: RunResult | None = None) -> list[str]:
    """The summary as sentences with units, each saying what a number means."""
    s = run.summary
    cpu, memory, pending = s["cpuUtilisation"], s["memoryUtilisation"], s["pendingSeconds"]
    sentences = [
        f"CPU used: {_percent(cpu['mean'])} of allocatable on average, {_percent(cpu['p95'])} at the 95th percentile.",
        f"Memory used: {_percent(memory['mean'])} of allocatable on average, "
        f"{_percent(memory['p95'])} at the 95th percentile.",
        f"Pods: {s['admitted']} admitted, {s['denied']} denied, {s['recreated']} re-created after an eviction.",
        f"Evictions: {s['evictionsPerHour']:g} per hour.",
        f"Waiting to be scheduled: half the pods waited {_wait(pending['p50'])} or less, "
        f"95 % waited {_wait(pending['p95'])} or less.",
        f"LS pods over their nodes' CPU threshold: {s['lsOverThresholdNodeMinutes']:g} node-minutes; "
        f"BE pods starved of CPU: {s['beStarvedPodMinutes']:g} pod-minutes.",
    ]
    gain = s.get("gainedOverA")
    if gain and baseline is not None:
        sentences.append(
            f"Compared with {baseline.title}: CPU used {gain['cpu'] * 100:+.1f} points, "
            f"memory used {gain['memory'] * 100:+.1f} points of allocatable on average."
        )
    return sentences


def _level(name: str, times: Sequence[str], value: float, colour: str) -> dict[str, Any]:
    """A dashed horizontal line across the timeline, in the legend under `name`."""
    x = [times[0], times[-1]] if times else []
    line = {"dash": "dash", "color": colour, "width": 2}
    return {"type": "scatter", "mode": "lines", "name": name, "x": x, "y": [value] * len(x), "line": line}


def _utilisation(run: RunResult, times: list[str]) -> dict[str, Any]:
    steps = run.steps
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "stackgroup": "used",
            "name": f"{c} used",
            "x": times,
            "y": [sum(s.column(USED + 2 * i)) / 1000 for s in steps],
        }
        for i, c in enumerate(CLASSES)
    ]
    data.append(_level(f"node capacity ({run.cpu_capacity:g} cores)", times, run.cpu_capacity, "#333"))
    data.append(_level(f"LS threshold ({run.ls_threshold:g} cores)", times, run.ls_threshold, "#d62728"))
    return {
        "data": data,
        "layout": _layout("CPU used by QoS class, against capacity and the LS threshold", "cores"),
    }


def _layout(title: str, unit: str, height: int = PLOT_HEIGHT) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 14}, "x": 0, "xanchor": "left"},
        "yaxis": {"title": {"text": unit}, "rangemode": "tozero"},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
        "legend": {"orientation": "h", "y": -0.15},
    }


def _used_per_node(run: RunResult) -> list[list[float]]:
    return [[s.used_cpu(i) / 1000 for s in run.steps] for i in range(len(run.nodes) if run.steps else 0)]


def _figures(run: RunResult, heat_max: float) -> list[tuple[str, dict[str, Any]]]:
    steps = run.steps
    times = [s.t for s in steps]
    nodes = list(run.nodes) if steps else []
    pending = {
        "data": [
            {"type": "scatter", "mode": "lines", "name": "pending pods", "x": times, "y": [s.pending for s in steps]},
            {"type": "bar", "name": "evictions", "x": times, "y": [len(s.evictions) for s in steps]},
        ],
        "layout": _layout("Pods waiting to be scheduled, and evictions per step", "pods"),
    }
    heat = {
        "data": [
            {
                "type": "heatmap",
                "x": times,
                "y": nodes,
                "z": _used_per_node(run),
                "zmin": 0,
                "zmax": heat_max,  # one scale for every run: the same colour is the same cores
                "colorscale": "YlOrRd",
                "reversescale": True,
                "colorbar": {"title": {"text": "cores"}},
            }
        ],
        "layout": _layout("CPU used per node", "node", max(PLOT_HEIGHT, 20 * len(nodes) + 120)),
    }
    return [("utilisation", _utilisation(run, times)), ("pending", pending), ("heatmap", heat)]


def _inputs_table(inputs: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in inputs)
    return f'<table class="inputs">{rows}</table>'


def render_html(runs: Mapping[str, RunResult], inputs: Sequence[tuple[str, str]] = ()) -> str:
    """The page for a run (`{"run": ..}`) or a comparison (`{"a": .., "b": ..}`), with what was asked."""
    from plotly.offline import get_plotlyjs

    labels = sorted(runs)
    baseline = runs.get("a")
    cells: list[str] = []
    cells += [f"<h2>{html.escape(runs[k].title or k)}</h2>" for k in labels]
    cells += [
        '<ul class="summary">'
        + "".join(f"<li>{html.escape(t)}</li>" for t in summary_sentences(runs[k], baseline if k == "b" else None))
        + "</ul>"
        for k in labels
    ]
    heat_max = max((max(row, default=0.0) for k in labels for row in _used_per_node(runs[k])), default=0.0)
    figures = {k: _figures(runs[k], heat_max or 1.0) for k in labels}
    scripts = []
    for row in range(len(figures[labels[0]])):
        for k in labels:
            name, figure = figures[k][row]
            element = f"plot-{k}-{name}"
            cells.append(f'<div class="plot" id="{element}"></div>')
            scripts.append(f"draw({script_json(element)}, {script_json(figure)});")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>colocate whatif</title>'
        f"<style>{_STYLE}</style><script>{get_plotlyjs()}</script></head><body>"
        f"<h1>colocate whatif</h1>{_inputs_table(inputs)}"
        f'<div class="grid" style="grid-template-columns:repeat({len(labels)},minmax(0,1fr))">{"".join(cells)}</div>'
        "<script>function draw(id, f) { Plotly.newPlot(id, f.data, f.layout, {displayModeBar: false}); }"
        f"{''.join(scripts)}</script></body></html>\n"
    )
