"""The RFC 6902 diff every mutation's patch comes from: applied by a real JSON Patch library it gives
back the mutated document, with keys escaped per RFC 6901; its token cache stays bounded."""
from __future__ import annotations

import copy

import jsonpatch
from hypothesis import given
from hypothesis import strategies as st

from policies import jsonpatch_diff
from policies.jsonpatch_diff import diff, escape_pointer_token

KEYS = st.sampled_from(["a", "b", "koordinator.sh/qosClass", "x~y", "~1", "/", ""])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
                    max_leaves=12)


@given(JSON, JSON)
def test_the_patch_turns_the_first_document_into_the_second(before, after):
    patched = jsonpatch.apply_patch(copy.deepcopy(before), diff(before, after))
    assert patched == after


def test_tokens_are_escaped_per_rfc_6901():
    assert escape_pointer_token("koordinator.sh/qosClass") == "koordinator.sh~1qosClass"
    assert escape_pointer_token("a~/b") == "a~0~1b"
    assert diff({"l": {"x/y~": "1"}}, {"l": {}}) == [{"op": "remove", "path": "/l/x~1y~0"}]


def test_the_token_cache_is_bounded_whatever_keys_requests_bring(monkeypatch):
    monkeypatch.setattr(jsonpatch_diff, "_ESCAPED", {})
    for index in range(jsonpatch_diff._ESCAPED_MAX * 2):
        assert escape_pointer_token(f"k{index}/v") == f"k{index}~1v"
    long_key = "k/" * 200
    assert escape_pointer_token(long_key) == "k~1" * 200
    assert len(jsonpatch_diff._ESCAPED) == jsonpatch_diff._ESCAPED_MAX
    assert long_key not in jsonpatch_diff._ESCAPED
