"""`colocate test` and `colocate audit`: argument parsing and printing; the work is done elsewhere."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from colocate.cli import flags
from colocate.cli.errors import UsageError
from colocate.cli.output import Painter, add_output, table
from colocate.cli.parser import Subparsers
from webhook.plugin_flag import add_admission_plugins, admission_plugins

if TYPE_CHECKING:
    from policies.admission.snapshot import ClusterSnapshot
    from webhook.registry import Registry
    from webhook.rollout.audit import AuditReport

EXIT_PASSED, EXIT_FAILED = 0, 1


def _test(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    from webhook.rollout.golden import scaffold, update_golden_files
    from webhook.rollout.testsuite import PASS, Selector, SuiteError, run_suites

    out = stdout or sys.stdout
    plugins = admission_plugins(args)
    if args.scaffold:
        if args.update or args.test_case_selector:
            raise UsageError("--scaffold writes a new suite: it takes neither --update nor --test-case-selector")
        try:
            written = scaffold(args.dir, plugins)
        except SuiteError as exc:
            raise UsageError(str(exc)) from exc
        print(f"wrote {written}: check each expectation, then run `colocate test {args.dir}`", file=sys.stderr)
        return EXIT_PASSED
    try:
        selector = Selector.parse(args.test_case_selector or "")
    except ValueError as exc:
        raise UsageError(f"--test-case-selector: {exc}") from exc
    try:
        results = run_suites(args.dir, selector, plugins)
    except SuiteError as exc:
        raise UsageError(str(exc)) from exc
    if not results:
        raise UsageError(f"--test-case-selector {args.test_case_selector!r}: no case matches")
    if args.update:
        for path in update_golden_files(results):
            print(f"updated {path}", file=sys.stderr)
        results = run_suites(args.dir, selector, plugins)
    failed = sum(1 for r in results if r.result != PASS)
    if args.output == "json":
        out.write(
            json.dumps(
                {"passed": len(results) - failed, "failed": failed, "results": [r.to_json() for r in results]}, indent=2
            )
            + "\n"
        )
    else:
        from colocate.cli.colour import results_painter

        rows = [(i, r.suite, r.resource, r.expected, r.result.upper(), r.reason) for i, r in enumerate(results, 1)]
        paint = results_painter(4, out)
        out.write(table(["#", "TEST", "RESOURCE", "EXPECTED", "RESULT", "REASON"], rows, paint) + "\n")
        out.write(f"\n{len(results) - failed} of {len(results)} case(s) passed\n")
    return EXIT_FAILED if failed else EXIT_PASSED


def register_commands(subparsers: Subparsers) -> None:
    """Add `test` and `audit`."""
    _test_flags(
        subparsers.add_parser(
            "test",
            help="check expectations about what the admission chain makes of resources",
            description="Run every colocate-test.yaml below DIR: each names profiles, cluster objects, resources and "
            "the expected result per resource (a patched resource, or denied with a message). "
            "Exit 0 all cases pass, 1 a case fails, 2 a suite cannot be read.",
        )
    )
    _audit_flags(
        subparsers.add_parser(
            "audit",
            help="list running pods that differ from what the current profiles would make of them",
            description="Send every running pod through the admission chain again, over the current profiles, and "
            "list the pods it would change, per profile, with the difference (fail: an enforced profile, "
            "warn: a warn-only one, skip: a profile applied to a percentage of pods). Exit 0 no pod drifted "
            "from an enforced profile (warn and skip findings are listed, and pass), 1 one did or could "
            "not be audited (fail, error), 2 the cluster or a flag cannot be used.",
        )
    )


def _test_flags(test: argparse.ArgumentParser) -> None:
    test.add_argument(
        "dir", type=Path, metavar="DIR", help="a directory holding colocate-test.yaml files (or one such file)"
    )
    test.add_argument(
        "--test-case-selector",
        metavar="test=NAME,resource=NAME",
        help="run only the cases whose suite name and resource match these shell patterns",
    )
    test.add_argument(
        "--update",
        action="store_true",
        help="rewrite the patchedResource file of every admitted case that differs, then report",
    )
    test.add_argument(
        "--scaffold",
        action="store_true",
        help="write DIR/colocate-test.yaml and DIR/expected/ from the manifests in DIR, expecting what "
        "the chain does today",
    )
    add_admission_plugins(test)
    add_output(test, ("table", "json"), default="table")
    test.set_defaults(func=_test)


def audit_table(report: AuditReport, paint: Painter | None = None) -> str:
    rows = [
        (pod.namespace, pod.name, result.profile, result.result.upper(), result.message)
        for pod in report.drifted()
        for result in pod.results
        if result.result != "pass"
    ]
    lines = [table(["NAMESPACE", "POD", "PROFILE", "RESULT", "DIFFERENCE"], rows, paint)] if rows else []
    lines.append(
        f"{len(report.drifted())} of {report.audited} running pod(s) differ from what the current "
        f"{report.profiles} profile(s) would make of them ({len(report.pods)} matched by a profile)"
    )
    lines.extend(
        f"profile {name} patches security-sensitive fields: {', '.join(fields)}"
        for name, fields in sorted(report.sensitive.items())
    )
    return "\n".join(lines)


def _audit_snapshot(args: argparse.Namespace, registry: Registry) -> tuple[ClusterSnapshot, Any]:
    """The state audited (`--cluster DIR`, or listed once through the API server) and the API
    client (None from a directory); the same sources, kinds and parsing as `serve` and `apply`."""
    from colocate.cluster.client import api_client
    from colocate.cluster.files import ScanError
    from policies.apis.manifests import ManifestError
    from webhook.rollout.audit import AUDIT_READS
    from webhook.snapshots import ApiServerSnapshots, DirectorySnapshots
    from webhook.watched import watched_kinds

    if args.cluster is None:
        api = api_client(args.kubeconfig, args.context)  # ClusterUnavailable: exit 2 at the edge
        source = ApiServerSnapshots(
            api, watched_kinds(registry, AUDIT_READS), refuse_sensitive=args.refuse_sensitive_patches
        )
        try:
            return source.list_once(), api
        finally:
            source.close()
    if args.write_reports:
        raise UsageError(
            "--write-reports writes PolicyReports through the API server: use --kubeconfig, "
            "or --policy-report FILE to write them to a file"
        )
    if not args.cluster.is_dir():
        raise UsageError(f"--cluster {args.cluster}: not a directory")
    directory = DirectorySnapshots(args.cluster, refuse_sensitive=args.refuse_sensitive_patches)
    try:
        snapshot = directory.scan()
    except (ManifestError, ScanError) as exc:
        raise UsageError(str(exc)) from exc
    assert snapshot is not None  # the first scan always builds one
    if directory.store.problems:  # an audit of a state with files left out would mislead
        first, more = directory.store.problems[0], len(directory.store.problems) - 1
        raise UsageError(f"{first.source}: {first.message}" + (f" (and {more} more file problems)" if more else ""))
    return snapshot, None


def _write_policy_reports(args: argparse.Namespace, api: Any, report: AuditReport) -> None:
    """PolicyReports through the API server (`--write-reports`) and/or to a file (`--policy-report`)."""
    import time

    from colocate.cluster.client import api_errors
    from webhook.rollout.reports import ReportWriter, policy_reports

    if api is not None and args.write_reports:
        with api_errors("writing PolicyReports"):
            written = ReportWriter(api).write(policy_reports(report, int(time.time())))
        print(f"policy reports: {written.summary()}", file=sys.stderr)
    if args.policy_report is not None:
        import yaml

        reports = policy_reports(report, int(time.time()))
        try:
            args.policy_report.write_text(yaml.safe_dump_all(reports, sort_keys=False), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--policy-report {args.policy_report}: {exc.strerror or exc}") from exc
        print(f"policy reports: {len(reports)} written to {args.policy_report}", file=sys.stderr)


def _audit(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    from colocate.cli.colour import results_painter
    from colocate.cli.progress import Progress
    from colocate.cli.progress import enabled as progress_enabled
    from webhook.registry import default_routes
    from webhook.rollout.audit import FAILING, audit, running_pods

    out = stdout or sys.stdout
    registry = default_routes(admission_plugins(args))
    snapshot, api = _audit_snapshot(args, registry)
    for problem in snapshot.problems:
        print(f"warning: {problem.source}: {problem.message}", file=sys.stderr)
    pods = running_pods(snapshot)
    bar = Progress(len(pods), progress_enabled(args.progress), label="auditing")
    report = audit(snapshot, registry, pods, on_pod=bar.advance)
    bar.close()
    _write_policy_reports(args, api, report)
    if args.output == "json":
        out.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        out.write(audit_table(report, results_painter(3, out)) + "\n")
    failing = any(r.result in FAILING for pod in report.pods for r in pod.results)
    return EXIT_FAILED if failing else EXIT_PASSED


def _audit_flags(audit: argparse.ArgumentParser) -> None:
    flags.add_cluster_source(
        audit,
        reads="Pods, ClusterColocationProfiles, Namespaces, PriorityClasses, ...",
        through="list the cluster through this kubeconfig",
        required=True,
    )
    audit.add_argument(
        "--write-reports",
        action="store_true",
        help="write a wgpolicyk8s.io/v1alpha2 PolicyReport per namespace (--kubeconfig)",
    )
    flags.add_refuse_sensitive_patches(audit)
    add_admission_plugins(audit)
    audit.add_argument(
        "--policy-report",
        type=Path,
        metavar="FILE",
        help="write the wgpolicyk8s.io/v1alpha2 PolicyReports to FILE (YAML, one per namespace), no API server needed",
    )
    add_output(audit, ("table", "json"), default="table")
    flags.add_progress(audit)
    audit.set_defaults(func=_audit)
