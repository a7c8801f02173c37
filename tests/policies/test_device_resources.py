"""GPU normalisation (Koordinator's `pkg/webhook/pod/mutating/device_resource_spec.go`)."""

import pytest

from tests.support.admission import make_snapshot, mutate
from tests.support.builders import make_pod


def resources(requests, limits=None):
    out = mutate(make_pod(requests=requests, limits=limits), make_snapshot())
    return out["spec"]["containers"][0]["resources"]


@pytest.mark.parametrize(
    "requests, shared",
    [
        (
            {
                "koordinator.sh/gpu-core": "100",
                "koordinator.sh/gpu-memory": "4k",
                "koordinator.sh/gpu-memory-ratio": "50",
            },
            "1",
        ),
        ({"koordinator.sh/gpu-memory-ratio": "200"}, "2"),
        ({"koordinator.sh/gpu-memory-ratio": "150"}, "1"),
        ({"koordinator.sh/gpu-core": "300"}, "3"),
        ({"koordinator.sh/gpu-memory": "1Gi"}, "1"),
    ],
)
def test_shared_count_from_ratio_or_core(requests, shared):
    result = resources(requests)
    assert result["requests"]["koordinator.sh/gpu.shared"] == shared
    assert result["limits"]["koordinator.sh/gpu.shared"] == shared


def test_whole_gpus_become_core_and_ratio():
    result = resources({"koordinator.sh/gpu": "200"}, {"koordinator.sh/gpu": "200"})
    for section in ("requests", "limits"):
        assert result[section] == {
            "koordinator.sh/gpu-core": "200",
            "koordinator.sh/gpu-memory-ratio": "200",
            "koordinator.sh/gpu.shared": "2",
        }


def test_an_explicit_shared_count_is_kept():
    result = resources({"koordinator.sh/gpu-core": "200", "koordinator.sh/gpu.shared": "1"})
    assert result["requests"]["koordinator.sh/gpu.shared"] == "1" and "limits" not in result


def test_containers_without_gpus_are_untouched():
    assert resources({"cpu": "1", "nvidia.com/gpu": "1"}) == {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}
