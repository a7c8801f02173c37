"""A mistyped subcommand, flag or choice gets the spelling it was probably meant to be, in one line."""

from __future__ import annotations

import pytest

from colocate.main import main


def error_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err.count("\n")) == (2, "", 1)
    return captured.err


def test_a_mistyped_subcommand_gets_the_one_meant(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice: 'aply'" in error_of(capsys, "aply")
    assert '(did you mean "apply"?)' in error_of(capsys, "aply")
    assert '(did you mean "inspect"?)' in error_of(capsys, "certs", "inspcet")


def test_a_mistyped_required_flag_is_named_not_reported_missing(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(capsys, "whatif", "--clsuter", "cluster", "--workload", "w.yaml")
    assert err == (
        'error: colocate whatif: unrecognized arguments: --clsuter (did you mean "--cluster"?) '
        "(see colocate whatif --help)\n"
    )
    assert "required" not in err


def test_a_mistyped_optional_flag_is_the_subcommands_error(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(capsys, "serve", "--cert-dir", "certs", "--prot", "9443")
    assert err.startswith('error: colocate serve: unrecognized arguments: --prot (did you mean "--port"?)')


def test_a_mistyped_choice_gets_the_one_meant(capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(capsys, "apply", "--cluster", "c", "-f", "x", "--operation", "CRATE")
    assert '(did you mean "CREATE"?)' in err


def test_an_abbreviated_flag_still_works_and_nothing_is_suggested_for_nonsense(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = error_of(capsys, "whatif", "--clus", "nowhere", "--workload", "w.yaml")
    assert "--cluster nowhere" in err or "not a directory" in err  # --clus is --cluster, as argparse allows
    assert "did you mean" not in error_of(capsys, "zzzzzz")
