"""`colocate serve` and `colocate apply`: argument parsing only; the work is done elsewhere."""
from __future__ import annotations

import argparse


def register_commands(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add `serve` and `apply` (filled in by the pod admission work)."""
