"""`colocate whatif`: the whole colocation loop over time on one snapshot (docs/whatif.md).

The edge: flags and files are read here; bad input is one line naming the file and field, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from colocate.cli import errors, flags
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers
from colocate.cluster.compiled import describe
from colocate.cluster.store import Object
from policies.apis.durations import parse_duration
from policies.apis.field_errors import ConfigError
from webhook.plugin_flag import add_admission_plugins, admission_plugins

from .inputs import Inputs, load_inputs, load_profiles, start_time
from .loop import Run, RunOptions
from .records import RunResult, document_of, json_chunks
from .summary import document_table, gained, summarise
from .workload import check_size

log = logging.getLogger("colocate.whatif")


def register_commands(subparsers: Subparsers) -> None:
    """Add the `whatif` command."""
    cmd = subparsers.add_parser(
        "whatif",
        help="run admission, manager, scheduler, koordlet and descheduler over time on a snapshot and a workload",
        description="Step a cluster snapshot through time: pods of the workload arrive and are admitted, usage is "
        "sampled into NodeMetrics, the manager, scheduler, koordlet and descheduler each take their turn. "
        "Exit 0 when the run completed, 2 for bad input.",
    )
    flags.add_cluster_dir(cmd, required=True, reads="the snapshot: Nodes, Pods, NodeMetrics, profiles, configs")
    cmd.add_argument("--workload", required=True, type=Path, metavar="FILE", help="the Workload file (YAML or JSON)")
    cmd.add_argument("--profiles", type=Path, metavar="DIR", help="ClusterColocationProfiles replacing the snapshot's")
    cmd.add_argument("--compare-profiles", type=Path, metavar="DIR", help="a second run with these profiles (b)")
    cmd.add_argument("--duration", default="24h", help="how long the timeline runs (24h)")
    cmd.add_argument("--step", default="1m", help="the length of one step (1m)")
    cmd.add_argument("--seed", type=int, default=0, help="seeds all randomness (0)")
    cmd.add_argument("--now", metavar="RFC3339", help="the start (default: the newest NodeMetric's updateTime)")
    cmd.add_argument(
        "--koordlet-feature-gates", metavar="NAME=BOOL,...", help="the koordlet's feature gates in the run"
    )
    add_admission_plugins(cmd)
    cmd.add_argument(
        "--node-timelines",
        action="store_true",
        help="-o json: also every node's row in every step (about 600 MB for 1,000 nodes over a day)",
    )
    cmd.add_argument("--report", type=Path, metavar="FILE", help="also write the HTML report to FILE")
    add_output(cmd, ("table", "json", "html"), default="table")
    cmd.set_defaults(func=whatif_command)


def _seconds(flag: str, text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError:
        raise ConfigError(flag, f"not a duration: {text!r}") from None
    if value <= 0:
        raise ConfigError(flag, f"must be positive, got {text!r}")
    return value


def run_timeline(inputs: Inputs, profiles: list[Object], options: RunOptions, title: str = "") -> RunResult:
    """One timeline: its compact step records and summary, and what its report draws."""
    run = Run(inputs, profiles, options)
    steps = run.run()
    allocatable = allocatable_of(inputs)
    summary = summarise(steps, allocatable, options.step, run.pending_seconds, run.totals)
    capacity = sum(run.capacity.values()) / 1000
    threshold = sum(run.koordlet.threshold_percent(n) * milli for n, milli in run.capacity.items()) / 100_000
    return RunResult(
        tuple(run.nodes), steps, summary, title, capacity, threshold, allocatable=allocatable, step_seconds=options.step
    )


def run_titles(profiles: Path | None, compare: Path | None) -> tuple[str, str]:
    """The runs' names: their profiles folders (`no-profiles`, `profiles`), whole paths when the
    folders share a name; a run on the snapshot's own profiles says so."""
    first = profiles.name if profiles is not None else "the snapshot's profiles"
    second = compare.name if compare is not None else ""
    if first == second:
        return str(profiles), str(compare)
    return first, second


