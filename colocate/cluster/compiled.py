"""Which modules are compiled with mypyc, grouped by what they speed up, and whether this process runs them so.

`pip install .`, the wheel and the image compile `COMPILED` to C extensions (`setup.py`): the same
source, type-checked with `mypy --strict`, without the interpreter's per-call overhead. The groups
say why each module is there, measured on one core (`benchmarks/README.md`, docs/benchmarks.md):
`ADMISSION`, what one admission spends its time in (~94 to ~72 µs of server CPU); `WHATIF`, what
`colocate whatif`'s steps spend theirs in beyond that (the manager, the koordlet's strategies, the
scheduler's LoadAware cache, the store, the loop). Where no C compiler is at hand the build falls
back to the plain modules, which behave the same. Editable installs (`pip install -e .`, the
development set-up) stay plain Python so that an edit takes effect; `COLOCATE_COMPILE=1` compiles
them too, `COLOCATE_COMPILE=0` never compiles.

One list for the whole project, here in the shared core because the components that report it
(`colocate serve`, `colocate whatif`) both import `cluster`. This module imports nothing of the
project: `setup.py` reads it before anything is installed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Final

#: the modules one admission spends its time in (policies first: webhook modules import them)
ADMISSION: Final = (
    "policies.apis.selectors",
    "policies.apis.qos",
    "policies.apis.jsonpatch_diff",
    "policies.apis.objects",
    "policies.apis.shape",
    "policies.admission.profile_matching",
    "policies.admission.profile_apply",
    "policies.admission.pod_mutation.resource_rewrite",
    "policies.admission.pod_mutation.extended_resource_spec",
    "policies.admission.pod_mutation.device_resources",
    "policies.admission.pod_mutation",
    "policies.admission.warn_only",
    "webhook.review",
    "webhook.admission",
    "webhook.metrics",
    "webhook.server",
)

#: the modules a `colocate whatif` step spends its time in, beyond `ADMISSION` (which admits its
#: arrivals): chosen by cProfile's own time per module and kept where a compiled build measured faster
WHATIF: Final = (
    "policies.apis.quantity",
    "policies.apis.nodemetric",
    "policies.apis.timestamps",
    "scheduler_plugins.manager.noderesource.plan",
    "scheduler_plugins.manager.noderesource.framework",
    "scheduler_plugins.manager.noderesource.prepare",
    "scheduler_plugins.manager.noderesource.plugins.batchresource.batch",
    "scheduler_plugins.manager.noderesource.plugins.batchresource.plugin",
    "scheduler_plugins.manager.noderesource.plugins.batchresource.prepare",
    "scheduler_plugins.manager.noderesource.plugins.midresource.mid",
    "scheduler_plugins.manager.noderesource.plugins.midresource.plugin",
    "scheduler_plugins.manager.noderesource.plugins.cpunormalization.plugin",
    "scheduler_plugins.manager.noderesource.plugins.resourceamplification.plugin",
    "scheduler_plugins.manager.noderesource.inputs",
    "scheduler_plugins.manager.noderesource.update",
    "scheduler_plugins.manager.noderesource.memo",
    "scheduler_plugins.manager.noderesource.plugins.batchresource.numa",
    "colocate.cluster.store",
    "scheduler_plugins.manager.reconciler",
    "scheduler_plugins.koordlet.framework",
    "scheduler_plugins.koordlet.usage",
    "scheduler_plugins.koordlet.strategies.base",
    "scheduler_plugins.koordlet.strategies.cpusuppress",
    "scheduler_plugins.koordlet.strategies.cpuburst",
    "scheduler_plugins.koordlet.strategies.cpuevict",
    "scheduler_plugins.koordlet.strategies.memoryevict",
    "scheduler_plugins.scheduler.plugins.loadaware.cache",
    "colocate.whatif.usage",
    "colocate.whatif.loop",
    "colocate.whatif.pods",
    "colocate.whatif.workload",
    "colocate.whatif.components",
)

#: the groups by name (`colocate whatif --log-level info` and `colocate serve` say how many of theirs run compiled)
GROUPS: Final = {"admission": ADMISSION, "whatif": WHATIF}

#: every module that may be compiled, each once, in the groups' order (what `devtools.compiled_copy`
#: compiles and tests)
COMPILED: Final = tuple(dict.fromkeys(name for group in GROUPS.values() for name in group))

#: the groups `pip install .` compiles unless COLOCATE_COMPILE_GROUPS names others: the admission
#: hot path only. Compiling `WHATIF` too costs about four times the CPU (166 s against 38 s, measured
#: in benchmarks/quickstart_bench.py's notes), which would put the README's first command past two
#: minutes; `COLOCATE_COMPILE_GROUPS=admission,whatif pip install .` compiles both
DEFAULT_GROUPS: Final = ("admission",)


def modules_of(groups: Iterable[str]) -> tuple[str, ...]:
    """The modules of the named groups, each once, in the groups' order; an unknown name is an error."""
    names = list(groups)
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        raise ValueError(f"no compiled group {', '.join(unknown)} (there are {', '.join(GROUPS)})")
    return tuple(dict.fromkeys(module for name in names for module in GROUPS[name]))


def compiled_modules(modules: Iterable[str] = COMPILED) -> tuple[str, ...]:
    """Those of `modules` this process imported from a C extension (importing them if need be)."""
    return tuple(name for name in modules if not (importlib.import_module(name).__file__ or "").endswith(".py"))


def describe() -> str:
    """How many of each group's modules this process runs compiled, for a log line:
    `admission 16 of 16, whatif 26 of 26` (importing every group's modules)."""
    return ", ".join(f"{group} {len(compiled_modules(names))} of {len(names)}" for group, names in GROUPS.items())
