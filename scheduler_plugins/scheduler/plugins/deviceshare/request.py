"""A pod's GPU request (Koordinator's `deviceshare/device_resources.go`,
`apis/extension/device_share.go`): validated by the combination of names it asks for, converted to
the per-card request (`gpu-core`, `gpu-memory-ratio`, `gpu-memory`) and the number of cards. Pure:
the pod's requests in, a `GPURequest` or a reason out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policies.apis.constants import GPU, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, GPU_SHARED, WHOLE_GPU_RESOURCES
from policies.apis.devices import FULL

GPU_NAMES = frozenset({*WHOLE_GPU_RESOURCES, GPU, GPU_SHARED, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO})
_PERCENT_COMBINATIONS = (
    frozenset({GPU_MEMORY}),
    frozenset({GPU_MEMORY_RATIO}),
    frozenset({GPU_CORE, GPU_MEMORY}),
    frozenset({GPU_CORE, GPU_MEMORY_RATIO}),
)


class InvalidRequest(ValueError):
    """A combination of GPU resources Koordinator refuses."""


def _percent_ok(value: int) -> bool:
    return value <= FULL or value % FULL == 0


@dataclass(frozen=True)
class GPURequest:
    """`count` cards, each with `core` and `ratio` percent and `memory` bytes; a 0 ratio or memory is
    derived from the other on each card (`memory = ratio × card memory / 100`)."""

    count: int
    core: int
    ratio: int
    memory: int

    @property
    def shared(self) -> bool:
        return self.ratio < FULL if self.ratio else True

    def on_card(self, card_memory: int) -> tuple[int, int, int]:
        """(core, ratio, memory) this request takes of one card with `card_memory` bytes."""
        ratio, memory = self.ratio, self.memory
        if not memory and card_memory:
            memory = ratio * card_memory // FULL
        if not ratio and card_memory:
            ratio = int(memory / card_memory * FULL)
        return self.core, ratio, memory


def gpu_request(requests: Mapping[str, int]) -> GPURequest | None:
    """The pod's GPU request (None: it asks for no GPU); raises InvalidRequest."""
    asked = {name: amount for name, amount in requests.items() if name in GPU_NAMES and amount > 0}
    if not asked:
        return None
    names = frozenset(asked)
    core = ratio = memory = 0
    shared = asked.get(GPU_SHARED, 0)
    if len(names) == 1 and next(iter(names)) in WHOLE_GPU_RESOURCES:
        core = ratio = FULL * asked[next(iter(names))]
    elif names == {GPU}:
        if not _percent_ok(asked[GPU]):
            raise InvalidRequest(f"{GPU} must be at most 100 or a multiple of 100")
        core = ratio = asked[GPU]
    elif names in _PERCENT_COMBINATIONS:
        core, ratio, memory = asked.get(GPU_CORE, 0), asked.get(GPU_MEMORY_RATIO, 0), asked.get(GPU_MEMORY, 0)
        if not (_percent_ok(core) and _percent_ok(ratio)):
            raise InvalidRequest("gpu-core and gpu-memory-ratio must be at most 100 or multiples of 100")
    elif GPU_SHARED in names and names - {GPU_SHARED, GPU_CORE} in ({GPU_MEMORY}, {GPU_MEMORY_RATIO}):
        core, ratio, memory = asked.get(GPU_CORE, 0), asked.get(GPU_MEMORY_RATIO, 0), asked.get(GPU_MEMORY, 0)
        for name, value in ((GPU_CORE, core), (GPU_MEMORY_RATIO, ratio)):
            if value % shared or value > FULL * shared:
                raise InvalidRequest(f"{name} must be a multiple of {GPU_SHARED} and at most 100 per card")
    else:
        raise InvalidRequest(f"unsupported combination of GPU resources: {', '.join(sorted(names))}")
    if shared:
        count = shared
    elif ratio > FULL and ratio % FULL == 0:
        count = ratio // FULL
    else:
        count = 1
    return GPURequest(count, core // count, ratio // count, memory // count)
