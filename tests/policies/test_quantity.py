import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.apis import quantity
from policies.apis.quantity import Quantity, QuantityError, canonical, milli_value, resource_list, scalar_of, value


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", "1"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("1.5", "1500m"),
        ("0.5", "500m"),
        ("500m", "500m"),
        ("4Gi", "4Gi"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("512", "512"),
        ("1e3", "1e3"),
        ("0", "0"),
        ("100u", "100u"),
        ("2k", "2k"),
        (1, "1"),
        (2.5, "2500m"),
        ("-1", "-1"),
    ],
)
def test_canonical_text_matches_kubernetes(text, expected):
    assert canonical(text) == expected


@pytest.mark.parametrize("text, milli", [("1", 1000), ("500m", 500), ("1.5", 1500), ("100u", 1), ("0.0001", 1)])
def test_milli_value_rounds_up(text, milli):
    assert Quantity.parse(text).milli_value() == milli


@pytest.mark.parametrize("bad", ["", "abc", "1x", "1.2.3", None, True, [], "--1"])
def test_malformed_quantities_are_refused(bad):
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


def test_comparison_is_by_value_not_text():
    assert Quantity.parse("1Gi").same_value(Quantity.parse("1024Mi"))
    assert Quantity.parse("1").same_value(Quantity.parse("1000m"))
    assert Quantity.parse("999m") < Quantity.parse("1")


@pytest.mark.parametrize(
    "text, milli, plain",
    [
        ("1", 1000, 1),
        ("250m", 250, 1),
        ("1.5", 1500, 2),
        ("2Ki", 2048000, 2048),
        ("1Gi", 1024**3 * 1000, 1024**3),
        ("1e3", 1000000, 1000),
        ("100M", 10**11, 10**8),
        (4, 4000, 4),
        ("0.1m", 1, 1),
    ],
)
def test_scalars_round_up_like_kubernetes(text, milli, plain):
    assert (milli_value(text), value(text)) == (milli, plain)


def test_a_resource_list_is_in_millicores_for_cpu_and_base_units_otherwise():
    assert resource_list({"cpu": "1500m", "memory": "1Gi", "pods": "0"}) == {"cpu": 1500, "memory": 1024**3, "pods": 0}
    assert (scalar_of("cpu", "2"), scalar_of("nvidia.com/gpu", "2")) == (2000, 2)


NUMBERS_AND_TEXT = st.one_of(
    st.integers(-(10**70), 10**70),
    st.floats(),
    st.sampled_from([0, 1, 0.0, -0.0, 1.0]),
    st.text(alphabet="0123456789.+-eEinumkKMGTP", max_size=8),
    st.sampled_from(["1", "1.0", "-0", "0.0", "1Ki", "1e3", "5e-999999", " 1"]),
)


@given(st.lists(NUMBERS_AND_TEXT, max_size=6))
def test_a_cached_parse_is_the_parse_of_that_very_value(values):
    """Equal values of other types (1, 1.0; 0.0, -0.0) share no wrong cache entry."""

    def outcome(parse, amount):
        try:
            return parse(amount)
        except QuantityError as exc:
            return f"{type(exc).__name__}: {exc}"

    for amount in values:
        assert outcome(Quantity.parse, amount) == outcome(quantity._parse.__wrapped__, amount)
