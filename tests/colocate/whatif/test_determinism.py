"""Same inputs and seed, the same bytes; the seed is what varies a noisy run."""

from __future__ import annotations

import gc
from pathlib import Path

from .conftest import EXAMPLE, Whatif

NOISY = """\
apiVersion: colocate.io/v1alpha1
kind: Workload
spec:
  running:
    - selector: {matchLabels: {app: web}}
      usage: {cpu: {daily: {min: "1", max: "3.5", peakAt: "12:00"}, noise: 20}, memory: {constant: 12Gi, noise: 5}}
  arrivals:
    - name: spark
      at: 0s
      every: 30m
      count: 6
      lifetime: 1h
      template:
        metadata: {namespace: batch, labels: {koordinator.sh/enable-colocation: "true"}}
        spec: {containers: [{name: executor, resources: {requests: {cpu: "1", memory: 2Gi}}}]}
      usage: {cpu: {series: {values: ["500m", "1", "1500m"], every: 10m}, noise: 30}}
"""


def _run(whatif: Whatif, workload: Path, seed: str) -> str:
    code, out, err = whatif(
        "--cluster",
        str(EXAMPLE / "cluster"),
        "--workload",
        str(workload),
        "--profiles",
        str(EXAMPLE / "profiles"),
        "--duration",
        "3h",
        "--seed",
        seed,
        "-o",
        "json",
    )
    assert code == 0, err
    return out


def test_the_same_inputs_and_seed_give_byte_identical_output(whatif: Whatif, tmp_path: Path) -> None:
    workload = tmp_path / "noisy.yaml"
    workload.write_text(NOISY)
    first, second = _run(whatif, workload, "7"), _run(whatif, workload, "7")
    assert first == second
    assert _run(whatif, workload, "8") != first  # the noise comes from the seed


def test_a_run_leaves_the_collector_as_it_found_it(whatif: Whatif, tmp_path: Path) -> None:
    """The run raises the collector's young-generation threshold while it steps (colocate/whatif/loop.py);
    a program that runs whatif in its own process gets its own thresholds back, and nothing stays frozen."""
    before = gc.get_threshold()
    workload = tmp_path / "noisy.yaml"
    workload.write_text(NOISY)
    _run(whatif, workload, "1")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
