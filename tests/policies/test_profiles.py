import pytest

from policies.admission.profiles import ProfileError, parse_profile
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.selectors import InvalidSelector
from tests.support.builders import make_profile


def test_a_complete_profile_parses_into_typed_fields():
    profile = parse_profile(
        make_profile(
            "p",
            metadata_annotations={"config.koordinator.sh/skip-update-resources": ""},
            probability="30%",
            qosClass="BE",
            priorityClassName="koord-batch",
            koordinatorPriority=1111,
            labels={"a": "b"},
            annotations={"c": "d"},
            labelKeysMapping={"x": "y"},
            annotationKeysMapping={"u": "v"},
            labelSuffixes={"a": "-s"},
            schedulerName="koord-scheduler",
            patch={"spec": {"hostNetwork": True}},
            selector={"matchLabels": {"app": "x"}},
            namespaceSelector={"matchLabels": {"team": "y"}},
        )
    )
    assert profile.probability == 30 and profile.qos_class == "BE" and profile.koordinator_priority == 1111
    assert profile.skip_update_resources and dict(profile.labels) == {"a": "b"}
    assert profile.patch == {"spec": {"hostNetwork": True}}


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"qosClass": "Gold"}, "spec.qosClass"),
        ({"probability": "abc"}, "spec.probability"),
        ({"probability": 101}, "spec.probability"),
        ({"probability": -1}, "spec.probability"),
        ({"koordinatorPriority": "high"}, "spec.koordinatorPriority"),
        ({"koordinatorPriority": 2**31}, "spec.koordinatorPriority"),
        ({"labels": {"a": 1}}, "spec.labels"),
        ({"labels": ["a"]}, "spec.labels"),
        ({"patch": "spec: {}"}, "spec.patch"),
        ({"schedulerName": 5}, "spec.schedulerName"),
        ({"selector": {"matchLabels": ["x"]}}, "spec.selector.matchLabels"),
    ],
)
def test_a_bad_profile_names_itself_and_the_wrong_field(spec, field):
    with pytest.raises(ProfileError) as error:
        parse_profile(make_profile("broken", **spec))
    assert "'broken'" in str(error.value) and field in str(error.value)


def test_a_bad_profile_does_not_stop_the_others():
    snapshot = ClusterSnapshot.from_objects(
        [
            ("a.yaml", make_profile("good-b", qosClass="LS")),
            ("a.yaml", make_profile("bad", qosClass="Gold")),
            ("b.yaml", make_profile("good-a", qosClass="BE")),
        ]
    )
    assert [p.name for p in snapshot.profiles] == ["good-a", "good-b"]
    assert len(snapshot.problems) == 1 and "bad" in snapshot.problems[0].message
    assert snapshot.problems[0].source == "a.yaml"


def test_an_unparseable_selector_is_kept_with_a_warning():
    profile = parse_profile(make_profile("p", selector={"matchExpressions": [{"key": "k", "operator": "Nope"}]}))
    assert isinstance(profile.selector, InvalidSelector)
    assert profile.warnings and "spec.selector.matchExpressions[0].operator" in profile.warnings[0]


def test_profiles_are_sorted_by_name_in_byte_order():
    snapshot = ClusterSnapshot.from_objects(("x", make_profile(n)) for n in ["b", "B", "a", "a-1"])
    assert [p.name for p in snapshot.profiles] == ["B", "a", "a-1", "b"]
