"""Which ClusterColocationProfiles apply to an object (spec 5.2, 9).

Koordinator keeps a profile as matched when its selector cannot be evaluated (an invalid selector,
or a namespace it cannot fetch): an error never *drops* a profile, only a clear non-match does.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from policies.profiles import ColocationProfile
from policies.selectors import LabelSelector


def _clear_non_match(selector: object, labels: Mapping[str, str] | None) -> bool:
    if not isinstance(selector, LabelSelector) or selector.is_empty:
        return False  # invalid selectors keep the profile; empty ones match everything
    if labels is None:
        return False  # the labels could not be read: keep the profile
    return not selector.matches(labels)


def matching_profiles(
    profiles: Sequence[ColocationProfile],
    object_labels: Mapping[str, str],
    namespace_labels: Callable[[], Mapping[str, str] | None] | None,
) -> list[ColocationProfile]:
    """Profiles matching the object, in name order (`profiles` is already sorted by name).

    `namespace_labels` returns the labels of the object's namespace, or None when the namespace is
    unknown; pass None to ignore namespaceSelectors altogether (Reservations).
    """
    matched = []
    cached: list[Mapping[str, str] | None] = []
    for profile in profiles:
        if namespace_labels is not None and isinstance(profile.namespace_selector, LabelSelector) \
                and not profile.namespace_selector.is_empty:
            if not cached:
                cached.append(namespace_labels())
            if _clear_non_match(profile.namespace_selector, cached[0]):
                continue
        if _clear_non_match(profile.selector, object_labels):
            continue
        matched.append(profile)
    return matched
