"""Which ClusterColocationProfiles apply to an object
(`pkg/webhook/pod/mutating/cluster_colocation_profile.go`,
`pkg/webhook/reservation/mutating/cluster_colocation_profile.go`).

Koordinator keeps a profile as matched when its selector cannot be evaluated (an invalid selector,
or a namespace it cannot fetch): an error never *drops* a profile, only a clear non-match does.

With hundreds of profiles, evaluating every selector for every pod dominates admission time, so a
`ProfileIndex` (built once per cluster snapshot) files each profile under one label its selectors
require (`app=web` from matchLabels, or each value of an `In` expression). A pod is only checked
against the profiles filed under its own labels (or its namespace's), plus those that require
nothing indexable; the result is the same as checking every profile, in name order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from policies.admission.profiles import ColocationProfile
from policies.apis.selectors import LabelSelector

NamespaceLabels = Callable[[], Mapping[str, str] | None]
Anchor = tuple[str, str]  # a (key, value) a selector requires


def _decisive(selector: object) -> LabelSelector | None:
    """The selector when it can rule an object out: invalid selectors keep the profile, empty ones
    match everything."""
    return selector if isinstance(selector, LabelSelector) and not selector.is_empty else None


def _anchors(selector: object) -> list[Anchor] | None:
    """Label pairs of which an object must carry at least one to match, or None when unknown."""
    if not isinstance(selector, LabelSelector) or selector.is_empty:
        return None
    if selector.match_labels:
        return [selector.match_labels[0]]
    for requirement in selector.requirements:
        if requirement.operator == "In":
            return [(requirement.key, value) for value in sorted(requirement.values)]
    return None


@dataclass(frozen=True)
class ProfileIndex:
    profiles: tuple[ColocationProfile, ...] = ()
    by_object_label: Mapping[Anchor, tuple[int, ...]] = field(default_factory=dict)
    by_namespace_label: Mapping[Anchor, tuple[int, ...]] = field(default_factory=dict)
    unanchored: tuple[int, ...] = ()  # positions that must always be checked
    namespace_anchored: tuple[int, ...] = ()  # checked when the namespace's labels are unknown
    #: per position: the profile, and its namespace selector and selector when decisive (else None)
    checks: tuple[tuple[ColocationProfile, LabelSelector | None, LabelSelector | None], ...] = ()

    @classmethod
    def build(cls, profiles: Sequence[ColocationProfile]) -> ProfileIndex:
        """`profiles` must already be in name order."""
        by_object: dict[Anchor, list[int]] = {}
        by_namespace: dict[Anchor, list[int]] = {}
        unanchored: list[int] = []
        namespace_anchored: list[int] = []
        for position, profile in enumerate(profiles):
            if (anchors := _anchors(profile.selector)) is not None:
                for anchor in anchors:
                    by_object.setdefault(anchor, []).append(position)
            elif (anchors := _anchors(profile.namespace_selector)) is not None:
                namespace_anchored.append(position)
                for anchor in anchors:
                    by_namespace.setdefault(anchor, []).append(position)
            else:
                unanchored.append(position)
        return cls(
            tuple(profiles),
            {k: tuple(v) for k, v in by_object.items()},
            {k: tuple(v) for k, v in by_namespace.items()},
            tuple(unanchored),
            tuple(namespace_anchored),
            tuple((p, _decisive(p.namespace_selector), _decisive(p.selector)) for p in profiles),
        )

    def candidates(
        self, object_labels: Mapping[str, str], namespace_labels: Mapping[str, str] | None, use_namespace: bool
    ) -> list[int]:
        positions = set(self.unanchored)
        by_object = self.by_object_label
        for pair in object_labels.items():
            if (found := by_object.get(pair)) is not None:
                positions.update(found)
        if not use_namespace or namespace_labels is None:
            positions.update(self.namespace_anchored)  # the namespace selector cannot rule them out
        else:
            by_namespace = self.by_namespace_label
            for pair in namespace_labels.items():
                if (found := by_namespace.get(pair)) is not None:
                    positions.update(found)
        return sorted(positions)

    def matching(
        self, object_labels: Mapping[str, str], namespace_labels: NamespaceLabels | None
    ) -> list[ColocationProfile]:
        """Profiles matching the object, in name order.

        `namespace_labels` returns the labels of the object's namespace, or None when the namespace is
        unknown; pass None to ignore namespaceSelectors altogether (Reservations).
        """
        use_namespace = namespace_labels is not None
        ns_labels = namespace_labels() if namespace_labels is not None else None
        checks = self.checks
        matched = []
        for position in self.candidates(object_labels, ns_labels, use_namespace):
            profile, namespace_selector, selector = checks[position]
            # unknown namespace labels never rule a profile out
            if namespace_selector is not None and ns_labels is not None and not namespace_selector.matches(ns_labels):
                continue
            if selector is not None and not selector.matches(object_labels):
                continue
            matched.append(profile)
        return matched
