"""`descheduler run -o table`: per round, the nodes as classified and what was evicted."""

from __future__ import annotations

from typing import Any


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def rounds_table(document: dict[str, Any]) -> str:
    lines: list[str] = []
    for entry in document["rounds"]:
        dry = " (dry run)" if document.get("dryRun") else ""
        lines.append(f"round {entry['round']}{dry}")
        for error in entry.get("errors", []):
            lines.append(f"  error: {error}")
        if entry["nodes"]:
            rows = [["POOL", "NODE", "CLASS", "USAGE"]]
            for node in entry["nodes"]:
                usage = " ".join(f"{name}={pct:g}%" for name, pct in node["usage"].items()) or node.get("note", "")
                rows.append([str(node["pool"]), node["name"], node["classification"], usage])
            lines += ["  " + line for line in _columns(rows)]
        verb = "would evict" if document.get("dryRun") else "evicted"
        if entry["evictions"]:
            rows = [["POD", "NODE", "PLUGIN", "REASON"]]
            rows += [[e["pod"], e["node"], e["plugin"], e["reason"]] for e in entry["evictions"]]
            lines.append(f"  {verb}:")
            lines += ["    " + line for line in _columns(rows)]
        else:
            lines.append(f"  {verb}: nothing")
        for skip in entry.get("skipped", []):
            lines.append(f"  skipped {skip['pod']} ({skip['plugin']}): {skip['reason']}")
    return "\n".join(lines)
