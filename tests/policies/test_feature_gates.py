"""`--feature-gates` is read as component-base reads it, the same in every component."""

from __future__ import annotations

import pytest

from policies.apis.feature_gates import parse_feature_gates
from policies.apis.field_errors import ConfigError
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.scheduler.framework.features import scheduler_gates

GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"]
GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"]
NOT_BOOLS = ["yes", "on", "tRuE", "2", "", "truee"]


@pytest.mark.parametrize("spelling", GO_TRUE)
def test_every_spelling_go_reads_as_true_turns_a_gate_on_in_both_components(spelling: str) -> None:
    assert koordlet_gates(f"CgroupReconcile={spelling}").enabled("CgroupReconcile")
    assert scheduler_gates(f"ElasticQuotaGuaranteeUsage={spelling}").enabled("ElasticQuotaGuaranteeUsage")


@pytest.mark.parametrize("spelling", GO_FALSE)
def test_every_spelling_go_reads_as_false_turns_a_gate_off_in_both_components(spelling: str) -> None:
    assert not koordlet_gates(f"BECPUSuppress={spelling}").enabled("BECPUSuppress")
    assert not parse_feature_gates(f"G={spelling}", {"G": True}).enabled("G")


@pytest.mark.parametrize("spelling", NOT_BOOLS)
def test_any_other_value_is_the_same_error_in_both_components(spelling: str) -> None:
    message = f'invalid value of {{}}={spelling}, err: strconv.ParseBool: parsing "{spelling}": invalid syntax'
    with pytest.raises(ConfigError) as koordlet:
        koordlet_gates(f"CPUBurst={spelling}")
    with pytest.raises(ConfigError) as scheduler:
        scheduler_gates(f"ElasticQuotaGuaranteeUsage={spelling}")
    assert str(koordlet.value) == "--feature-gates: " + message.format("CPUBurst")
    assert str(scheduler.value) == "--feature-gates: " + message.format("ElasticQuotaGuaranteeUsage")


def test_spaces_around_items_names_and_values_are_ignored() -> None:
    gates = koordlet_gates(" CgroupReconcile = true ,, BECPUSuppress=false ")
    assert gates.enabled("CgroupReconcile") and not gates.enabled("BECPUSuppress")


def test_a_gate_the_code_asks_for_that_does_not_exist_is_a_bug_not_a_gate_that_is_off() -> None:
    with pytest.raises(KeyError, match="NoSuchGate"):
        scheduler_gates().enabled("NoSuchGate")
