"""The HTML report opened in a real headless Chromium (Debian's `chromium`), offline: the plots
render (plotly draws an SVG per plot, a heat map image inside one), the page reads as an operator
needs it (runs named after their profiles folders, the inputs, sentences with units, the capacity and
LS threshold lines, the two columns' rows level), the screenshot is not blank, and names carrying
script run none."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from array import array
from pathlib import Path

import pytest

from colocate.whatif.records import FIELDS, RunResult, StepRecord
from colocate.whatif.report import render_html
from colocate.whatif.summary import summarise

from .conftest import EXAMPLE, Whatif

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=10000",
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")


def _chromium(tmp_path: Path, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def _pixels(png: bytes) -> list[tuple[int, ...]]:
    """The RGB(A) pixels of an 8-bit truecolour PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,), kind = struct.unpack(">I", png[pos : pos + 4]), png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    raw, stride, rows, previous = zlib.decompress(data), width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, corner = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return [tuple(row[x : x + 3]) for row in rows[::4] for x in range(0, stride, channels * 4)]


#: appended to a copy of the report by the tests only: writes where each run's plots start into the
#: page's title, which --dump-dom then shows
MEASURE = """<script>window.addEventListener("load", () => { setTimeout(() => {
  const top = (id) => Math.round(document.getElementById(id).getBoundingClientRect().top);
  document.title = JSON.stringify(["utilisation", "pending", "heatmap"].map(
    (p) => [top("plot-a-" + p), top("plot-b-" + p)]));
}, 0); });</script>"""


def _compared(whatif: Whatif, tmp_path: Path) -> Path:
    report = tmp_path / "report.html"
    code, _, err = whatif(
        "--cluster", str(EXAMPLE / "cluster"), "--workload", str(EXAMPLE / "workload.yaml"), "--duration", "3h",
        "--profiles", str(EXAMPLE / "no-profiles"), "--compare-profiles", str(EXAMPLE / "profiles"),
        "--report", str(report), "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    return report


def test_the_report_reads_in_a_minute(whatif: Whatif, tmp_path: Path) -> None:
    report = _compared(whatif, tmp_path)
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text().replace("</body>", MEASURE + "</body>"))
    dom = _chromium(tmp_path, "dom", "--window-size=1400,1200", "--dump-dom", measured.as_uri()).stdout
    text = re.sub(r"<[^>]+>", " ", dom.split("<body>", 1)[1])
    # the runs are named after their profiles folders, and what was asked is shown
    assert re.search(r"<h2>no-profiles</h2>.*<h2>profiles</h2>", dom)
    for shown in ("cluster snapshot", str(EXAMPLE / "workload.yaml"), "compared with", "3h from 2026-01-01T00:00:00Z"):
        assert shown in text
    # the summary in sentences with units, not camelCase keys and fractions
    assert "cpuUtilisation" not in text and "lsOverThresholdNodeMinutes" not in text
    assert re.search(r"CPU used: \d+\.\d % of allocatable on average", text)
    assert "Compared with no-profiles: CPU used +" in text
    # the capacity and the LS threshold are drawn on the used-cpu plots, with their values
    legend = re.findall(r'class="legendtext"[^>]*>([^<]*)<', dom)
    assert legend.count("node capacity (32 cores)") == 2
    assert len([t for t in legend if re.fullmatch(r"LS threshold \([\d.]+ cores\)", t)]) == 2
    # each row of plots starts at the same height in both columns
    title = re.search(r"<title>(.*?)</title>", dom)
    assert title is not None
    rows = json.loads(title.group(1))
    assert [a == b for a, b in rows] == [True] * 3, rows


def test_a_name_carrying_script_runs_none(tmp_path: Path) -> None:
    hostile = "x</script><script>document.title='pwned'</script><!--"
    step = StepRecord("2026-01-01T00:00:00Z", array("q", [1000] * FIELDS), 0, {}, 0, 0, 0, [], [], [])
    summary = summarise([step], {hostile: (1000, 1)}, 60, [], {"admitted": 0, "denied": 0, "recreated": 0})
    run = RunResult((hostile,), [step], summary, title=hostile, cpu_capacity=1.0, ls_threshold=0.65)
    page = render_html({"run": run}, [("cluster snapshot", hostile)])
    report = tmp_path / "hostile.html"
    report.write_text(page)
    dom = _chromium(tmp_path, "dom", "--dump-dom", report.as_uri()).stdout
    assert "<title>colocate whatif</title>" in dom and "pwned" not in dom.split("<body>", 1)[0]
    assert dom.count('class="main-svg"') >= 3  # and the page's own script still ran
    assert "</script><script>document.title" not in page and "<!--" not in page.split("</style>", 1)[1]


def test_the_report_renders_its_plots_side_by_side_offline(whatif: Whatif, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    code, _, err = whatif(
        "--cluster",
        str(EXAMPLE / "cluster"),
        "--workload",
        str(EXAMPLE / "workload.yaml"),
        "--duration",
        "3h",
        "--profiles",
        str(EXAMPLE / "no-profiles"),
        "--compare-profiles",
        str(EXAMPLE / "profiles"),
        "--report",
        str(report),
        "-o",
        "json",
    )
    assert code == 0, err
    page = report.read_text()
    assert "http://" not in page.split("<script>", 1)[0] and "<script src" not in page  # nothing fetched
    dom = _chromium(tmp_path, "dom", "--dump-dom", report.as_uri()).stdout
    # three plots per run, two runs; each drawn plot is a `main-svg`, the heat maps an image inside
    for run in ("a", "b"):
        for plot in ("utilisation", "pending", "heatmap"):
            start = dom.index(f'id="plot-{run}-{plot}"')
            assert 'class="main-svg"' in dom[start : start + 4000], f"plot {run}/{plot} did not render"
    assert dom.count('class="heatmaplayer mlayer"') == 2
    assert dom.count("<image ") == 2  # each heat map painted as an image
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "shot", "--window-size=1400,1200", f"--screenshot={shot}", report.as_uri())
    pixels = _pixels(shot.read_bytes())
    coloured = [p for p in pixels if max(p) - min(p) > 40]  # the plots' blues, oranges and reds; text is grey
    assert len(set(pixels)) > 20
    assert len(coloured) > len(pixels) // 50
