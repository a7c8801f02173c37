"""Bad input is one line on stderr naming the file and the field, exit 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import EXAMPLE, Whatif

ARRIVAL = """\
apiVersion: colocate.io/v1alpha1
kind: Workload
spec:
  arrivals:
    - name: spark
      {field}
      template: {{spec: {{containers: [{{name: c}}]}}}}
"""


@pytest.mark.parametrize(
    ("field", "named"),
    [
        ("every: soon", "spec.arrivals[0].every: not a duration"),
        ("count: 0", "spec.arrivals[0].count"),
        ('usage: {cpu: {daily: {min: "1", max: "2", peakAt: "25:00"}}}', "spec.arrivals[0].usage.cpu.daily.peakAt"),
        ("usage: {cpu: {constant: lots}}", "spec.arrivals[0].usage.cpu.constant: not a quantity"),
        ("usage: {gpu: {constant: 1}}", "spec.arrivals[0].usage.gpu"),
        ("name: Spark</script>", "spec.arrivals[0].name: Invalid value: 'Spark</script>'"),
    ],
)
def test_a_bad_workload_field_is_named_with_its_file(whatif: Whatif, tmp_path: Path, field: str, named: str) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(ARRIVAL.format(field=field))
    code, out, err = whatif("--cluster", str(EXAMPLE / "cluster"), "--workload", str(workload))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert str(workload) in err and named in err


def test_a_bad_step_and_a_missing_directory_are_one_line(whatif: Whatif, tmp_path: Path) -> None:
    workload = str(EXAMPLE / "workload.yaml")
    code, _, err = whatif("--cluster", str(EXAMPLE / "cluster"), "--workload", workload, "--step", "0s")
    assert (code, err.count("\n")) == (2, 1) and "--step" in err
    code, _, err = whatif("--cluster", str(tmp_path / "nope"), "--workload", workload)
    assert (code, err.count("\n")) == (2, 1) and "not a directory" in err


def test_a_profiles_directory_holds_profiles_only(whatif: Whatif) -> None:
    workload = str(EXAMPLE / "workload.yaml")
    code, _, err = whatif(
        "--cluster", str(EXAMPLE / "cluster"), "--workload", workload, "--profiles", str(EXAMPLE / "cluster")
    )
    assert code == 2 and err.count("\n") == 1
    assert "--profiles" in err and "only ClusterColocationProfiles belong here" in err


def test_a_report_without_plotly_is_one_line_before_the_run(
    whatif: Whatif, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plotly is an extra (`colocate[report]`): without it the page cannot be drawn, said at once."""
    monkeypatch.setitem(__import__("sys").modules, "plotly", None)  # as if not installed
    workload = str(EXAMPLE / "workload.yaml")
    code, out, err = whatif(
        "--cluster", str(EXAMPLE / "cluster"), "--workload", workload, "--report", str(tmp_path / "r.html")
    )
    assert (code, out, err.count("\n")) == (2, "", 1) and "pip install 'colocate[report]'" in err
    assert not (tmp_path / "r.html").exists()


def test_a_report_that_cannot_be_written_is_one_line(whatif: Whatif, tmp_path: Path) -> None:
    workload = str(EXAMPLE / "workload.yaml")
    report = tmp_path / "no-such-dir" / "r.html"
    code, _, err = whatif(
        "--cluster", str(EXAMPLE / "cluster"), "--workload", workload, "--duration", "10m", "--report", str(report)
    )
    assert (code, err.count("\n")) == (2, 1) and "--report" in err


TYPOS = """\
apiVersion: colocate.io/v1alpha1
kind: Workload
spec:
  arivals:
    - name: spark
      template: {spec: {containers: [{name: c}]}}
  running:
    - selector: {matchLabels: {app: web}}
      usage: {cpu: {daily: {min: "1", max: "2", peak: "12:00"}}}
"""


def test_every_unknown_workload_key_is_named_with_the_key_meant(whatif: Whatif, tmp_path: Path) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(TYPOS)
    code, out, err = whatif("--cluster", str(EXAMPLE / "cluster"), "--workload", str(workload))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {workload}: ["
        'spec.arivals: unknown field (did you mean "arrivals"?), '
        'spec.running[0].usage.cpu.daily.peak: unknown field (did you mean "peakAt"?)]\n'
    )


@pytest.mark.parametrize("field", ["lifetme: 1h", "coutn: 3", "usage: {cpu: {constant: 1, nosie: 5}}"])
def test_a_mistyped_arrival_key_does_not_run(whatif: Whatif, tmp_path: Path, field: str) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(ARRIVAL.format(field=field))
    code, out, err = whatif("--cluster", str(EXAMPLE / "cluster"), "--workload", str(workload))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "unknown field (did you mean" in err and str(workload) in err


@pytest.mark.parametrize(
    ("field", "extra", "limit"),
    [
        ("count: 1000000000", (), "more than 200,000 pods"),
        ("every: 1ns", (), "more than 200,000 pods"),
        ("every: 1h", ("--duration", "1000000h"), "over the limit of 100,000"),
    ],
)
def test_a_run_too_large_to_expand_is_refused_up_front(
    whatif: Whatif, tmp_path: Path, field: str, extra: tuple[str, ...], limit: str
) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(ARRIVAL.format(field=field))
    code, out, err = whatif("--cluster", str(EXAMPLE / "cluster"), "--workload", str(workload), *extra)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert limit in err


def test_a_snapshot_node_named_as_no_api_server_would_allow_is_refused(whatif: Whatif, tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    shutil.copytree(EXAMPLE / "cluster", cluster)
    nodes = cluster / "nodes.yaml"
    nodes.write_text(nodes.read_text().replace("name: node-2", "name: 'node-2</script><script>alert(1)</script>'", 1))
    code, out, err = whatif("--cluster", str(cluster), "--workload", str(EXAMPLE / "workload.yaml"))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert f"{nodes}: Node metadata.name: Invalid value: " in err and "RFC 1123 subdomain" in err
