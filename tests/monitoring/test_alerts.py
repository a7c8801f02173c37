"""The monitoring that ships (manifests/monitoring), checked with Debian's `prometheus` package.

`promtool check rules` on the PrometheusRule's spec, `promtool test rules` with a unit test for
every alert, and every metric an alert or a dashboard panel reads is one colocate exports: a typo
in a metric name would make an alert that can never fire.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from prometheus_client import CollectorRegistry

from tests.support.paths import REPO

MONITORING = REPO / "manifests" / "monitoring"
RULES = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "colocate-dashboard.json"
UNIT_TESTS = Path(__file__).parent / "alerts_test.yaml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus package) is not installed")

#: Series Prometheus makes itself, not the code.
PROMETHEUS_OWN = frozenset({"up"})


def rule_groups() -> dict[str, Any]:
    return cast(dict[str, Any], yaml.safe_load(RULES.read_text())["spec"])


def alerts() -> list[dict[str, Any]]:
    return [rule for group in rule_groups()["groups"] for rule in group["rules"] if "alert" in rule]


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@needs_promtool
def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    result = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule_groups()['groups'])} rules found" in result.stdout


@needs_promtool
def test_every_alert_fires_in_its_promtool_unit_test(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    shutil.copy(UNIT_TESTS, tmp_path / "alerts_test.yaml")
    result = promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    tested = yaml.safe_load(UNIT_TESTS.read_text())["tests"]
    firing = {
        case["alertname"] for test in tested for case in test.get("alert_rule_test", ()) if case.get("exp_alerts")
    }
    assert firing == {rule["alert"] for rule in alerts()}


@needs_promtool
def test_a_wrong_expectation_fails_the_unit_tests(tmp_path: Path) -> None:
    """The unit tests can fail: the same file with one threshold moved is refused."""
    spec = rule_groups()
    for group in spec["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "ColocateClusterStateStale":
                rule["expr"] = rule["expr"].replace("> 300", "> 3000")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    shutil.copy(UNIT_TESTS, tmp_path / "alerts_test.yaml")
    result = promtool("test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert result.returncode != 0 and "ColocateClusterStateStale" in result.stdout + result.stderr


def exported_series() -> set[str]:
    """Every series name the code registers, with the suffixes prometheus_client gives each type."""
    from colocate.cluster.metrics import StoreHealthMetrics
    from scheduler_plugins.descheduler.metrics import DeschedulerMetrics
    from scheduler_plugins.koordlet.prometheus import AgentMetrics
    from scheduler_plugins.manager.metrics import ManagerMetrics
    from scheduler_plugins.scheduler.extender.server import make_app
    from webhook.metrics import WebhookMetrics
    from webhook.rollout.background import AuditMetrics

    registries = [WebhookMetrics().registry]
    for metrics in (StoreHealthMetrics, DeschedulerMetrics, AgentMetrics, AuditMetrics, ManagerMetrics):
        registry = CollectorRegistry()
        metrics(registry)
        registries.append(registry)
    extender = CollectorRegistry()
    make_app(cast(Any, None), metrics=extender)
    registries.append(extender)
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created")}
    names: set[str] = set()
    for registry in registries:
        for family in registry.collect():
            names.add(family.name)
            names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def series_in(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (names followed by `{`, `[` or an operator)."""
    words = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=\{|\[|\)|\s*[<>=!]|$)", expr))
    functions = {"sum", "max", "min", "rate", "increase", "absent", "histogram_quantile", "time", "by", "or"}
    labels = set(re.findall(r"\b([a-z_]+)\s*[=!~]+\s*\"", expr)) | set(re.findall(r"by \(([^)]*)\)", expr))
    label_names = {name.strip() for group in labels for name in group.split(",")}
    return {w for w in words if w not in functions and w not in label_names and not w.isdigit()}


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_metric_an_alert_or_a_panel_reads_is_one_the_code_exports() -> None:
    exported = exported_series()
    used = {name for expr in [rule["expr"] for rule in alerts()] + dashboard_exprs() for name in series_in(expr)}
    assert {"controller_runtime_webhook_latency_seconds_bucket", "koordlet_evictions_total"} <= used
    assert "colocate_manager_degraded_nodes" in used
    assert used - exported - PROMETHEUS_OWN == set()


def test_the_metric_name_check_catches_a_typo() -> None:
    assert series_in('sum(rate(controller_runtime_webhook_request_total{code!="200"}[5m]))') == {
        "controller_runtime_webhook_request_total"
    }
    assert "controller_runtime_webhook_request_total" not in exported_series()
