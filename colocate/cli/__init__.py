"""Command-line conventions every colocate command group follows, defined once.

The components (`webhook`, `certs`, `scheduler_plugins`, ...) each register their own command group
with `colocate/main.py`; this package is what makes the groups look like one program. It imports no
component, so every one of them can use it.

- `colocate.cli.flags`: the flags several commands share, each with one name (`--cluster DIR`,
  `--kubeconfig/--context`, `--cert-dir`, `--dns-name`, `--watch-timeout/--backoff-max`,
  `--log-level`), and hidden, deprecated aliases for names that changed.
- `colocate.cli.output`: the `-o/--output` vocabulary (`json|yaml|table|text`); a command offers the subset
  it can print.
- `colocate.cli.errors`: a user mistake is one line on stderr, `error: ...`, and exit code 2 — never a
  traceback. Raise `UsageError` below the edge, or `report()` at it.
- `colocate.cli.parser`: an `argparse` parser that reports its own usage errors by that convention.
- `colocate.cli.jsonlog`: JSON log lines on stderr, turned on once per process at the edge.
"""
