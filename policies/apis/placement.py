"""Whether a pod may run on a node by what the node says about itself: `spec.nodeSelector`,
required node affinity and taints (kube-scheduler's NodeAffinity and TaintToleration filters).

Pure and generic: the descheduler's `nodeFit` asks it before evicting a pod that must land
somewhere else. Resources are the caller's (`policies.apis.resources.pod_resources`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.apis.objects import labels_of, name_of, spec_of

#: taint effects that keep a pod off a node at scheduling time
SCHEDULING_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})


def _int(text: object) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def _expression_matches(expression: Mapping[str, Any], value: str | None) -> bool:
    operator, values = expression.get("operator"), [str(v) for v in expression.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _int(value), _int(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    labels = labels_of(node)
    return all(_expression_matches(e, labels.get(str(e.get("key")))) for e in expressions) and all(
        _expression_matches(f, name_of(node) if f.get("key") == "metadata.name" else None) for f in fields
    )


def term_matches_labels(term: Mapping[str, Any], labels: Mapping[str, str], name: str = "") -> bool:
    """A NodeSelectorTerm-shaped term (`matchExpressions`, `matchFields` on `metadata.name`) against
    labels and a name: what a Reservation's `reservationSelectorTerms` are matched with."""
    return _term_matches(term, {"metadata": {"name": name, "labels": dict(labels)}})


def matches_node_selector_and_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    spec, labels = spec_of(pod), labels_of(node)
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required:
        terms = required.get("nodeSelectorTerms") or []
        return any(_term_matches(t, node) for t in terms)
    return True


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    if key and key != taint.get("key"):
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    if not key:
        return False  # an empty key needs Exists
    return str(toleration.get("value") or "") == str(taint.get("value") or "")


def untolerated_taint(
    pod: Mapping[str, Any], node: Mapping[str, Any], effects: frozenset[str] = SCHEDULING_EFFECTS
) -> Mapping[str, Any] | None:
    """The first taint of `node` with one of `effects` that the pod does not tolerate, or None."""
    tolerations: Sequence[Mapping[str, Any]] = spec_of(pod).get("tolerations") or []
    for taint in spec_of(node).get("taints") or []:
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations):
            return dict(taint)
    return None
