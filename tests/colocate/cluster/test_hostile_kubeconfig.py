"""A hostile `--kubeconfig` (an alias bomb, YAML nested past any parser's stack, a huge file) is
one short line and exit 2, like any other unusable cluster: never a traceback, never megabytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from colocate.main import main


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 8)]
    return "\n".join([*lines, "current-context: *a7", "contexts: *a7"]) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        alias_bomb(),
        "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "clusters: []\n" + "#" * (2 * 1024 * 1024) + "\n",
        "\xff\xfe not text",
    ],
    ids=["alias bomb", "nested 100,000 deep", "2 MiB", "not UTF-8"],
)
def test_a_hostile_kubeconfig_is_one_short_line(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    code = main(["certs", "inspect", "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err[:500]
    assert str(kubeconfig) in err and len(err) < 600
