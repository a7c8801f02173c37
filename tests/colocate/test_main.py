"""The `colocate` command line as a user meets it: its surface, its global options, its errors."""

from __future__ import annotations

import argparse
import json
import shutil
from importlib import metadata
from pathlib import Path

import pytest

from colocate.cli import flags
from colocate.main import build_parser, main

REPO = Path(__file__).resolve().parents[2]
CLUSTER = str(REPO / "manifests" / "cluster")
POD = str(REPO / "manifests" / "samples" / "batch-pod.yaml")
CERTS = [
    "--cert-dir",
    "--cert-namespace",
    "--cert-secret",
    "--cert-service",
    "--context",
    "--dns-name",
    "--in-cluster",
    "--kubeconfig",
]
OLD_CERTS = ["--namespace", "--secret-name", "--service"]

#: Every command's flags, visible and hidden (deprecated spellings). A rename, a new flag or a new
#: `-o` format is a change of this table: deliberate, and seen in review.
SURFACE: dict[str, tuple[list[str], list[str]]] = {
    "": (["--log-level {debug,info,warning,error}", "--version"], []),
    "serve": (
        [
            "--admission-plugins",
            "--audit-interval",
            "--backoff-max",
            "--body-budget-bytes",
            "--cert-check-interval",
            "--cert-dir",
            "--cert-namespace",
            "--cert-reload-interval",
            "--cert-secret",
            "--cert-service",
            "--cert-settle",
            "--client-ca",
            "--cluster",
            "--context",
            "--dns-name",
            "--drain-delay",
            "--event-loop {auto,uvloop,asyncio}",
            "--first-request-timeout",
            "--handshake-timeout",
            "--health-probe-bind-address",
            "--host",
            "--idle-timeout",
            "--kubeconfig",
            "--max-body",
            "--max-connections",
            "--metrics-bind-address",
            "--metrics-cache",
            "--port",
            "--refuse-sensitive-patches",
            "--reload-interval",
            "--reuse-port",
            "--self-managed-certs",
            "--shutdown-timeout",
            "--stuck-scan-after",
            "--watch-timeout",
            "--workers",
        ],
        ["--log-level {debug,info,warning,error}", "--max-body-bytes", "--profiles"],
    ),
    "manifests": ([], []),
    "manifests webhooks": (["--cert-namespace", "--cert-service", "-o/--output {yaml,json}"], []),
    "apply": (
        [
            "--admission-plugins",
            "--cluster",
            "--context",
            "--explain",
            "--kubeconfig",
            "--old-object",
            "--operation {CREATE,UPDATE,DELETE}",
            "--refuse-sensitive-patches",
            "--strict",
            "-f/--filename",
            "-o/--output {json,yaml}",
        ],
        ["--profiles"],
    ),
    "certs": ([], []),
    "certs generate": (
        sorted([*CERTS, "--ca-validity", "--force", "--key-type {rsa2048,rsa4096,ecdsa-p256}", "--validity"]),
        OLD_CERTS,
    ),
    "certs inspect": (sorted([*CERTS, "--at", "--threshold-days", "-o/--output {text,json}"]), OLD_CERTS),
    "certs rotate": (
        sorted(
            [
                *CERTS,
                "--at",
                "--ca-renew-before",
                "--ca-validity",
                "--cert-settle",
                "--force",
                "--force-ca",
                "--key-type {rsa2048,rsa4096,ecdsa-p256}",
                "--renew-before",
                "--validity",
            ]
        ),
        [*OLD_CERTS, "--settle"],
    ),
    "scheduler": ([], []),
    "scheduler extender": (
        [
            "--backoff-max",
            "--cluster",
            "--config",
            "--context",
            "--feature-gates",
            "--host",
            "--kubeconfig",
            "--now",
            "--port",
            "--scheduler-name",
            "--url-prefix",
            "--watch-timeout",
        ],
        [],
    ),
    "scheduler simulate": (
        [
            "--cluster",
            "--config",
            "--context",
            "--feature-gates",
            "--kubeconfig",
            "--now",
            "--progress/--no-progress",
            "-o/--output {table,json}",
        ],
        [],
    ),
    "test": (["--admission-plugins", "--scaffold", "--test-case-selector", "--update", "-o/--output {table,json}"], []),
    "audit": (
        [
            "--admission-plugins",
            "--cluster",
            "--context",
            "--kubeconfig",
            "--policy-report",
            "--progress/--no-progress",
            "--refuse-sensitive-patches",
            "--write-reports",
            "-o/--output {table,json}",
        ],
        [],
    ),
    "scheduler explain": (
        [
            "--cluster",
            "--config",
            "--context",
            "--feature-gates",
            "--kubeconfig",
            "--now",
            "--pod",
            "-o/--output {table,json}",
        ],
        [],
    ),
    "scheduler quota": (
        ["--cluster", "--config", "--context", "--feature-gates", "--kubeconfig", "-o/--output {table,json}"],
        [],
    ),
    "descheduler": ([], []),
    "descheduler run": (
        [
            "--backoff-max",
            "--cluster",
            "--config",
            "--context",
            "--dry-run",
            "--kubeconfig",
            "--now",
            "--rounds",
            "--watch-timeout",
            "-o/--output {table,json}",
        ],
        [],
    ),
    "manager": ([], []),
    "manager plan": (["--cluster", "--last-sync", "--now", "-o/--output {json,table}"], []),
    "manager run": (
        [
            "--backoff-max",
            "--cluster",
            "--context",
            "--health-addr",
            "--kubeconfig",
            "--leader-elect {true,false}",
            "--leader-election-id",
            "--leader-election-namespace",
            "--lease-duration",
            "--metrics-addr",
            "--now",
            "--resync-period",
            "--retry-period",
            "--rounds",
            "--watch-timeout",
            "-o/--output {json}",
        ],
        [],
    ),
    "koordlet": ([], []),
    "plugins": ([], []),
    "plugins list": (["-o/--output {table,json}"], []),
    "whatif": (
        [
            "--admission-plugins",
            "--cluster",
            "--compare-profiles",
            "--duration",
            "--koordlet-feature-gates",
            "--node-timelines",
            "--now",
            "--profiles",
            "--report",
            "--seed",
            "--step",
            "--workload",
            "-o/--output {table,json,html}",
        ],
        [],
    ),
    "koordlet plan": (
        [
            "--cgroup-driver {cgroupfs,systemd}",
            "--cgroup-root",
            "--cgroup-version {v1,v2}",
            "--feature-gates",
            "--node-dir",
            "--now",
            "--proc-root",
            "--qos-extension-plugins",
            "--resctrl-root",
            "--sys-root",
            "-o/--output {table,json}",
        ],
        [],
    ),
    "koordlet run": (
        [
            "--backoff-max",
            "--cgroup-driver {cgroupfs,systemd}",
            "--cgroup-root",
            "--collect-res-used-interval-seconds",
            "--context",
            "--cpu-evict-cool-time-seconds",
            "--cpu-evict-interval-seconds",
            "--cpu-suppress-interval-seconds",
            "--dry-run",
            "--feature-gates",
            "--host",
            "--kubeconfig",
            "--memory-evict-cool-time-seconds",
            "--memory-evict-interval-seconds",
            "--node-dir",
            "--node-name",
            "--only-evict-by-api",
            "--port",
            "--proc-root",
            "--qos-extension-plugins",
            "--reconcile-interval-seconds",
            "--resctrl-root",
            "--sys-root",
            "--watch-timeout",
        ],
        [],
    ),
}


