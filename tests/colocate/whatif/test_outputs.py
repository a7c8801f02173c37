"""`-o table`, the summary and the report read the run's compact records; `-o json` builds the rows
from them a step at a time. Whatever the output, it says the same things."""

from __future__ import annotations

import json
from array import array
from typing import Any

from colocate.whatif.cli import run_document
from colocate.whatif.inputs import load_inputs, load_profiles, start_time
from colocate.whatif.loop import RunOptions
from colocate.whatif.records import BATCH_CPU, BATCH_MEMORY, FIELDS, RAW, StepRecord, allocatable_slot, step_document
from policies.apis.durations import parse_duration
from policies.apis.quantity import milli_value

from .conftest import EXAMPLE, Whatif

ARGS = ("--cluster", str(EXAMPLE / "cluster"), "--workload", str(EXAMPLE / "workload.yaml"), "--duration", "3h")


def _hourly(run: dict[str, Any]) -> list[list[str]]:
    rows, hour = [], None
    for step in run["steps"]:
        if step["t"][:13] == hour:
            continue
        hour = step["t"][:13]
        totals = step["totals"]
        rows.append(
            [
                step["t"],
                str(step["pending"]),
                str(totals["lsOverThresholdNodes"]),
                str(totals["suppressedMilliCPU"]),
                str(len(step["evictions"])),
            ]
        )
    return rows


def test_the_table_says_what_the_json_says(whatif: Whatif) -> None:
    profiles = ("--profiles", str(EXAMPLE / "no-profiles"), "--compare-profiles", str(EXAMPLE / "profiles"))
    code, out, err = whatif(*ARGS, *profiles, "-o", "json")
    assert code == 0, err
    document = json.loads(out)
    code, table, err = whatif(*ARGS, *profiles, "-o", "table")
    assert code == 0, err
    lines = table.splitlines()
    for label in ("a", "b"):
        run = document[label]
        start = lines.index(f"run {label}")
        summary = run["summary"]
        assert lines[start + 1] == (
            f"cpu utilisation: mean {summary['cpuUtilisation']['mean']:.1%}, p95 {summary['cpuUtilisation']['p95']:.1%}"
        )
        assert f"LS over threshold: {summary['lsOverThresholdNodeMinutes']} node-minutes" in lines[start + 5]
        header = start + 8
        assert lines[header].split() == ["TIME", "PENDING", "LS-OVER-NODES", "BE-ALLOWED-MILLICPU", "EVICTIONS"]
        hourly = _hourly(run)
        assert [line.split() for line in lines[header + 1 : header + 1 + len(hourly)]] == hourly
    assert any(int(row[3]) > 0 for row in _hourly(document["b"]))  # the suppression shows in both


def test_the_json_a_step_at_a_time_is_the_whole_document(whatif: Whatif) -> None:
    inputs = load_inputs(EXAMPLE / "cluster", EXAMPLE / "workload.yaml")
    options = RunOptions(start_time(inputs, None), parse_duration("3h"), parse_duration("1m"))
    profiles = load_profiles(EXAMPLE / "profiles", "--profiles")
    for flags, timelines in (((), False), (("--node-timelines",), True)):
        code, out, err = whatif(*ARGS, "--profiles", str(EXAMPLE / "profiles"), "-o", "json", *flags)
        assert code == 0, err
        document = run_document(inputs, profiles, options, timelines)
        assert out == json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"


def test_the_default_json_holds_totals_and_node_aggregates_of_the_rows_it_leaves_out(whatif: Whatif) -> None:
    code, out, err = whatif(*ARGS, "--profiles", str(EXAMPLE / "profiles"), "-o", "json")
    assert code == 0, err
    code, full, err = whatif(*ARGS, "--profiles", str(EXAMPLE / "profiles"), "-o", "json", "--node-timelines")
    assert code == 0, err
    short, long = json.loads(out), json.loads(full)
    assert all("nodes" not in step for step in short["steps"])
    assert len(out) * 2 < len(full)
    assert short["summary"] == long["summary"] and short["nodes"] == long["nodes"]
    for step, with_rows in zip(short["steps"], long["steps"], strict=True):
        rows = with_rows["nodes"]
        assert step == {k: v for k, v in with_rows.items() if k != "nodes"}
        totals = step["totals"]
        assert totals["suppressedMilliCPU"] == sum(n["suppressedMilliCPU"] for n in rows)
        assert totals["lsOverThresholdNodes"] == sum(n["lsOverThreshold"] for n in rows)
        assert int(totals["batchAllocatable"]["kubernetes.io/batch-cpu"]) == sum(
            int(n["batchAllocatable"]["kubernetes.io/batch-cpu"]) for n in rows
        )
        for cls in ("prod", "batch", "free"):
            used = sum(milli_value(n["used"][cls]["cpu"]) for n in rows)
            assert milli_value(totals["used"][cls]["cpu"]) == used
    for index, node in enumerate(short["nodes"]):
        rows = [step["nodes"][index] for step in long["steps"]]
        assert node["name"] == rows[0]["name"]
        assert node["lsOverThresholdMinutes"] == sum(r["lsOverThreshold"] for r in rows)
        assert node["suppressedMilliCPU"]["max"] == max(r["suppressedMilliCPU"] for r in rows)
        cpu = [sum(milli_value(r["used"][c]["cpu"]) for c in ("prod", "batch", "free")) / 16000 for r in rows]
        assert node["cpuUtilisation"]["mean"] == round(sum(cpu) / len(cpu), 4)


def test_a_batch_allocatable_not_written_as_an_integer_comes_out_as_written() -> None:
    written: list[Any] = ["16200", "1k", "007", 5, None]
    slots = [allocatable_slot(value) for value in written]
    assert slots == [16200, RAW, RAW, RAW, RAW]
    nodes = array("q", [0] * (FIELDS * len(written)))
    raw = {}
    for index, (value, slot) in enumerate(zip(written, slots, strict=True)):
        nodes[index * FIELDS + BATCH_CPU] = slot
        nodes[index * FIELDS + BATCH_MEMORY] = -1  # absent
        if slot == RAW:
            raw[(index, BATCH_CPU)] = value
    step = StepRecord("2026-01-01T00:00:00Z", nodes, 0, {}, 0, 0, 0, [], [], [], raw)
    document = step_document(step, [f"n{i}" for i in range(len(written))])
    assert [row["batchAllocatable"] for row in document["nodes"]] == [{"kubernetes.io/batch-cpu": v} for v in written]
    # the total counts what reads as a number: 16200 + 1000 ("1k") + 7 + 5
    assert document["totals"]["batchAllocatable"] == {"kubernetes.io/batch-cpu": str(16200 + 1000 + 7 + 5)}
