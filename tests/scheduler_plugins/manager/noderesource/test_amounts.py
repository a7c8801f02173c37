"""The plan compares integers it already has (`update.decide_amounts`) rather than parsing the texts
it wrote back (`update.decide`): the two must always agree, as must the amounts `prepare_amounts`
hands over with the texts it writes."""

from __future__ import annotations

import json
import random

import pytest

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from policies.apis.quantity import QuantityFormat
from scheduler_plugins.manager.noderesource.inputs import lenient_milli, read_node
from tests.scheduler_plugins.manager.noderesource.builders import (
    Calculated,
    decide,
    decide_amounts,
    node,
    prepare_amounts,
    prepare_node,
)
from tests.scheduler_plugins.manager.noderesource.test_degrade_and_update import strategy

EXTENDED = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)
THIRD_PARTY = "node.koordinator.sh/third-party-allocations"
ORIGIN = "node.koordinator.sh/originExtendedAllocatable"


def amounts_cases() -> list[tuple[object, ...]]:
    rng = random.Random(30)
    cases: list[tuple[object, ...]] = []
    for fmt in QuantityFormat:
        for _ in range(40):
            batch = (
                rng.randrange(-5, 10**6),
                rng.choice([0, 999, 2**40 * 1000 + rng.randrange(10**6), rng.randrange(10**18)]),
            )
            mid = (rng.randrange(10**5), rng.randrange(10**15))
            cases.append((fmt, batch, mid, rng.choice([None, "1.00", "1.37", "x"])))
    cases.append((QuantityFormat.DECIMAL_EXPONENT, (1000, 10**70 * 1000), None, None))  # an exponent form
    cases.append((QuantityFormat.DECIMAL_SI, None, None, None))
    return cases


@pytest.mark.parametrize(("fmt", "batch", "mid", "ratio"), amounts_cases())
@pytest.mark.parametrize(
    "third_party",
    [
        None,
        '{"allocations":[{"priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1500","kubernetes.io/batch-memory":"1.5"}}]}',
    ],
)
def test_the_amounts_handed_over_are_what_the_written_texts_say(
    fmt: QuantityFormat,
    batch: tuple[int, int] | None,
    mid: tuple[int, int] | None,
    ratio: str | None,
    third_party: str | None,
) -> None:
    annotations = {THIRD_PARTY: third_party} if third_party else {}
    the_node = node(annotations=annotations)
    prepared, amounts, written = prepare_amounts(the_node, batch, mid, fmt, ratio, None)
    allocatable = prepared["allocatable"]
    assert amounts == {name: lenient_milli(allocatable[name]) for name in EXTENDED if name in allocatable}
    assert written == {name: allocatable[name] for name in EXTENDED if name in allocatable}
    assert list(written) == [name for name in EXTENDED if name in allocatable]
    assert prepared == prepare_node(the_node, Calculated(batch, mid, fmt, ratio))


@pytest.mark.parametrize(
    ("old", "new", "old_annotations", "new_annotations", "last_write"),
    [
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "30000", BATCH_MEMORY: "40G"}, {}, {}, 1000.0),
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "20000"}, {}, {}, 1000.0),
        ({}, {MID_CPU: "0", MID_MEMORY: "0"}, {}, {}, None),
        ({MID_CPU: "0"}, {MID_CPU: "0"}, {}, {}, 1000.0),
        ({MID_CPU: "bogus", BATCH_CPU: "1e3"}, {MID_CPU: "5", BATCH_CPU: "1000"}, {}, {}, 1000.0),  # 0 when unparsable
        ({BATCH_CPU: 7}, {BATCH_CPU: "7"}, {}, {}, 1000.0),  # a JSON number
        (
            {},
            {},
            {"node.koordinator.sh/cpu-normalization-ratio": "x"},
            {"node.koordinator.sh/cpu-normalization-ratio": "x"},
            1000.0,
        ),
        (
            {},
            {},
            {"node.koordinator.sh/cpu-normalization-ratio": "1.00"},
            {"node.koordinator.sh/cpu-normalization-ratio": "1.00"},
            1000.0,
        ),
        (
            {},
            {},
            {"node.koordinator.sh/cpu-normalization-ratio": "1.00"},
            {"node.koordinator.sh/cpu-normalization-ratio": "1.20"},
            1000.0,
        ),
        ({}, {}, {}, {"node.koordinator.sh/resource-amplification-ratio": '{"cpu":1.50}'}, 1000.0),
        ({}, {}, {"node.koordinator.sh/resource-amplification-ratio": '{"cpu":1.50}'}, {}, 1000.0),
    ],
)
def test_decide_over_amounts_is_decide_over_texts(
    old: dict[str, object],
    new: dict[str, object],
    old_annotations: dict[str, str],
    new_annotations: dict[str, str],
    last_write: float | None,
) -> None:
    """Test_isNodeResourceSyncNeeded's rule, both ways: the same decision and the same reason."""
    the_strategy = strategy(resourceDiffThreshold=0.1)
    by_texts = decide(the_strategy, old, new, old_annotations, new_annotations, last_write, 1060.0)
    by_amounts = decide_amounts(
        the_strategy,
        {name: lenient_milli(old[name]) for name in EXTENDED if name in old},
        {name: lenient_milli(new[name]) for name in EXTENDED if name in new},
        old_annotations,
        new_annotations,
        last_write,
        1060.0,
    )
    assert (by_amounts.status, by_amounts.meta, by_amounts.reason) == (by_texts.status, by_texts.meta, by_texts.reason)


def test_a_node_read_holds_its_current_amounts_as_the_update_rule_reads_them() -> None:
    read = read_node(node(allocatable={BATCH_CPU: "25000", BATCH_MEMORY: "33G", MID_CPU: "oops"}))
    assert read.current_milli == {BATCH_CPU: 25_000_000, BATCH_MEMORY: 33 * 10**12, MID_CPU: 0}


def test_an_origin_annotation_with_other_resources_keeps_them() -> None:
    kept = json.dumps({"resources": {"example.com/gpu": "2", BATCH_CPU: "1"}})
    prepared, _, _ = prepare_amounts(
        node(annotations={ORIGIN: kept}), (5000, 2**30 * 1000), None, QuantityFormat.BINARY_SI, None, None
    )
    assert json.loads(prepared["annotations"][ORIGIN]) == {
        "resources": {BATCH_CPU: "5k", BATCH_MEMORY: "1Gi", "example.com/gpu": "2"}
    }
