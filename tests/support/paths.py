"""Where things are: the repository root, wherever a test module sits in the tree."""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