def surface(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, tuple[list[str], list[str]]]:
    visible: list[str] = []
    hidden: list[str] = []
    found: dict[str, tuple[list[str], list[str]]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found.update(surface(command, (*path, name)))
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            spelled = "/".join(action.option_strings)
            if action.choices is not None:
                spelled += " {" + ",".join(action.choices) + "}"
            (hidden if action.help is argparse.SUPPRESS else visible).append(spelled)
    found[" ".join(path)] = (sorted(visible), sorted(hidden))
    return found


def test_the_command_line_surface_is_pinned() -> None:
    assert surface(build_parser()) == SURFACE


def test_every_output_flag_speaks_the_one_vocabulary() -> None:
    formats = {f for visible, _ in SURFACE.values() for f in visible if f.startswith("-o/--output")}
    choices = {name for spelled in formats for name in spelled.split("{")[1].rstrip("}").split(",")}
    assert choices <= {"json", "yaml", "table", "text", "html"}


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    found = {" ".join(path): parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found.update(commands(command, (*path, name)))
    return found


def test_one_default_output_a_report_for_people_and_objects_as_objects() -> None:
    """A command that reports defaults to its table (`text` for certs inspect's list of findings);
    one that prints Kubernetes objects (apply, manifests webhooks) defaults to an object format."""
    for name, parser in commands(build_parser()).items():
        for action in parser._actions:
            if action.dest != "output":
                continue
            choices = list(action.choices or ())
            people = [f for f in ("table", "text") if f in choices]
            assert action.default == (people[0] if people else action.default), name
            assert people or action.default in ("json", "yaml"), name


def test_every_command_says_what_it_does_in_its_help() -> None:
    for name, parser in commands(build_parser()).items():
        assert parser.description, f"`colocate {name} --help` has no description"
        assert f"\n\n{parser.description.split()[0]}" in parser.format_help(), name


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"colocate {metadata.version('colocate')}\n"


@pytest.mark.parametrize(
    "argv, level",
    [
        (["serve", "--cert-dir", "c"], "info"),
        (["scheduler", "extender"], "info"),
        (["koordlet", "run", "--node-name", "n1"], "info"),
        (["koordlet", "plan", "--node-dir", "d"], "warning"),
        (["apply", "--cluster", "d", "-f", "x"], "warning"),
        (["scheduler", "simulate", "--cluster", "d"], "warning"),
        (["--log-level", "debug", "serve", "--cert-dir", "c"], "debug"),
        (["--log-level", "ERROR", "apply", "--cluster", "d", "-f", "x"], "error"),
        (["serve", "--cert-dir", "c", "--log-level", "warning"], "warning"),  # the old place, still accepted
    ],
)
def test_log_level_is_global_with_a_default_per_kind_of_command(argv: list[str], level: str) -> None:
    assert flags.log_level(build_parser().parse_args(argv)) == level


def test_the_global_log_level_reaches_the_command_as_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    # the deprecated spelling is logged as a warning, by colocate's JSON logging
    assert main(["apply", "--profiles", CLUSTER, "-f", POD]) == 0
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert [(line["level"], line["logger"]) for line in logged] == [("warning", "colocate.main")]
    assert main(["--log-level", "error", "apply", "--profiles", CLUSTER, "-f", POD]) == 0
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("{")]


def test_apply_reports_a_broken_profile_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(CLUSTER, state)
    (state / "broken.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "config.koordinator.sh/v1alpha1",
                "kind": "ClusterColocationProfile",
                "metadata": {"name": "broken"},
                "spec": {"qosClass": "Gold"},
            }
        )
    )
    assert main(["apply", "--cluster", str(state), "-f", POD]) == 0
    err = capsys.readouterr().err
    assert err.count("'broken'") == 1 and err.startswith("warning: ") and "{" not in err


