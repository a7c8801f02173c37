"""`manager plan -o table`: one row per node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colocate.cli.output import table
from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY


def plan_table(document: Mapping[str, Any]) -> str:
    rows = []
    for node in document.get("nodes") or []:
        allocatable = node.get("allocatable") or {}
        rows.append(
            [
                node["name"],
                *(allocatable.get(name, "-") for name in (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)),
                "yes" if node.get("update") else "no",
                node.get("reason", ""),
            ]
        )
    return table(["NODE", "BATCH-CPU", "BATCH-MEMORY", "MID-CPU", "MID-MEMORY", "UPDATE", "REASON"], rows)
