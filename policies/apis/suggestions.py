"""The "did you mean" hint: the one way every input names the spelling a typo was probably meant to be.

Profiles (`structural.unknown_field`), test suites and configuration (`Fields.only`), whatif's
workload files and the command line (`colocate aply`, a misspelt flag) all ask here, so a user gets the
same hint, found the same way, wherever the typo is. The match is `difflib`'s (ratio >= 0.6), with a
case-insensitive exact match as a fallback (`Arrivals` for `arrivals`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: how alike two spellings must be (difflib's ratio) for one to be suggested for the other
CUTOFF = 0.6


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known spelling `word` was most likely meant to be, or None when none is close."""
    candidates = [k for k in known if k]
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=CUTOFF)
    if close:
        return close[0]
    folded = [k for k in candidates if k.lower() == word.lower()]
    return folded[0] if folded else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean "x"?)` to append to an error about `word`, or "" when nothing is close."""
    match = closest(word, known)
    return f' (did you mean "{match}"?)' if match else ""
