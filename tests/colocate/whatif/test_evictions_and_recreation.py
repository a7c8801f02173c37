"""The koordlet evicts through the run's store, and a controller re-creates what it owns."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import EXAMPLE, Whatif

HOGS = """\
apiVersion: colocate.io/v1alpha1
kind: Workload
spec:
  running:
    - selector: {{matchLabels: {{app: web}}}}
      usage: {{cpu: {{constant: "2"}}, memory: {{constant: 12Gi}}}}
  arrivals:
    - name: hog
      count: 4
      template:
        metadata:
          namespace: batch
          labels: {{koordinator.sh/enable-colocation: "true"}}
          {owner}
        spec: {{containers: [{{name: c, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]}}
      usage: {{memory: {{step: [{{at: 0s, value: 1Gi}}, {{at: 10m, value: 18Gi}}]}}}}
"""
JOB = "ownerReferences: [{apiVersion: batch/v1, kind: Job, name: hog, uid: hog-job, controller: true}]"


def _run(whatif: Whatif, tmp_path: Path, owner: str) -> dict:  # type: ignore[type-arg]
    workload = tmp_path / "hogs.yaml"
    workload.write_text(HOGS.format(owner=owner))
    code, out, err = whatif(
        "--cluster",
        str(EXAMPLE / "cluster"),
        "--workload",
        str(workload),
        "--profiles",
        str(EXAMPLE / "profiles"),
        "--duration",
        "13m",
        "--koordlet-feature-gates",
        "BEMemoryEvict=true",
        "-o",
        "json",
    )
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_memory_evict_evicts_be_pods_and_their_job_recreates_them(whatif: Whatif, tmp_path: Path) -> None:
    run = _run(whatif, tmp_path, JOB)
    at_ten = next(s for s in run["steps"] if s["t"] == "2026-01-01T00:10:00Z")
    assert {e["by"] for e in at_ten["evictions"]} == {"koordlet/MemoryEvict"}
    assert len(at_ten["evictions"]) == 2  # one per node brings it under 90 % of its memory
    assert run["summary"]["recreated"] >= 2
    after = next(s for s in run["steps"] if s["t"] == "2026-01-01T00:11:00Z")
    assert after["admitted"] == after["placed"] == 2  # admitted again and placed the step after


def test_a_bare_pod_that_is_evicted_is_gone(whatif: Whatif, tmp_path: Path) -> None:
    run = _run(whatif, tmp_path, "")
    assert sum(len(s["evictions"]) for s in run["steps"]) == 2
    assert run["summary"]["recreated"] == 0
    assert run["steps"][-1]["pending"] == 0
