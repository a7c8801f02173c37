"""The runtime distribution of one resource among the children of one quota (Koordinator's
`core/runtime_quota_calculator.go`, `core/scale_minquota_when_over_root_res.go`).

Pure integer arithmetic (Python integers are exact, so the 128-bit products of Koordinator's
`computeHamiltonDeltas` need no special care): every child first gets its floor (`max(min,
guarantee)`, or its request when it lends and asks for less), then what is left of the parent's
total is shared by weight among the children that want more, never above their request, by the
largest-remainder method, repeatedly until nothing is left or nobody wants more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Share:
    """One child in one resource dimension: `request` is its limited request, `min` its scaled min."""

    name: str
    request: int
    min: int = 0
    guarantee: int = 0
    weight: int = 0
    allow_lent: bool = True


def hamilton(total: int, shares: Sequence[Share]) -> list[int]:
    """`total` split proportionally to the weights, integer parts first, then one unit each to the
    largest remainders (ties: smaller name first); weights ≤ 0 get nothing."""
    deltas = [0] * len(shares)
    weight_sum = sum(s.weight for s in shares if s.weight > 0)
    if weight_sum <= 0 or total <= 0:
        return deltas
    remainders = []
    for i, share in enumerate(shares):
        if share.weight <= 0:
            continue
        deltas[i], remainder = divmod(share.weight * total, weight_sum)
        remainders.append((-remainder, share.name, i))
    residual = total - sum(deltas)
    for _, _, i in sorted(remainders)[: max(residual, 0)]:
        deltas[i] += 1
    return deltas


def distribute(total: int, shares: Sequence[Share]) -> dict[str, int]:
    """Each child's runtime for this resource (Koordinator's `quotaTree.redistribution`)."""
    runtime: dict[str, int] = {}
    to_partition = total
    wanting: list[Share] = []
    for share in shares:
        floor = max(share.min, share.guarantee)
        if share.request > floor:
            runtime[share.name] = floor
            wanting.append(share)
        else:
            runtime[share.name] = share.request if share.allow_lent else floor
        to_partition -= runtime[share.name]
    while to_partition > 0 and wanting and sum(s.weight for s in wanting) > 0:
        deltas = hamilton(to_partition, wanting)
        to_partition, still = 0, []
        for share, delta in zip(wanting, deltas, strict=True):
            runtime[share.name] += delta
            if runtime[share.name] < share.request:
                still.append(share)
            else:
                to_partition += runtime[share.name] - share.request
                runtime[share.name] = share.request
        wanting = still
    return runtime


def scaled_mins(total: int, mins: dict[str, int], scalable: frozenset[str] | None = None) -> dict[str, int]:
    """Min scaling (`scale_minquota_when_over_root_res.go`): when the children's mins exceed the
    parent's total, the scalable children's mins shrink in proportion to what the others leave
    (`scalable` None: all)."""
    if sum(mins.values()) <= total:
        return dict(mins)
    names = mins.keys() if scalable is None else scalable & mins.keys()
    fixed = sum(v for k, v in mins.items() if k not in names)
    scalable_sum = sum(mins[k] for k in names)
    available = total - fixed
    out = dict(mins)
    for name in names:
        out[name] = 0 if available <= 0 or scalable_sum <= 0 else int(available * mins[name] / scalable_sum)
    return out
