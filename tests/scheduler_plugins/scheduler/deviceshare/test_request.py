"""GPU requests: validation by combination, conversion, and memory ratio <-> bytes (Koordinator's
`pkg/scheduler/plugins/deviceshare/`)."""

import pytest

from scheduler_plugins.scheduler.plugins.deviceshare.request import GPURequest, InvalidRequest, gpu_request

GI = 1 << 30
CORE, RATIO, MEM = "koordinator.sh/gpu-core", "koordinator.sh/gpu-memory-ratio", "koordinator.sh/gpu-memory"
SHARED = "koordinator.sh/gpu.shared"


@pytest.mark.parametrize(
    "requests, expected",
    [
        ({"nvidia.com/gpu": 2}, GPURequest(2, 100, 100, 0)),
        ({"koordinator.sh/gpu": 50}, GPURequest(1, 50, 50, 0)),
        ({"koordinator.sh/gpu": 300}, GPURequest(3, 100, 100, 0)),
        ({CORE: 50, RATIO: 50}, GPURequest(1, 50, 50, 0)),
        ({MEM: 8 * GI}, GPURequest(1, 0, 0, 8 * GI)),
        ({SHARED: 2, CORE: 100, RATIO: 100}, GPURequest(2, 50, 50, 0)),
        ({SHARED: 2, CORE: 100, MEM: 16 * GI}, GPURequest(2, 50, 0, 8 * GI)),
        ({"cpu": 4000}, None),
    ],
)
def test_requests_convert_to_a_per_card_request(requests, expected):
    assert gpu_request(requests) == expected


@pytest.mark.parametrize(
    "requests",
    [
        {"koordinator.sh/gpu": 150},
        {CORE: 150, RATIO: 50},
        {"nvidia.com/gpu": 1, CORE: 50},
        {SHARED: 2, CORE: 101, MEM: GI},
        {SHARED: 2, CORE: 100},
        {SHARED: 1, CORE: 50, RATIO: 150},
    ],
)
def test_invalid_combinations_are_refused(requests):
    with pytest.raises(InvalidRequest):
        gpu_request(requests)


def test_memory_ratio_and_bytes_derive_from_each_other_on_a_card():
    assert GPURequest(1, 50, 50, 0).on_card(64 * GI) == (50, 50, 32 * GI)  # 50 % of 64Gi
    assert GPURequest(1, 0, 0, 16 * GI).on_card(64 * GI) == (0, 25, 16 * GI)
    assert GPURequest(1, 0, 0, 10 * GI).on_card(64 * GI)[1] == 15  # 15.6 truncated
    assert GPURequest(1, 50, 50, 0).shared and not GPURequest(1, 100, 100, 0).shared
