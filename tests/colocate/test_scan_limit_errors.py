"""An offline command given a `--cluster` directory past the scan limits (16 MiB of manifests)
answers with one line saying which limit was hit and what to do, exit 2: never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from colocate.cluster.files import ScanLimits
from colocate.main import main
from tests.support.paths import REPO

EXAMPLE = REPO / "manifests" / "scheduler" / "example-cluster"


@pytest.fixture(scope="module")
def oversized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scheduler's example cluster, padded past the total (each file under the per-file limit)."""
    state = tmp_path_factory.mktemp("oversized") / "state"
    shutil.copytree(EXAMPLE, state)
    padding = ("#" + "x" * 99 + "\n") * (ScanLimits.max_file_bytes // 200)
    for index in range(ScanLimits.max_total_bytes // len(padding) + 1):
        (state / f"padding-{index}.yaml").write_text(padding)
    return state


@pytest.mark.parametrize(
    "argv",
    [
        ["manager", "plan", "--cluster", "{state}"],
        ["scheduler", "quota", "--cluster", "{state}"],
        [
            "descheduler",
            "run",
            "--cluster",
            "{state}",
            "--config",
            str(REPO / "manifests/descheduler/example-config.yaml"),
        ],
        ["apply", "--cluster", "{state}", "-f", str(REPO / "manifests/samples/batch-pod.yaml")],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_a_state_past_the_scan_limit_is_one_line_naming_the_limit(
    argv: list[str], oversized: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([word.replace("{state}", str(oversized)) for word in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert "16 MiB" in err and "scan limit" in err and "Traceback" not in err
