"""`colocate koordlet ...` subcommands (owned by scheduler_plugins.koordlet).

The edge: flags are parsed and validated here into typed values; exit codes are 0 success and
2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from colocate.cli import errors
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers, add_command_group
from policies.apis.field_errors import ConfigError
from scheduler_plugins.clock import clock_at
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.command import add_run_command
from scheduler_plugins.koordlet.framework import default_extensions, plugin_gates, plugin_strategies
from scheduler_plugins.koordlet.options import add_strategy_flags, host_roots, strategy_options
from scheduler_plugins.koordlet.plan import PlanError, PlanSettings, plan, plan_table


def register_commands(subparsers: Subparsers) -> None:
    """Add the `koordlet` command group."""
    commands = add_command_group(subparsers, "koordlet", help="the node agent: QoS enforcement on cgroups, NodeMetrics")

    p = commands.add_parser("plan", help="one round of every enabled strategy over a node directory (writes nothing)")
    p.add_argument(
        "--node-dir",
        type=Path,
        required=True,
        metavar="DIR",
        help="the Node, its NodeSLO, its Pods, a NodeMetric (latest usage), optionally a NodeResourceTopology",
    )
    add_strategy_flags(p)
    p.add_argument(
        "--cgroup-version",
        choices=[v.value for v in CgroupVersion],
        default="v1",
        help="the cgroup version whose file names are printed (default v1)",
    )
    p.add_argument("--now", help="RFC 3339 time of the round (default: now)")
    add_output(p, ("table", "json"), default="table")
    p.set_defaults(func=run_plan)

    add_run_command(commands)


def run_plan(args: argparse.Namespace) -> int:
    try:
        now = clock_at(args.now)()
        gates = default_extensions().gates(args.qos_extension_plugins, plugin_gates())
        report = plan(
            args.node_dir,
            strategy_options(args),
            PlanSettings(CgroupDriver(args.cgroup_driver), CgroupVersion(args.cgroup_version), host_roots(args)),
            now,
            plugin_strategies(gates),
        )
    except (ConfigError, PlanError) as exc:
        return errors.report(str(exc))
    print(json.dumps(report, indent=2) if args.output == "json" else plan_table(report), flush=True)
    return errors.EXIT_OK
