"""`descheduler run -o table`: per round, the nodes as classified and what was evicted."""

from __future__ import annotations

from typing import Any

from colocate.cli.output import table_lines


def rounds_table(document: dict[str, Any]) -> str:
    lines: list[str] = []
    for entry in document["rounds"]:
        dry = " (dry run)" if document.get("dryRun") else ""
        lines.append(f"round {entry['round']}{dry}")
        for error in entry.get("errors", []):
            lines.append(f"  error: {error}")
        for failed in entry.get("failedPlugins", []):
            lines.append(f"  plugin failed: {failed}")
        if entry["nodes"]:
            rows: list[list[str]] = []
            for node in entry["nodes"]:
                usage = " ".join(f"{name}={pct:g}%" for name, pct in node["usage"].items()) or node.get("note", "")
                rows.append([str(node["pool"]), node["name"], node["classification"], usage])
            lines += ["  " + line for line in table_lines(["POOL", "NODE", "CLASS", "USAGE"], rows)]
        verb = "would evict" if document.get("dryRun") else "evicted"
        if entry["evictions"]:
            rows = [[e["pod"], e["node"], e["plugin"], e["reason"]] for e in entry["evictions"]]
            lines.append(f"  {verb}:")
            lines += ["    " + line for line in table_lines(["POD", "NODE", "PLUGIN", "REASON"], rows)]
        else:
            lines.append(f"  {verb}: nothing")
        for skip in entry.get("skipped", []):
            lines.append(f"  skipped {skip['pod']} ({skip['plugin']}): {skip['reason']}")
    return "\n".join(lines)
