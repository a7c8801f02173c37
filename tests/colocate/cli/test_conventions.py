"""The conventions themselves, on a parser of their own: what every command group gets from `cli`."""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Iterator

import pytest

from colocate.cli import errors, flags
from colocate.cli.jsonlog import is_configured, json_logging
from colocate.cli.output import add_output
from colocate.cli.parser import Parser, add_command_group, add_commands
from colocate.main import build_parser


def test_a_usage_error_is_one_line_naming_the_command_and_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = Parser(prog="colocate demo")
    parser.add_argument("--port", type=int)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--port", "x"])
    assert exit_.value.code == errors.EXIT_USAGE
    assert (
        capsys.readouterr().err == "error: colocate demo: argument --port: invalid int value: 'x' "
        "(see colocate demo --help)\n"
    )


def test_report_keeps_a_multi_line_message_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert errors.report("Invalid kube-config file.\n  No configuration found.\n") == errors.EXIT_USAGE
    assert capsys.readouterr().err == "error: Invalid kube-config file.; No configuration found.\n"


def test_an_alias_is_hidden_stores_like_its_flag_and_is_noted() -> None:
    parser = Parser(prog="demo")
    cluster = flags.add_cluster_dir(parser)
    flags.add_alias(parser, "--profiles", of=cluster)
    assert "--profiles" not in parser.format_help()
    old, new = parser.parse_args(["--profiles", "d"]), parser.parse_args(["--cluster", "d"])
    assert old.cluster == new.cluster and str(old.cluster) == "d"
    assert flags.deprecations(old) == ["--profiles is deprecated: use --cluster"] and flags.deprecations(new) == []


@pytest.mark.parametrize("formats, default", [(("json", "xml"), "json"), (("json", "yaml"), "table")])
def test_an_output_flag_offers_a_subset_of_the_vocabulary(formats: tuple[str, ...], default: str) -> None:
    with pytest.raises(ValueError):
        add_output(Parser(prog="demo"), formats, default)


def test_json_logging_is_turned_on_once_and_put_back_after() -> None:
    logger = logging.getLogger("colocate")
    before = (list(logger.handlers), logger.level, logger.propagate)
    outer, inner = io.StringIO(), io.StringIO()
    with json_logging("info", outer):
        with json_logging("debug", inner):  # a server asking again under the CLI: the CLI's set-up stays
            logging.getLogger("colocate.demo").debug("not at info")
            logging.getLogger("colocate.demo").info("once")
        assert is_configured()
    assert (list(logger.handlers), logger.level, logger.propagate) == before
    assert [line.count('"msg":"once"') for line in outer.getvalue().splitlines()] == [1] and inner.getvalue() == ""


def _command_groups(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield parser
            for sub in action.choices.values():
                yield from _command_groups(sub)


def test_every_command_group_names_its_command_alike_and_requires_one(capsys: pytest.CaptureFixture[str]) -> None:
    groups = list(_command_groups(build_parser()))
    assert {parser.prog for parser in groups} >= {
        "colocate",
        "colocate certs",
        "colocate manifests",
        "colocate manager",
    }
    assert [parser.prog for parser in groups if not parser.format_usage().rstrip().endswith("] COMMAND ...")] == []
    for parser in groups:
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([])
        assert exit_.value.code == errors.EXIT_USAGE
        assert "the following arguments are required: COMMAND" in capsys.readouterr().err


def test_the_command_given_in_a_group_is_kept_under_the_group_s_name() -> None:
    parser = Parser(prog="demo")
    add_command_group(add_commands(parser, dest="command"), "fleet", help="ships").add_parser("sail", help="go")
    args = parser.parse_args(["fleet", "sail"])
    assert (args.command, args.fleet_command) == ("fleet", "sail")
