"""The list of compiled modules (colocate/cluster/compiled.py) stays one mypyc can build and run as the
interpreter does.

The compiled copy itself is built and tested by `.ci/run` (minutes: too slow for the suite); what can
be checked on the plain tree in seconds is checked here, so that a change elsewhere (a new subclass
of a compiled class, an ordered dataclass) is named by the ordinary test run.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from colocate.cluster.compiled import ADMISSION, COMPILED, DEFAULT_GROUPS, GROUPS, WHATIF, compiled_modules, modules_of
from devtools.compiled_copy import hazards, ordering_drops_equality, project_modules
from policies.apis.quantity import Quantity


def test_every_listed_module_exists_once() -> None:
    modules = set(project_modules())
    assert set(COMPILED) <= modules, sorted(set(COMPILED) - modules)
    assert len(COMPILED) == len(set(COMPILED)) == len(ADMISSION) + len(WHATIF)
    assert set(COMPILED) == {name for group in GROUPS.values() for name in group}


def test_nothing_compiled_would_run_differently() -> None:
    assert hazards(COMPILED) == []


def test_a_subclass_of_a_compiled_class_is_named() -> None:
    """colocate.cluster.views' SyncedView is extended by the descheduler's view, which is not compiled."""
    found = hazards({"colocate.cluster.views"})
    assert any(line.startswith("scheduler_plugins.descheduler.cluster.DeschedulerView derives") for line in found)


@dataclass(frozen=True)
class _Ordered:
    n: int

    def __lt__(self, other: _Ordered) -> bool:
        return self.n < other.n


@dataclass(frozen=True, order=True)
class _OrderedByTheDataclass:
    n: int


def test_an_ordered_dataclass_without_its_own_equality_is_named() -> None:
    assert ordering_drops_equality(_Ordered)
    assert not ordering_drops_equality(_OrderedByTheDataclass)
    assert not ordering_drops_equality(Quantity)  # it writes == and hash out
    assert Quantity(1) == Quantity(1) and hash(Quantity(1)) == hash(Quantity(1)) and Quantity(1) != Quantity(2)


def test_the_build_under_test_is_all_or_nothing() -> None:
    """Plain in the checkout, every listed module compiled in `devtools.compiled_copy`'s copy."""
    compiled = compiled_modules()
    assert len(compiled) in (0, len(COMPILED)), f"a mixed build: {sorted(compiled)}"


def test_pip_install_compiles_the_admission_group_unless_asked_for_more() -> None:
    """setup.py compiles `DEFAULT_GROUPS` (the quick start stays quick); COLOCATE_COMPILE_GROUPS names others."""
    assert modules_of(DEFAULT_GROUPS) == ADMISSION
    assert modules_of(["admission", "whatif"]) == COMPILED
    with pytest.raises(ValueError, match="no compiled group wat"):
        modules_of(["wat"])


def test_the_manager_plugin_tables_modules_are_compiled_with_whatif() -> None:
    """A what-if step plans every node through the manager's plugin table: the framework and every
    in-tree plugin's module run per node and round. When the table moved the batch and mid code into
    `plugins/*/`, those modules fell out of the group and the day took a third more instructions."""
    from scheduler_plugins.manager.noderesource import framework, memo, plan
    from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE

    per_round = {type(plugin).__module__ for plugin in DEFAULT_TABLE.plugins}
    per_round |= {framework.__name__, memo.__name__, plan.__name__}
    assert per_round <= set(WHATIF), sorted(per_round - set(WHATIF))
