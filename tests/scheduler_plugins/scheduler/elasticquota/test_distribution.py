"""The runtime distribution (`core/runtime_quota_calculator.go`) and min scaling
(`core/scale_minquota_when_over_root_res.go`) against worked examples."""

import pytest

from scheduler_plugins.scheduler.plugins.elasticquota.distribution import Share, distribute, hamilton, scaled_mins

# Koordinator's runtime_quota_calculator_test.go, T = 100: (weight, request, min); A lends.
A = Share("A", request=5, min=10, weight=40, allow_lent=True)
B = Share("B", request=20, min=15, weight=60, allow_lent=False)
C = Share("C", request=40, min=20, weight=50, allow_lent=False)
D = Share("D", request=70, min=15, weight=80, allow_lent=False)


def test_borrowers_share_what_lenders_leave_by_weight_up_to_their_request():
    assert distribute(100, [A, B, C, D]) == {"A": 5, "B": 20, "C": 35, "D": 40}


def test_a_zero_weight_borrower_keeps_its_min():
    d0 = Share("D", request=70, min=15, weight=0, allow_lent=False)
    assert distribute(100, [A, B, C, d0]) == {"A": 5, "B": 20, "C": 40, "D": 15}


def test_a_guarantee_is_a_floor_the_others_share_around():
    d0 = Share("D", request=70, min=15, guarantee=45, weight=0, allow_lent=False)
    assert distribute(100, [A, B, C, d0]) == {"A": 5, "B": 20, "C": 30, "D": 45}


def test_a_guarantee_above_min_still_borrows_by_weight():
    # floors 5 + 15 + 20 + 45 = 85; 15 left by 60:50:80 -> 4.7, 3.9, 6.3 -> 5, 4, 6 (largest remainders)
    dg = Share("D", request=70, min=15, guarantee=45, weight=80, allow_lent=False)
    assert distribute(100, [A, B, C, dg]) == {"A": 5, "B": 20, "C": 24, "D": 51}


def test_a_quota_that_does_not_lend_keeps_its_min_though_it_asks_for_less():
    idle = Share("idle", request=0, min=30, weight=1, allow_lent=False)
    busy = Share("busy", request=100, min=10, weight=1)
    assert distribute(100, [idle, busy]) == {"idle": 30, "busy": 70}
    lending = Share("idle", request=0, min=30, weight=1, allow_lent=True)
    assert distribute(100, [lending, busy]) == {"idle": 0, "busy": 100}


def test_the_remainder_goes_to_the_largest_remainders_then_the_smaller_name():
    assert hamilton(10, [Share("x", 0, weight=1), Share("y", 0, weight=1), Share("z", 0, weight=1)]) == [4, 3, 3]
    assert hamilton(7, [Share("b", 0, weight=2), Share("a", 0, weight=1)]) == [5, 2]  # 4.67 / 2.33


@pytest.mark.parametrize("total", [1, 7, 99, 1000, 10**15 + 7])
def test_every_unit_is_handed_out_when_demand_exceeds_the_total(total):
    shares = [Share(f"q{i}", request=total, min=0, weight=w) for i, w in enumerate((3, 5, 7, 11))]
    assert sum(distribute(total, shares).values()) == total


def test_memory_sized_numbers_are_split_exactly():
    big = 2**62
    out = distribute(big, [Share("a", big, weight=2**40), Share("b", big, weight=3)])
    assert sum(out.values()) == big


def test_mins_above_the_total_shrink_in_proportion():
    assert scaled_mins(100, {"a": 100, "b": 50, "c": 50}) == {"a": 50, "b": 25, "c": 25}
    assert scaled_mins(100, {"a": 40, "b": 60}) == {"a": 40, "b": 60}
    assert scaled_mins(100, {"a": 80, "b": 40}, scalable=frozenset({"b"})) == {"a": 80, "b": 20}
    assert scaled_mins(50, {"a": 80, "b": 40}, scalable=frozenset({"b"})) == {"a": 80, "b": 0}
