"""TrafficClass through `colocate apply`, with the package installed beside colocate."""

from __future__ import annotations

from pathlib import Path

from colocate.testing.builders import make_pod
from colocate.testing.commands import admit

LABEL = "example.colocate.io/traffic-class"


def test_apply_labels_a_be_pod_as_bulk(tmp_path: Path) -> None:
    result = admit(
        tmp_path, make_pod("batch", qos="BE", priority_class="koord-batch"), admission_plugins=["TrafficClass"]
    )
    assert result.exit_code == 0, result.stderr
    assert result.json()["metadata"]["labels"][LABEL] == "bulk"


def test_other_pods_are_left_alone(tmp_path: Path) -> None:
    result = admit(tmp_path, make_pod("web", qos="LS"), admission_plugins=["TrafficClass"])
    assert LABEL not in result.json()["metadata"]["labels"]


def test_it_joins_the_chain_only_when_enabled(tmp_path: Path) -> None:
    result = admit(tmp_path, make_pod("batch", qos="BE", priority_class="koord-batch"))
    assert LABEL not in result.json()["metadata"]["labels"]
