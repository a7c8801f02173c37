"""The HTML report of `colocate whatif`: one self-contained page (plotly.js inlined from the
`plotly` package's offline bundle, no network when opened) with the timeline of utilisation by
class, pending pods and evictions, and a node x time heat map of used cpu; the two runs side by side
when comparing. Figures are plain plotly JSON built here, so the page is deterministic (no random
element ids). Why plotly: docs/whatif.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from .pods import CLASSES
from .records import USED, RunResult


def _figures(run: RunResult, label: str) -> list[tuple[str, dict[str, Any]]]:
    steps = run.steps
    times = [s.t for s in steps]
    nodes = list(run.nodes) if steps else []
    by_class = {c: [sum(s.column(USED + 2 * i)) / 1000 for s in steps] for i, c in enumerate(CLASSES)}
    utilisation = {
        "data": [
            {"type": "scatter", "mode": "lines", "stackgroup": "used", "name": c, "x": times, "y": by_class[c]}
            for c in CLASSES
        ],
        "layout": {
            "title": {"text": f"{label}: used cpu by class"},
            "yaxis": {"title": {"text": "cores"}},
            "height": 320,
        },
    }
    pending = {
        "data": [
            {"type": "scatter", "mode": "lines", "name": "pending", "x": times, "y": [s.pending for s in steps]},
            {"type": "bar", "name": "evictions", "x": times, "y": [len(s.evictions) for s in steps]},
        ],
        "layout": {"title": {"text": f"{label}: pending pods and evictions"}, "height": 320},
    }
    heat = {
        "data": [
            {
                "type": "heatmap",
                "x": times,
                "y": nodes,
                "z": [[s.used_cpu(i) / 1000 for s in steps] for i in range(len(nodes))],
                "colorscale": "YlOrRd",
                "reversescale": True,
            }
        ],
        "layout": {"title": {"text": f"{label}: used cpu per node (cores)"}, "height": max(300, 20 * len(nodes) + 120)},
    }
    return [("utilisation", utilisation), ("pending", pending), ("heatmap", heat)]


def _summary(run: RunResult) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(json.dumps(v, sort_keys=True))}</td></tr>"
        for k, v in sorted(run.summary.items())
    )
    return f"<table>{rows}</table>"


def render_html(runs: Mapping[str, RunResult]) -> str:
    """The page for a run (`{"run": ..}`) or a comparison (`{"a": .., "b": ..}`)."""
    from plotly.offline import get_plotlyjs

    columns, scripts = [], []
    for label, run in sorted(runs.items()):
        parts = [f"<h2>{html.escape(label)}</h2>", _summary(run)]
        for name, figure in _figures(run, label):
            element = f"plot-{label}-{name}"
            parts.append(f'<div class="plot" id="{element}"></div>')
            spec = json.dumps(figure, sort_keys=True)
            scripts.append(f'Plotly.newPlot("{element}", {spec}.data, {spec}.layout, {{"staticPlot": false}});')
        columns.append(f'<div class="run">{"".join(parts)}</div>')
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>colocate whatif</title>'
        "<style>body{font-family:sans-serif;margin:1em}.runs{display:flex;gap:1em}.run{flex:1;min-width:0}"
        "table{border-collapse:collapse;font-size:0.85em}th,td{text-align:left;padding:2px 6px}</style>"
        f"<script>{get_plotlyjs()}</script></head><body><h1>colocate whatif</h1>"
        f'<div class="runs">{"".join(columns)}</div>'
        f"<script>{''.join(scripts)}</script></body></html>\n"
    )
