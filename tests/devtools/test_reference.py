"""The reference pages in docs/reference/ are what the code gives today (devtools/reference.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from colocate.main import build_parser
from devtools import reference
from webhook.registry import default_routes


def test_the_checked_in_reference_pages_are_current() -> None:
    stale = reference.stale()
    assert not stale, (
        f"{', '.join(map(str, stale))} out of date with the code: run `{reference.COMMAND}` "
        "from the repository root and commit the result"
    )


def test_the_check_names_a_page_that_is_out_of_date(tmp_path: Path) -> None:
    for path, text in reference.render_all().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    assert reference.stale(tmp_path) == []
    (tmp_path / reference.CLI).write_text("edited by hand\n", encoding="utf-8")
    (tmp_path / reference.WEBHOOK_PATHS).unlink()
    assert sorted(reference.stale(tmp_path)) == sorted([reference.CLI, reference.WEBHOOK_PATHS])


def test_every_webhook_registration_has_a_row() -> None:
    page = reference.webhook_paths()
    for route in default_routes().routes:
        for registration in route.registrations:
            row = next(line for line in page.splitlines() if f"`{registration.name}`" in line)
            assert f"`{route.path}`" in row
            assert registration.failure_policy in row
            assert ", ".join(registration.operations) in row


def subcommands(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, sub_parser in action.choices.items():
                found += subcommands(sub_parser, f"{name} {sub}")
    return found


def test_every_command_and_documented_flag_is_listed_and_hidden_spellings_only_as_old_ones() -> None:
    page = reference.cli_reference()
    sections = {section.split("\n", 1)[0]: section for section in page.split("\n## ")[1:]}
    for name, parser in subcommands(build_parser(), "colocate"):
        section = sections[name]
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            flag = action.option_strings[-1]
            if action.help == argparse.SUPPRESS:
                assert f"`{action.option_strings[0]}` (use " in section, (name, flag)
                assert f"| `{action.option_strings[0]}" not in section, (name, flag)
            else:
                assert f"{flag}" in section and f"| `{action.option_strings[0]}" in section, (name, flag)


def test_the_generated_links_point_inside_the_pages() -> None:
    page = reference.cli_reference()
    headings = {line[3:].replace(" ", "-") for line in page.splitlines() if line.startswith("## ")}
    for line in page.splitlines():
        if line.startswith("- [`colocate"):
            assert line.split("](#", 1)[1].split(")", 1)[0] in headings
