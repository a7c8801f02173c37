"""Hostile manifest files, built small: deep JSON, a YAML alias bomb."""

from __future__ import annotations

from pathlib import Path


def deep_json(path: Path, depth: int = 100_000) -> Path:
    """`[[[…]]]`: 200 KB that make a recursive parser raise RecursionError."""
    path.write_text("[" * depth + "]" * depth)
    return path


def alias_bomb(path: Path, name: str = "bomb", levels: int = 6) -> Path:
    """A ClusterColocationProfile of ~660 bytes whose `patch` nests aliases `levels` deep: ten
    references per level, 10**levels strings once expanded (it selects the quick-start's pods)."""
    names = "abcdefghij"[:levels]
    lines = [
        "apiVersion: config.koordinator.sh/v1alpha1",
        "kind: ClusterColocationProfile",
        f"metadata: {{name: {name}}}",
        "spec:",
        '  namespaceSelector: {matchLabels: {koordinator.sh/enable-colocation: "true"}}',
        '  selector: {matchLabels: {koordinator.sh/enable-colocation: "true"}}',
        "  patch:",
        "    metadata: {annotations: {x: y}}",
        "    spec:",
        "      l0: &a [" + ", ".join(["lol"] * 10) + "]",
    ]
    for level in range(1, levels):
        lines.append(f"      l{level}: &{names[level]} [" + ", ".join([f"*{names[level - 1]}"] * 10) + "]")
    lines.append(f"      bomb: *{names[levels - 1]}")
    path.write_text("\n".join(lines) + "\n")
    return path
