"""Profiles read from files are held to the CRD's structural schema, as the API server would hold them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from policies.admission.profile_schema import PROFILE_SCHEMA
from policies.admission.profiles import ProfileError, parse_profile
from policies.admission.snapshot import ClusterSnapshot, SnapshotBuilder
from policies.apis.selectors import InvalidSelector
from policies.apis.structural import validate
from tests.support.builders import make_profile
from tests.support.paths import REPO


def without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    return schema


def test_the_schema_is_the_crds() -> None:
    crd = yaml.safe_load((REPO / "manifests/crds/clustercolocationprofiles.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    assert without_descriptions(version["schema"]["openAPIV3Schema"]) == PROFILE_SCHEMA


@pytest.mark.parametrize(
    "spec, path, says",
    [
        ({"qosclass": "BE"}, "spec.qosclass", 'unknown field (did you mean "qosClass"?)'),
        ({"priorityClassname": "koord-batch"}, "spec.priorityClassname", 'did you mean "priorityClassName"?'),
        ({"lables": {"a": "b"}}, "spec.lables", 'did you mean "labels"?'),
        (
            {"selector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]}},
            "spec.selector.matchExpressions[0].operator",
            'Unsupported value: "Equals": supported values: "In", "NotIn"',
        ),
        (
            {"namespaceSelector": {"matchExpressions": [{"operator": "Exists"}]}},
            "spec.namespaceSelector.matchExpressions[0]",
            "key and operator must be strings",
        ),
        ({"selector": {"matchLabel": {"a": "b"}}}, "spec.selector.matchLabel", 'did you mean "matchLabels"?'),
        ({"annotations": {"a": True}}, "spec.annotations", "must map strings to strings"),
    ],
)
def test_a_profile_the_api_server_would_refuse_is_refused_with_its_name_and_the_field(
    spec: dict[str, Any], path: str, says: str
) -> None:
    with pytest.raises(ProfileError) as error:
        parse_profile(make_profile("typo", **spec), strict=True)
    assert str(error.value).startswith("ClusterColocationProfile 'typo' is invalid, not used: ")
    assert f"{path}: " in str(error.value) and says in str(error.value)
    assert str(error.value).count(path + ":") == 1  # each field once, not once per check


def test_an_unknown_top_level_field_is_refused_too() -> None:
    profile = make_profile("p", qosClass="BE")
    profile["specs"] = profile.pop("spec")
    with pytest.raises(ProfileError, match=r"specs: unknown field \(did you mean \"spec\"\?\)"):
        parse_profile(profile, strict=True)


def test_without_strict_the_api_servers_profiles_keep_koordinators_behaviour() -> None:
    """A profile listed from an API server passed its CRD (Koordinator's has no operator enum), and
    Koordinator treats a selector that does not parse as matching: so does colocate."""
    spec = {"selector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]}}
    profile = parse_profile(make_profile("p", **spec))
    assert isinstance(profile.selector, InvalidSelector) and profile.warnings


def test_a_selector_the_crd_accepts_but_that_does_not_parse_is_still_a_warning_when_strict() -> None:
    spec = {"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}  # In without values
    profile = parse_profile(make_profile("p", **spec), strict=True)
    assert isinstance(profile.selector, InvalidSelector) and profile.warnings


def test_every_example_profile_passes_strict() -> None:
    for path in (REPO / "manifests/cluster/profiles.yaml",):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj:
                parse_profile(obj, strict=True)


def test_snapshots_built_strict_drop_only_the_refused_profile() -> None:
    good, bad = make_profile("good", qosClass="BE"), make_profile("bad", qosclass="BE")
    snapshot = ClusterSnapshot.from_objects([("a.yaml", good), ("b.yaml", bad)], strict=True)
    assert [p.name for p in snapshot.profiles] == ["good"]
    (problem,) = snapshot.problems
    assert problem.source == "b.yaml" and "'bad'" in problem.message
    builder = SnapshotBuilder(strict=True)
    builder.put(bad, "b.yaml")
    assert not builder.build().profiles
    lenient = SnapshotBuilder()
    lenient.put(bad, "b.yaml")
    assert [p.name for p in lenient.build().profiles] == ["bad"]


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda s: s["spec"].__setitem__("probability", "150%"), "spec.probability"),
        (lambda s: s["spec"].__setitem__("koordinatorPriority", 2**31), "spec.koordinatorPriority"),
        (lambda s: s["spec"].__setitem__("patch", "x"), "spec.patch"),
        (
            lambda s: s["spec"]["selector"].__setitem__(
                "matchExpressions", [{"key": "a", "operator": "In", "values": [1]}]
            ),
            "spec.selector.matchExpressions[0].values[0]",
        ),
    ],
)
def test_the_structural_check_names_the_path_of_each_wrong_field(mutate: Any, path: str) -> None:
    profile = copy.deepcopy(make_profile("p", selector={"matchLabels": {"a": "b"}}))
    mutate(profile)
    assert [e.path for e in validate(profile, PROFILE_SCHEMA)] == [path]


def test_patch_keeps_whatever_fields_it_has() -> None:
    assert validate(make_profile("p", patch={"spec": {"anything": {"x": 1}}}), PROFILE_SCHEMA) == []
