"""Run colocate's commands from a test, as a user runs them, with the installed plugins.

Each helper writes the objects a test built into a directory, runs the command through
`colocate.main.main` in this process (the entry points of the installed distributions are what
the command discovers) and returns its exit code, stdout and stderr; `.json()` parses stdout.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from colocate.testing.builders import NOW


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_colocate(*argv: str) -> CommandResult:
    """`colocate ARGV...` in this process, its output captured."""
    from colocate.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return CommandResult(code, out.getvalue(), err.getvalue())


def write_objects(directory: Path, objects: Sequence[Mapping[str, Any]]) -> Path:
    """One YAML file per object in `directory` (created), as a snapshot directory holds them."""
    directory.mkdir(parents=True, exist_ok=True)
    for index, obj in enumerate(objects):
        name = (obj.get("metadata") or {}).get("name") or "object"
        (directory / f"{index:04d}-{str(obj.get('kind', 'Object')).lower()}-{name}.yaml").write_text(
            yaml.safe_dump(dict(obj), sort_keys=False)
        )
    return directory


def _write(path: Path, document: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(document), sort_keys=False))
    return path


def scheduler_config(
    plugins: Mapping[str, Any] | None = None, plugin_config: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """A KubeSchedulerConfiguration with one `koord-scheduler` profile: `plugins` per extension
    point (`{"score": {"enabled": [{"name": "X"}]}}`) and each plugin's args by name."""
    profile: dict[str, Any] = {"schedulerName": "koord-scheduler"}
    if plugins:
        profile["plugins"] = dict(plugins)
    if plugin_config:
        profile["pluginConfig"] = [{"name": name, "args": dict(args)} for name, args in plugin_config.items()]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


def simulate(
    workdir: Path, objects: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None, now: str = NOW
) -> CommandResult:
    """`colocate scheduler simulate -o json` over `objects` (the pending pods are scheduled)."""
    argv = ["scheduler", "simulate", "--cluster", str(write_objects(workdir / "cluster", objects)), "--now", now]
    if config is not None:
        argv += ["--config", str(_write(workdir / "scheduler-config.yaml", config))]
    return run_colocate(*argv, "--no-progress", "-o", "json")


def explain(
    workdir: Path,
    objects: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    now: str = NOW,
) -> CommandResult:
    """`colocate scheduler explain -o json` of `pod` over `objects`."""
    argv = ["scheduler", "explain", "--cluster", str(write_objects(workdir / "cluster", objects)), "--now", now]
    argv += ["--pod", str(_write(workdir / "pod.yaml", pod))]
    if config is not None:
        argv += ["--config", str(_write(workdir / "scheduler-config.yaml", config))]
    return run_colocate(*argv, "-o", "json")


def koordlet_plan(
    workdir: Path,
    objects: Sequence[Mapping[str, Any]],
    *,
    qos_extension_plugins: str = "",
    feature_gates: str = "",
    now: str = NOW,
) -> CommandResult:
    """`colocate koordlet plan -o json` over a node directory of `objects` (a Node, its NodeSLO, its
    Pods, a NodeMetric), with installed strategies enabled by `qos_extension_plugins` (`Name=true`)."""
    node_dir = write_objects(workdir / "node", objects)
    argv = ["koordlet", "plan", "--node-dir", str(node_dir), "--now", now, "-o", "json"]
    if qos_extension_plugins:
        argv += ["--qos-extension-plugins", qos_extension_plugins]
    if feature_gates:
        argv += ["--feature-gates", feature_gates]
    return run_colocate(*argv)


def descheduler_config(
    plugins: Mapping[str, Any], plugin_config: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """A DeschedulerConfiguration run once (`deschedulingInterval: 0s`) with one profile."""
    profile: dict[str, Any] = {"name": "test", "plugins": dict(plugins)}
    if plugin_config:
        profile["pluginConfig"] = [{"name": name, "args": dict(args)} for name, args in plugin_config.items()]
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerConfiguration",
        "deschedulingInterval": "0s",
        "profiles": [profile],
    }


def descheduler_dry_run(
    workdir: Path, objects: Sequence[Mapping[str, Any]], config: Mapping[str, Any], now: str = NOW
) -> CommandResult:
    """`colocate descheduler run --dry-run --rounds 1 -o json` over `objects`."""
    cluster = write_objects(workdir / "cluster", objects)
    path = _write(workdir / "descheduler-config.yaml", config)
    return run_colocate(
        "descheduler", "run", "--cluster", str(cluster), "--config", str(path), "--dry-run", "--rounds", "1",
        "--now", now, "-o", "json",
    )  # fmt: skip


def admit(
    workdir: Path,
    obj: Mapping[str, Any],
    cluster: Sequence[Mapping[str, Any]] = (),
    *,
    admission_plugins: Sequence[str] = (),
    operation: str = "CREATE",
) -> CommandResult:
    """`colocate apply -o json` of `obj` over a cluster directory, with installed admission plugins."""
    directory = write_objects(workdir / "cluster", cluster)
    argv = ["apply", "--cluster", str(directory), "-f", str(_write(workdir / "object.yaml", obj))]
    argv += ["--operation", operation, "-o", "json"]
    if admission_plugins:
        argv += ["--admission-plugins", ",".join(admission_plugins)]
    return run_colocate(*argv)
