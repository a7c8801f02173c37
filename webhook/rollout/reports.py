"""The audit's results as the Policy WG's `wgpolicyk8s.io/v1alpha2` PolicyReports, one per namespace.

As Kyverno does for its background scans: a result per pod and matched profile (policy = the
profile, rule = `colocation-profile`, result pass/fail/warn/error/skip, the differences in the
message), a summary of the counts, and one report object per namespace that is replaced in place on
every round, never duplicated. A report whose content did not change is not written again, so an
idle cluster costs the API server nothing; a namespace whose pods no longer match any profile has
its report deleted.

A report is bounded: results are ordered by severity (fail, warn, error, skip, pass) and at most
`MAX_RESULTS` are kept; the summary still counts every result and an annotation says how many were
left out (etcd refuses objects over 1.5 MiB, and a namespace may hold thousands of pods).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from policies.apis.constants import COLOCATE_PREFIX
from policies.apis.kinds import POLICY_REPORT_KIND, kind_named
from webhook.rollout.audit import RESULTS, AuditReport, PodAudit, ProfileResult

log = logging.getLogger("colocate.audit")

REPORT_NAME: Final = "colocate-audit"
RULE: Final = "colocation-profile"
SOURCE: Final = "colocate"
CATEGORY: Final = "ClusterColocationProfile"
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "colocate"
ANNOTATION_OMITTED: Final = f"{COLOCATE_PREFIX}/omitted-results"
MAX_RESULTS: Final = 1000
#: What writing reports needs, cluster-wide (manifests/deploy/rbac.yaml grants exactly this).
VERBS: Final = ("list", "create", "update", "delete")
_ORDER: Final = {"fail": 0, "warn": 1, "error": 2, "skip": 3, "pass": 4}


def _entry(pod: PodAudit, result: ProfileResult, seconds: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "policy": result.profile,
        "rule": RULE,
        "result": result.result,
        "source": SOURCE,
        "scored": True,
        "category": CATEGORY,
        "message": result.message or "the pod is what the profile makes of it",
        "timestamp": {"seconds": seconds, "nanos": 0},
        "resources": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                **({"uid": pod.uid} if pod.uid else {}),
            }
        ],
    }
    if result.changes:
        entry["properties"] = {"fields": ", ".join(c.path for c in result.changes)[:1024]}
    return entry


def policy_report(
    namespace: str, pods: Sequence[PodAudit], seconds: int, max_results: int = MAX_RESULTS
) -> dict[str, Any]:
    """The PolicyReport of one namespace's audited pods, at Unix time `seconds`."""
    entries = [_entry(pod, result, seconds) for pod in pods for result in pod.results]
    counts = Counter(entry["result"] for entry in entries)
    entries.sort(key=lambda e: (_ORDER[e["result"]], e["resources"][0]["name"], e["policy"]))
    metadata: dict[str, Any] = {"name": REPORT_NAME, "namespace": namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY}}
    if len(entries) > max_results:
        metadata["annotations"] = {ANNOTATION_OMITTED: str(len(entries) - max_results)}
    kind = kind_named(POLICY_REPORT_KIND)
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": metadata,
        "summary": {result: counts.get(result, 0) for result in RESULTS},
        "results": entries[:max_results],
    }


def policy_reports(report: AuditReport, seconds: int = 0, max_results: int = MAX_RESULTS) -> list[dict[str, Any]]:
    """One PolicyReport per namespace holding a pod some profile matched."""
    by_namespace: dict[str, list[PodAudit]] = {}
    for pod in report.pods:
        by_namespace.setdefault(pod.namespace, []).append(pod)
    return [policy_report(ns, pods, seconds, max_results) for ns, pods in sorted(by_namespace.items())]


def _content(report: Mapping[str, Any]) -> Any:
    """What a round may change in a report: everything but server fields and result timestamps."""
    metadata = report.get("metadata") or {}
    return (
        {k: metadata.get(k) for k in ("labels", "annotations")},
        report.get("summary"),
        [{k: v for k, v in r.items() if k != "timestamp"} for r in report.get("results") or ()],
    )


@dataclass
class WriteSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return ", ".join(f"{len(v)} {k}" for k, v in vars(self).items())


class ReportWriter:
    """Writes a round's reports through the API server: create, replace in place, or delete."""

    def __init__(self, api: client.ApiClient) -> None:
        self.kind = kind_named(POLICY_REPORT_KIND)
        self.custom = client.CustomObjectsApi(api)

    def _existing(self) -> dict[str, dict[str, Any]]:
        found = self.custom.list_cluster_custom_object(
            self.kind.group, self.kind.version, self.kind.plural, label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"
        )
        return {
            item["metadata"]["namespace"]: item
            for item in found.get("items") or ()
            if (item["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
            and item["metadata"].get("name") == REPORT_NAME
        }

    def write(self, reports: Sequence[dict[str, Any]]) -> WriteSummary:
        """Make the cluster's colocate reports exactly `reports`. A failed write is logged and
        retried by the next round (two replicas racing get a 409 here)."""
        done = WriteSummary()
        existing = self._existing()
        group, version, plural = self.kind.group, self.kind.version, self.kind.plural
        for report in reports:
            namespace = report["metadata"]["namespace"]
            current = existing.pop(namespace, None)
            try:
                if current is None:
                    self.custom.create_namespaced_custom_object(group, version, namespace, plural, report)
                    done.created.append(namespace)
                elif _content(current) == _content(report):
                    done.unchanged.append(namespace)
                else:
                    replacement = {
                        **report,
                        "metadata": {**report["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
                    }
                    self.custom.replace_namespaced_custom_object(
                        group, version, namespace, plural, REPORT_NAME, replacement
                    )
                    done.updated.append(namespace)
            except ApiException as exc:
                log.warning(
                    "writing the PolicyReport of namespace %s failed (%s); the next round retries",
                    namespace,
                    exc.status,
                )
                done.failed.append(namespace)
        for namespace in sorted(existing):
            try:
                self.custom.delete_namespaced_custom_object(group, version, namespace, plural, REPORT_NAME)
                done.deleted.append(namespace)
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("deleting the PolicyReport of namespace %s failed (%s)", namespace, exc.status)
                    done.failed.append(namespace)
        return done
