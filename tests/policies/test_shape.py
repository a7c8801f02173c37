"""What the webhook refuses as a bad object before any plugin reads it."""
import pytest

from policies.quantity import Quantity, QuantityError
from policies.shape import MAX_DEPTH, depth_error, object_error
from tests.support.builders import make_container, make_pod


def _nested(depth):
    value = "x"
    for _ in range(depth):  # `depth` containers around a string
        value = [value]
    return value


def test_depth_is_counted_without_recursion():
    assert depth_error(_nested(MAX_DEPTH), "object") is None
    assert depth_error(_nested(MAX_DEPTH + 1), "object") == f"object: nested more than {MAX_DEPTH} levels deep"
    assert depth_error(_nested(100_000), "object") is not None  # far past the recursion limit
    assert depth_error({"a": [{"b": {}}]}, "object", limit=4) is None
    assert depth_error({"a": [{"b": {}}]}, "object", limit=3) is not None


@pytest.mark.parametrize("mangle, message", [
    (lambda pod: pod["metadata"].update(labels={"a": ["b"]}), "object.metadata.labels.a: must be a string, got list"),
    (lambda pod: pod["spec"].update(containers="main"), "object.spec.containers: must be a list, got str"),
    (lambda pod: pod["spec"].update(initContainers=[1]), "object.spec.initContainers[0]: must be an object"),
    (lambda pod: pod["spec"]["containers"][0].update(resources=[]), "resources: must be an object, got list"),
    (lambda pod: pod["spec"].update(overhead={"cpu": "-1"}), "spec.overhead.cpu: must be greater than or equal to 0"),
])
def test_mis_shaped_pods_name_the_field(mangle, message):
    pod = make_pod()
    mangle(pod)
    assert message in object_error("Pod", pod)


def test_a_well_formed_pod_passes():
    pod = make_pod(containers=[make_container(requests={"cpu": "500m", "memory": 1024}, limits={"cpu": 1.5})])
    assert object_error("Pod", pod) is None


@pytest.mark.parametrize("text", ["9" * 65, "1e65", "1e-999999999", 10**70])
def test_quantities_with_absurd_magnitudes_are_refused_at_once(text):
    with pytest.raises(QuantityError):
        Quantity.parse(text)
