"""What the webhook refuses as a bad object before any plugin reads it."""

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.apis import shape
from policies.apis.quantity import Quantity, QuantityError
from policies.apis.shape import MAX_DEPTH, depth_error, object_error
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


@pytest.mark.parametrize(
    "mangle, message",
    [
        (
            lambda pod: pod["metadata"].update(labels={"a": ["b"]}),
            "object.metadata.labels.a: must be a string, got list",
        ),
        (lambda pod: pod["spec"].update(containers="main"), "object.spec.containers: must be a list, got str"),
        (lambda pod: pod["spec"].update(initContainers=[1]), "object.spec.initContainers[0]: must be an object"),
        (lambda pod: pod["spec"]["containers"][0].update(resources=[]), "resources: must be an object, got list"),
        (
            lambda pod: pod["spec"].update(overhead={"cpu": "-1"}),
            "spec.overhead.cpu: must be greater than or equal to 0",
        ),
    ],
)
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


# -- the shape check as it was before the field names were built only for errors: the reference -----
def reference_string_map(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{field}: must be an object, got {type(value).__name__}"
    for key, item in value.items():
        if not isinstance(item, str):
            return f"{field}.{key[:63]}: must be a string, got {type(item).__name__}"
    return None


def reference_resource_list(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{field}: must be an object, got {type(value).__name__}"
    for name, amount in value.items():
        error = (
            shape._quantity_error(amount)
            if isinstance(amount, (str, int, float))
            else f"quantities must be strings or numbers, got {type(amount).__name__}"
        )
        if error:
            return f"{field}.{name[:63]}: {error}"
    return None


def reference_metadata_error(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return f"metadata: must be an object, got {type(metadata).__name__}"
    return reference_string_map(metadata.get("labels"), "metadata.labels") or reference_string_map(
        metadata.get("annotations"), "metadata.annotations"
    )


def reference_pod_error(pod: Mapping[str, Any]) -> str | None:
    """What of a Pod the plugins read is not shaped as in `core/v1`, or None."""
    error = reference_metadata_error(pod)
    if error:
        return error
    spec = pod.get("spec")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return f"spec: must be an object, got {type(spec).__name__}"
    error = reference_resource_list(spec.get("overhead"), "spec.overhead")
    if error:
        return error
    for section in ("containers", "initContainers"):
        containers = spec.get(section)
        if containers is None:
            continue
        if not isinstance(containers, list):
            return f"spec.{section}: must be a list, got {type(containers).__name__}"
        for index, container in enumerate(containers):
            field = f"spec.{section}[{index}]"
            if not isinstance(container, dict):
                return f"{field}: must be an object, got {type(container).__name__}"
            resources = container.get("resources")
            if resources is None:
                continue
            if not isinstance(resources, dict):
                return f"{field}.resources: must be an object, got {type(resources).__name__}"
            for key in ("requests", "limits"):
                error = reference_resource_list(resources.get(key), f"{field}.resources.{key}")
                if error:
                    return error
    return None


QUANTITY = st.sampled_from(["1", "500m", "-1", "x", 2, 1.5, True, None, [], {}])
ODD = st.sampled_from([None, "text", 3, [], {}])
RESOURCE_LIST = st.one_of(ODD, st.dictionaries(st.sampled_from(["cpu", "memory", "x" * 80]), QUANTITY, max_size=2))
CONTAINER = st.one_of(
    ODD,
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.just("c"),
            "resources": st.one_of(
                ODD, st.fixed_dictionaries({}, optional={"requests": RESOURCE_LIST, "limits": RESOURCE_LIST})
            ),
        },
    ),
)
STRING_MAP = st.one_of(ODD, st.dictionaries(st.sampled_from(["a", "k" * 80]), st.one_of(st.just("v"), ODD), max_size=2))
POD = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.one_of(
            ODD, st.fixed_dictionaries({}, optional={"labels": STRING_MAP, "annotations": STRING_MAP})
        ),
        "spec": st.one_of(
            ODD,
            st.fixed_dictionaries(
                {},
                optional={
                    "overhead": RESOURCE_LIST,
                    "containers": st.one_of(ODD, st.lists(CONTAINER, max_size=3)),
                    "initContainers": st.one_of(ODD, st.lists(CONTAINER, max_size=2)),
                },
            ),
        ),
    },
)


WELL_SHAPED_BUT_FOR_RESOURCES = st.fixed_dictionaries(
    {
        "metadata": st.just({"labels": {"a": "v"}}),
        "spec": st.fixed_dictionaries(
            {"containers": st.lists(CONTAINER, max_size=3)},
            optional={"overhead": RESOURCE_LIST, "initContainers": st.lists(CONTAINER, max_size=2)},
        ),
    }
)


@given(st.one_of(POD, WELL_SHAPED_BUT_FOR_RESOURCES))
def test_the_shape_check_agrees_with_the_reference(pod):
    expected = reference_pod_error(pod)
    assert object_error("Pod", pod) == (f"object.{expected}" if expected else None)
