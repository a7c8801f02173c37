"""The profile index must match exactly the profiles a full scan matches, in name order."""

from hypothesis import given
from hypothesis import strategies as st

from policies.admission.profile_matching import ProfileIndex
from policies.admission.profiles import parse_profile
from policies.apis.selectors import LabelSelector
from tests.support.builders import make_profile

KEYS, VALUES = ["app", "tier", "team"], ["a", "b", "c"]
labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
expressions = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Bogus"]),
            "values": st.lists(st.sampled_from(VALUES), max_size=2),
        }
    ),
    max_size=2,
)
selectors = st.one_of(
    st.none(), st.fixed_dictionaries({}, optional={"matchLabels": labels, "matchExpressions": expressions})
)


def _clear_non_match(selector, labels):
    """Only a valid, non-empty selector over readable labels rules a profile out (as Koordinator's
    `cluster_colocation_profile.go` matches)."""
    if not isinstance(selector, LabelSelector) or selector.is_empty or labels is None:
        return False
    return not selector.matches(labels)


def scan_every_profile(profiles, object_labels, namespace_labels):
    """The reference: Koordinator's loop over every profile
    (`clusterColocationProfileMutatingPod`)."""
    matched = []
    for profile in profiles:
        if namespace_labels is not None and _clear_non_match(profile.namespace_selector, namespace_labels()):
            continue
        if _clear_non_match(profile.selector, object_labels):
            continue
        matched.append(profile)
    return matched


@given(st.lists(st.tuples(selectors, selectors), max_size=8), labels, st.one_of(st.none(), labels), st.booleans())
def test_index_agrees_with_a_full_scan(selector_pairs, pod_labels, ns_labels, ignore_namespace):
    profiles = [
        parse_profile(make_profile(f"p{i:02d}", selector=s, namespaceSelector=n))
        for i, (s, n) in enumerate(selector_pairs)
    ]
    namespace = None if ignore_namespace else (lambda: ns_labels)
    index = ProfileIndex.build(profiles)
    assert index.matching(pod_labels, namespace) == scan_every_profile(profiles, pod_labels, namespace)