@pytest.mark.parametrize(
    "argv, dest, value",
    [
        (["serve", "--profiles", "d", "--cert-dir", "c"], "cluster", Path("d")),
        (["apply", "--profiles", "d", "-f", "x"], "cluster", Path("d")),
        (["certs", "generate", "--namespace", "ns"], "cert_namespace", "ns"),
        (["certs", "inspect", "--service", "svc"], "cert_service", "svc"),
        (["certs", "rotate", "--secret-name", "s"], "cert_secret", "s"),
        (["certs", "rotate", "--settle", "0.5"], "cert_settle", 0.5),
    ],
)
def test_old_spellings_still_work_and_are_noted_as_deprecated(argv: list[str], dest: str, value: object) -> None:
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    assert len(flags.deprecations(args)) == 1 and "is deprecated: use --" in flags.deprecations(args)[0]


def test_an_old_spelling_logs_one_warning_naming_the_new_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", "--profiles", CLUSTER, "-f", POD]) == 0
    (line,) = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert line["level"] == "warning" and line["msg"] == "--profiles is deprecated: use --cluster"


@pytest.mark.parametrize(
    "argv",
    [
        ["no-such-command"],
        ["apply", "-f", POD],  # no --cluster
        ["apply", "--cluster", CLUSTER, "-f", POD, "-o", "table"],
        ["apply", "--cluster", CLUSTER, "--profiles", CLUSTER, "-f", POD],
        ["--log-level", "loud", "apply", "--cluster", CLUSTER, "-f", POD],
        ["scheduler", "simulate", "--cluster", CLUSTER, "--no-such-flag"],
        ["serve", "--cluster", "/nonexistent", "--cert-dir", "/nonexistent"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--self-managed-certs"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--max-connections", "0"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--idle-timeout", "-1"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--client-ca", "/nonexistent"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--max-body", "2000", "--body-budget-bytes", "1000"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--audit-interval", "often"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--workers", "0"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--workers", "many"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--metrics-bind-address", "nowhere"],
        ["serve", "--cluster", CLUSTER, "--cert-dir", "c", "--health-probe-bind-address", ":99999"],
        ["certs", "inspect", "--cert-dir", "/nonexistent"],
        ["certs", "generate"],
    ],
)
def test_a_mistake_is_one_line_on_stderr_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = [line for line in err.splitlines() if not line.startswith("{")]  # JSON lines are logs
    assert line.startswith("error: ") and "Traceback" not in err


def test_docs_cli_lists_every_command_group() -> None:
    page = (REPO / "docs" / "cli.md").read_text()
    groups = [name for name in commands(build_parser()) if name and " " not in name]
    assert groups and [g for g in groups if f"| `{g}` |" not in page] == []


def test_the_body_budget_has_a_name_of_its_own_and_the_old_one_still_works() -> None:
    """`--max-body` is one body's limit; the bytes all bodies may hold is `--body-budget-bytes`
    (it was `--max-body-bytes`, one letter group away from `--max-body`)."""
    base = ["serve", "--cluster", str(CLUSTER), "--cert-dir", "c"]
    assert build_parser().parse_args([*base, "--body-budget-bytes", "5"]).body_budget_bytes == 5
    old = build_parser().parse_args([*base, "--max-body-bytes", "7"])
    assert old.body_budget_bytes == 7 and any("--body-budget-bytes" in note for note in flags.deprecations(old))
