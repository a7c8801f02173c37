"""The reference pages of docs/, generated from the code so that they cannot drift from it.

- docs/reference/webhook-paths.md from the handler registry, `webhook.registry.default_routes()`;
- docs/reference/cli.md from the argument parser, `colocate.main.build_parser()`.

`python -m devtools.reference` (from the repository root) rewrites both; `--check` writes nothing
and exits 1 naming the pages that are out of date. tests/devtools/test_reference.py runs the check,
so a change to a route or a flag fails the suite until the pages are regenerated and committed.

The pages are built from the objects' fields, never from argparse's own help formatter, whose
wrapping depends on the terminal width and the Python version.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from colocate.cli.output import markdown_cell, markdown_table

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python -m devtools.reference"
WEBHOOK_PATHS = Path("docs/reference/webhook-paths.md")
CLI = Path("docs/reference/cli.md")


def _banner(source: str) -> str:
    return f"<!-- Generated from {source} by `{COMMAND}`; do not edit by hand. -->"


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


# --- webhook paths ------------------------------------------------------------------------------


def _selector(selector: Mapping[str, Any] | None) -> str:
    """A label selector as one short line: `key=value`, `key In (a, b)`, `key DoesNotExist`."""
    if not selector:
        return ""
    terms = [f"{key}={value}" for key, value in sorted(selector.get("matchLabels", {}).items())]
    for expression in selector.get("matchExpressions", ()):
        values = expression.get("values")
        terms.append(f"{expression['key']} {expression['operator']}" + (f" ({', '.join(values)})" if values else ""))
    return ", ".join(terms)


def webhook_paths() -> str:
    """docs/reference/webhook-paths.md: one row per webhook registration of every route."""
    from webhook.registry import default_routes

    rows: list[list[str]] = []
    for route in default_routes().routes:
        group = route.api_group or "core"
        resource = f"{route.kind} ({group}/{route.api_version} `{route.rule_resource}`)"
        plugins = ", ".join(_code(str(getattr(plugin, "name", plugin))) for plugin in route.plugins)
        for registration in route.registrations:
            selectors = [f"namespaces: {s}" for s in [_selector(registration.namespace_selector)] if s]
            selectors += [f"objects: {s}" for s in [_selector(registration.object_selector)] if s]
            rows.append(
                [
                    _code(route.path),
                    route.webhook_type,
                    resource,
                    _code(registration.name),
                    ", ".join(registration.operations),
                    registration.failure_policy,
                    "; ".join(selectors),
                    ", ".join(registration.admission_review_versions),
                    plugins or "none",
                ]
            )
    lines = [
        "# Webhook paths",
        "",
        _banner("`webhook.registry.default_routes()`"),
        "",
        "Every admission path `colocate serve` serves, one row per webhook registration (the entries of",
        "the MutatingWebhookConfiguration and ValidatingWebhookConfiguration). `colocate apply` runs the",
        "same routes offline: for an object's kind, every mutating route, then every validating one.",
        "What each path does: [the admission webhook](../webhook.md#what-each-path-does).",
        "",
        *markdown_table(
            [
                "path",
                "type",
                "kind (group/version `resource`)",
                "webhook",
                "operations",
                "failure policy",
                "selectors",
                "review versions",
                "plugins, in order",
            ],
            rows,
        ),
        "",
    ]
    return "\n".join(lines)


# --- the command line ---------------------------------------------------------------------------


Command = tuple[str, argparse.ArgumentParser]  # the full name (`colocate certs rotate`) and its parser


def _commands(
    parser: argparse.ArgumentParser, name: str, above: tuple[Command, ...] = ()
) -> Iterator[tuple[tuple[Command, ...], str]]:
    """(the command and the commands above it, its one-line help) for `parser` and every command below it."""
    chain = (*above, (name, parser))
    yield chain, ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for sub_name, sub_parser in action.choices.items():
                for found, summary in _commands(sub_parser, f"{name} {sub_name}", chain):
                    yield found, summary or helps.get(sub_name, "")


def _is_hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "|".join(str(c) for c in action.choices)
    return action.dest.upper()


def _flag(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or _value(action)
    value = _value(action) if action.option_strings else ""
    return f"{names} {value}".strip()


def _default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default == argparse.SUPPRESS or action.nargs == 0 or default == []:
        return ""
    if isinstance(default, timedelta):
        return f"{default.days} days" if default == timedelta(days=default.days) else str(default)
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:  # argparse's own expansion, e.g. %(default)s
        params = {**vars(action), "prog": prog}
        text = text % {k: getattr(v, "__name__", v) for k, v in params.items()}
    choices = [str(c) for c in action.choices or ()]
    if choices and action.metavar is not None and not all(c in text for c in choices):
        text = f"{text} (one of {', '.join(choices)})".strip()
    return text


def _options_table(actions: Sequence[argparse.Action], required: set[int], prog: str) -> list[str]:
    rows = [
        [_code(_flag(a)), "required" if a.required or id(a) in required else _code(_default(a)), _help(a, prog)]
        for a in actions
    ]
    return markdown_table(["flag", "default", "meaning"], rows)


def _anchor(command: str) -> str:
    return command.replace(" ", "-")


def _command_section(chain: tuple[Command, ...], summary: str) -> list[str]:
    name, parser = chain[-1]
    lines = [f"## {name}", ""]
    for text in (summary, parser.description):
        if text:
            lines += [markdown_cell(text), ""]
    # a required group of one documented flag (and its hidden old spelling) makes that flag required
    required = {
        id(shown[0])
        for group in parser._mutually_exclusive_groups
        if group.required
        for shown in [[a for a in group._group_actions if not _is_hidden(a)]]
        if len(shown) == 1
    }
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if not _is_hidden(a) and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        ]
        if not actions:
            continue
        if group.title not in ("options", "positional arguments"):
            lines += [f"**{group.title}**" + (f": {markdown_cell(group.description)}" if group.description else ""), ""]
        lines += [*_options_table(actions, required, parser.prog), ""]
    for exclusive in parser._mutually_exclusive_groups:
        shown = [a for a in exclusive._group_actions if not _is_hidden(a)]
        if len(shown) > 1:
            which = "exactly one" if exclusive.required else "at most one"
            lines += [f"Give {which} of " + ", ".join(_code(a.option_strings[-1]) for a in shown) + ".", ""]
    aliases = [_old_spelling(alias, chain) for alias in parser._actions if _is_hidden(alias) and alias.option_strings]
    if aliases:
        lines += ["Old spellings, still accepted but left out of `--help`: " + ", ".join(aliases) + ".", ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines += ["Commands:", ""]
            for choice in action._choices_actions:
                full = f"{name} {choice.dest}"
                lines.append(f"- [`{full}`](#{_anchor(full)}): {markdown_cell(choice.help or '')}")
            lines.append("")
    return lines


def _old_spelling(alias: argparse.Action, chain: tuple[Command, ...]) -> str:
    """A hidden flag and the documented one it stands for: same destination, here or in a command above."""
    for depth, (name, parser) in enumerate(reversed(chain)):
        for action in parser._actions:
            if action.dest == alias.dest and not _is_hidden(action) and action.option_strings:
                flag = str(action.option_strings[-1])
                return f"{_code(alias.option_strings[0])} (use {_code(flag if depth == 0 else f'{name} {flag}')})"
    return _code(alias.option_strings[0])


def cli_reference() -> str:
    """docs/reference/cli.md: every command with its flags, defaults and help, from the parser."""
    from colocate.main import build_parser

    parser = build_parser()
    lines = [
        "# Command-line reference",
        "",
        _banner("`colocate.main.build_parser()`"),
        "",
        "Every command, its flags, their defaults and help. Every command also takes `-h/--help`.",
        "The conventions the commands share (the `-o` formats, exit codes, logs, old spellings) are in",
        "[the command line](../cli.md).",
        "",
    ]
    for chain, summary in _commands(parser, parser.prog):
        lines += _command_section(chain, summary)
    return "\n".join(lines).rstrip("\n") + "\n"


PAGES: dict[Path, Callable[[], str]] = {WEBHOOK_PATHS: webhook_paths, CLI: cli_reference}


def render_all() -> dict[Path, str]:
    """Every generated page, by its path relative to the repository root."""
    return {path: render() for path, render in PAGES.items()}


def stale(root: Path = ROOT) -> list[Path]:
    """The generated pages whose checked-in text differs from what the code gives today."""
    found = []
    for path, text in render_all().items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            found.append(path)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"{path} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1 if out_of_date else 0
    for path, text in render_all().items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
