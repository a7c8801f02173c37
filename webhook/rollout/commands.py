"""`colocate test` and `colocate audit`: argument parsing and printing; the work is done elsewhere."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from cli.errors import UsageError
from cli.output import add_output, table
from cli.parser import Subparsers

EXIT_PASSED, EXIT_FAILED = 0, 1


def _test(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    from webhook.rollout.testsuite import PASS, SuiteError, run_suites

    out = stdout or sys.stdout
    try:
        results = run_suites(args.dir)
    except SuiteError as exc:
        raise UsageError(str(exc)) from exc
    failed = sum(1 for r in results if r.result != PASS)
    if args.output == "json":
        out.write(json.dumps({"passed": len(results) - failed, "failed": failed,
                              "results": [r.to_json() for r in results]}, indent=2) + "\n")
    else:
        rows = [(i, r.suite, r.resource, r.expected, r.result.upper(), r.reason) for i, r in enumerate(results, 1)]
        out.write(table(["#", "TEST", "RESOURCE", "EXPECTED", "RESULT", "REASON"], rows) + "\n")
        out.write(f"\n{len(results) - failed} of {len(results)} case(s) passed\n")
    return EXIT_FAILED if failed else EXIT_PASSED


def register_commands(subparsers: Subparsers) -> None:
    from pathlib import Path

    test = subparsers.add_parser(
        "test", help="check expectations about what the admission chain makes of resources",
        description="Run every colocate-test.yaml below DIR: each names profiles, cluster objects, resources and "
                    "the expected result per resource (a patched resource, or denied with a message). "
                    "Exit 0 all cases pass, 1 a case fails, 2 a suite cannot be read.")
    test.add_argument("dir", type=Path, metavar="DIR",
                      help="a directory holding colocate-test.yaml files (or one such file)")
    add_output(test, ("table", "json"), default="table")
    test.set_defaults(func=_test)
