"""`json_copy`: a deep copy of a JSON document made of plain dicts and lists, sharing no container."""

from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from policies.apis.objects import json_copy

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=2), children, max_size=3)
        | st.dictionaries(st.text(max_size=2), children, max_size=3).map(OrderedDict)
    ),
    max_leaves=15,
)


def containers(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from containers(item)


def shape(value):
    """The document with its exact container types and key order spelled out."""
    if isinstance(value, dict):
        return (type(value).__name__, [(key, shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [shape(item) for item in value])
    return value


def plain(value):
    """What a copy must look like: every mapping a plain dict, in the same order."""
    if isinstance(value, dict):
        return ("dict", [(key, plain(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [plain(item) for item in value])
    return value


@given(JSON)
def test_a_copy_is_equal_plain_in_order_and_shares_no_container(document):
    copy = json_copy(document)
    assert copy == document and shape(copy) == plain(document)
    originals = {id(c) for c in containers(document)}
    assert not any(id(c) in originals for c in containers(copy))
