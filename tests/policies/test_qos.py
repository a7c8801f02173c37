import pytest

from policies.apis.qos import translate_resource_name


@pytest.mark.parametrize(
    "priority_class, name, expected",
    [
        ("koord-prod", "cpu", "cpu"),
        ("", "memory", "memory"),
        ("koord-batch", "cpu", "kubernetes.io/batch-cpu"),
        ("koord-batch", "memory", "kubernetes.io/batch-memory"),
        ("koord-mid", "cpu", "kubernetes.io/mid-cpu"),
        ("koord-free", "cpu", ""),
        ("koord-batch", "nvidia.com/gpu", ""),
    ],
)
def test_resource_name_translation(priority_class, name, expected):
    assert translate_resource_name(priority_class, name) == expected
