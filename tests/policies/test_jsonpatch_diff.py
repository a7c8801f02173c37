"""The RFC 6902 diff every mutation's patch comes from: applied by a real JSON Patch library it gives
back the mutated document, with keys escaped per RFC 6901; its token cache stays bounded."""

from __future__ import annotations

import copy

import jsonpatch
from hypothesis import given
from hypothesis import strategies as st

from policies.apis import jsonpatch_diff
from policies.apis.jsonpatch_diff import diff, escape_pointer_token

KEYS = st.sampled_from(["a", "b", "koordinator.sh/qosClass", "x~y", "~1", "/", ""])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
)


@given(JSON, JSON)
def test_the_patch_turns_the_first_document_into_the_second(before, after):
    patched = jsonpatch.apply_patch(copy.deepcopy(before), diff(before, after))
    assert patched == after


def test_tokens_are_escaped_per_rfc_6901():
    assert escape_pointer_token("koordinator.sh/qosClass") == "koordinator.sh~1qosClass"
    assert escape_pointer_token("a~/b") == "a~0~1b"
    assert diff({"l": {"x/y~": "1"}}, {"l": {}}) == [{"op": "remove", "path": "/l/x~1y~0"}]


def test_the_token_cache_is_bounded_whatever_keys_requests_bring():
    cache = jsonpatch_diff._ESCAPED  # Final: compiled code holds this very dict, so it is emptied, not replaced
    kept = dict(cache)
    cache.clear()
    try:
        for index in range(jsonpatch_diff._ESCAPED_MAX * 2):
            assert escape_pointer_token(f"k{index}/v") == f"k{index}~1v"
        long_key = "k/" * 200
        assert escape_pointer_token(long_key) == "k~1" * 200
        assert len(cache) == jsonpatch_diff._ESCAPED_MAX
        assert long_key not in cache
    finally:
        cache.clear()
        cache.update(kept)


def reference_diff(before, after):
    """The diff as it was before the scalar fast paths: the same operations, in the same order."""
    out = []

    def walk(before, after, path):
        if before is after:
            return
        if type(before) is dict and type(after) is dict:
            for key in before:
                if key not in after:
                    out.append({"op": "remove", "path": f"{path}/{escape_pointer_token(key)}"})
            for key, value in after.items():
                if key not in before:
                    out.append({"op": "add", "path": f"{path}/{escape_pointer_token(key)}", "value": value})
                elif before[key] is not value:
                    walk(before[key], value, f"{path}/{escape_pointer_token(key)}")
            return
        if type(before) is list and type(after) is list and len(before) == len(after):
            for index, (old, new) in enumerate(zip(before, after, strict=True)):
                if old is not new:
                    walk(old, new, f"{path}/{index}")
            return
        if type(before) is type(after) and before == after:
            return
        out.append({"op": "replace", "path": path, "value": after})

    walk(before, after, "")
    return out


SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=True) | st.text(max_size=2)
LOOSE_JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
)


def edited(data, document):
    """A copy of `document` as a mutator leaves it: some subtrees shared, some copied and edited."""
    choice = data.draw(st.sampled_from(["share", "copy", "replace"]))
    if choice == "share" or (choice == "copy" and type(document) not in (dict, list)):
        return document
    if choice == "replace":
        return data.draw(LOOSE_JSON)
    if type(document) is list:
        copy_ = [edited(data, item) for item in document]
        if data.draw(st.booleans()):
            copy_.append(data.draw(LOOSE_JSON))
        return copy_
    copy_ = {key: edited(data, value) for key, value in document.items() if data.draw(st.booleans()) or not key}
    for key in data.draw(st.lists(KEYS, max_size=2)):
        copy_[key] = data.draw(LOOSE_JSON)
    return copy_


@given(LOOSE_JSON, st.data())
def test_the_diff_agrees_with_the_reference_on_shared_and_edited_documents(before, data):
    after = edited(data, before)
    assert diff(before, after) == reference_diff(before, after)
    assert diff(before, before) == []
