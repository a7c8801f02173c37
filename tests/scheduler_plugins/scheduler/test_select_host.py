"""The host kube-scheduler's `selectHost` picks among nodes of equal total score: ours takes the
lowest node name (deterministic, so a simulation's placements do not depend on list order)."""

import numpy as np
import pytest

from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.scheduling import select_host
from tests.support.builders import make_node


def nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo(make_node(name)) for name in names]


@pytest.mark.parametrize(
    ("names", "totals", "chosen"),
    [
        (("b", "a", "c"), [7, 7, 7], 1),  # all tie: the lowest name, wherever it stands
        (("z", "m", "a", "k"), [5, 9, 3, 9], 3),  # ties among the best only: "k" < "m"
        (("z", "m", "a", "k"), [5, 9, 3, 8], 1),  # one best: it, whatever its name
        (("n3", "n10", "n2"), [1, 1, 0], 1),  # names compare as strings: "n10" < "n3"
    ],
)
def test_the_best_total_wins_and_ties_go_to_the_lowest_name(names, totals, chosen):
    assert select_host(nodes(*names), totals) == chosen
    assert select_host(nodes(*names), np.array(totals, dtype=np.int64)) == chosen


def test_many_ties_pick_the_lowest_name():
    names = [f"node-{i:04d}" for i in range(500)]
    order = names[250:] + names[:250]
    assert order[select_host(nodes(*order), [4] * len(order))] == "node-0000"
