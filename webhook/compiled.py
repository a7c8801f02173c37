"""Which modules of the admission hot path are compiled with mypyc, and whether this process runs them so.

`pip install .`, the wheel and the image compile these modules to C extensions (`setup.py`): the
same source, type-checked with `mypy --strict`, without the interpreter's per-call overhead. On one
core that takes an admission from ~94 to ~72 µs of server CPU (`benchmarks/README.md`). Where no C
compiler is at hand the build falls back to the plain modules, which behave the same. Editable
installs (`pip install -e .`, the development set-up) stay plain Python so that an edit takes
effect; `COLOCATE_COMPILE=1` compiles them too, `COLOCATE_COMPILE=0` never compiles.

This module imports nothing of the project: `setup.py` reads `HOT_PATH` from it before anything is
installed.
"""

from __future__ import annotations

import importlib
from typing import Final

#: the modules one admission spends its time in (policies first: webhook modules import them)
HOT_PATH: Final = (
    "policies.selectors",
    "policies.qos",
    "policies.jsonpatch_diff",
    "policies.objects",
    "policies.shape",
    "policies.profile_matching",
    "policies.profile_apply",
    "policies.pod_mutation.resource_rewrite",
    "policies.pod_mutation.extended_resource_spec",
    "policies.pod_mutation.device_resources",
    "policies.pod_mutation",
    "policies.warn_only",
    "webhook.review",
    "webhook.admission",
    "webhook.metrics",
    "webhook.server",
)


def compiled_modules() -> tuple[str, ...]:
    """The modules of `HOT_PATH` this process imported from a C extension."""
    return tuple(name for name in HOT_PATH if not (importlib.import_module(name).__file__ or "").endswith(".py"))