def run_document(inputs: Inputs, profiles: list[Object], options: RunOptions, timelines: bool = True) -> dict[str, Any]:
    """One timeline as the `-o json` document: its node aggregates, steps and summary."""
    return document_of(run_timeline(inputs, profiles, options), timelines)


def allocatable_of(inputs: Inputs) -> dict[str, tuple[int, int]]:
    from policies.apis.quantity import resource_list

    out = {}
    for node in inputs.objects.get("Node", ()):
        amounts = resource_list((node.get("status") or {}).get("allocatable"))
        out[str(node["metadata"]["name"])] = (amounts.get("cpu", 0), amounts.get("memory", 0))
    return out


def whatif_runs(args: argparse.Namespace) -> dict[str, RunResult]:
    """The run (`{"run": ..}`), or the two runs compared (`{"a": .., "b": ..}`)."""
    inputs = load_inputs(args.cluster, args.workload)
    options = RunOptions(
        start=start_time(inputs, args.now),
        duration=_seconds("--duration", args.duration),
        step=_seconds("--step", args.step),
        seed=args.seed,
        koordlet_gates=args.koordlet_feature_gates,
        admission_plugins=admission_plugins(args),
    )
    check_size(inputs.workload, options.duration, options.step)
    profiles = load_profiles(args.profiles, "--profiles") if args.profiles else list(inputs.profiles)
    titles = run_titles(args.profiles, args.compare_profiles)
    first = run_timeline(inputs, profiles, options, titles[0])
    if args.compare_profiles is None:
        return {"run": first}
    second = run_timeline(inputs, load_profiles(args.compare_profiles, "--compare-profiles"), options, titles[1])
    second.summary["gainedOverA"] = gained(first.summary, second.summary)
    return {"a": first, "b": second}


def report_inputs(args: argparse.Namespace, runs: dict[str, RunResult]) -> list[tuple[str, str]]:
    """What the run was asked, as the report shows it: a reader knows what the plots answer."""
    first = next(iter(runs.values()))
    start = first.steps[0].t if first.steps else (args.now or "")
    shown = [
        ("cluster snapshot", str(args.cluster)),
        ("workload", str(args.workload)),
        ("profiles", str(args.profiles) if args.profiles else "the snapshot's own"),
    ]
    if args.compare_profiles is not None:
        shown.append(("compared with", str(args.compare_profiles)))
    shown += [
        ("timeline", f"{args.duration} from {start}, in steps of {args.step}"),
        ("nodes", f"{len(first.nodes)}, {first.cpu_capacity:g} cores in all"),
        ("seed", str(args.seed)),
    ]
    if args.admission_plugins:
        shown.append(("admission plugins", args.admission_plugins))
    if args.koordlet_feature_gates:
        shown.append(("koordlet feature gates", args.koordlet_feature_gates))
    return shown


def _plotly_missing() -> bool:
    try:
        import plotly.offline  # noqa: F401 - only whether it imports
    except ImportError:
        return True
    return False


def whatif_command(args: argparse.Namespace) -> int:
    html_wanted = args.report is not None or args.output == "html"
    if html_wanted and _plotly_missing():  # said before the run, not after it
        return errors.report("--report and -o html need plotly: pip install 'colocate[report]'")
    if log.isEnabledFor(logging.INFO):  # imports the admission port's modules too: only when asked
        log.info("modules compiled with mypyc: %s (colocate/cluster/compiled.py)", describe())
    try:
        runs = whatif_runs(args)
    except ConfigError as exc:
        return errors.report(str(exc))
    if html_wanted:
        from .report import render_html

        page = render_html(runs, report_inputs(args, runs))
        if args.report is not None:
            try:
                args.report.write_text(page, encoding="utf-8")
            except OSError as exc:
                return errors.report(f"--report {args.report}: {exc.strerror or exc}")
    if args.output == "json":  # a step at a time: the rows of every step at once are most of a run's memory
        for chunk in json_chunks(runs, args.node_timelines):
            sys.stdout.write(chunk)
        text = ""
    elif args.output == "html":
        text = page
    else:
        text = document_table(runs)
    print(text, flush=True)
    return errors.EXIT_OK
