import pytest

from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector


def matches(selector, labels):
    compiled = compile_selector(selector, "spec.selector")
    assert isinstance(compiled, LabelSelector)
    return compiled.matches(labels)


@pytest.mark.parametrize(
    "operator, values, labels, expected",
    [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a"], {"k": "c"}, False),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {"k": "b"}, True),
        ("NotIn", ["a"], {}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
    ],
)
def test_every_match_expression_operator(operator, values, labels, expected):
    selector = {"matchExpressions": [{"key": "k", "operator": operator, "values": values}]}
    assert matches(selector, labels) is expected


def test_match_labels_and_expressions_must_all_hold():
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert matches(selector, {"app": "web", "tier": "x"})
    assert not matches(selector, {"app": "web"})
    assert not matches(selector, {"app": "db", "tier": "x"})


def test_empty_selector_matches_everything():
    assert matches({}, {}) and matches(None, {"a": "b"})


@pytest.mark.parametrize(
    "selector, field",
    [
        ({"matchExpressions": [{"key": "k", "operator": "Bogus", "values": ["a"]}]}, "operator"),
        ({"matchExpressions": [{"key": "k", "operator": "In", "values": []}]}, "values"),
        ({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]}, "values"),
        ({"matchLabels": {"bad key!": "v"}}, "matchLabels"),
    ],
)
def test_semantically_invalid_selectors_are_kept_as_invalid_with_the_field(selector, field):
    compiled = compile_selector(selector, "spec.selector")
    assert isinstance(compiled, InvalidSelector)
    assert f"spec.selector.{field}" in compiled.error or f".{field}" in compiled.error


@pytest.mark.parametrize(
    "selector",
    [
        [1],
        {"matchLabels": ["a"]},
        {"matchExpressions": {"key": "k"}},
        {"matchExpressions": [{"key": 1, "operator": "In"}]},
    ],
)
def test_wrongly_typed_selectors_raise(selector):
    with pytest.raises(SelectorShapeError):
        compile_selector(selector, "spec.selector")
