"""The background audit: which running pods differ from what the current profiles would make of them.

A pod was mutated once, when it was created, by the profiles of that day. The audit sends each
running pod through the admission chain again (`webhook.chain.run_chain`, as a CREATE, honouring
the registrations' selectors as kube-apiserver would) over the current cluster snapshot, and
compares: a pod the chain would change has drifted. Every profile step is idempotent except
labelSuffixes, so the chain is run in audit mode (a label still holding the value the pod came with
and ending with the suffix counts as suffixed); then a pod admitted by the current profiles never
shows up (as long as no profile writes a label another profile selects on: a second pass would
match more profiles, in Koordinator too).

Each matched profile gets a result per pod, in the Policy WG's vocabulary:

- `pass`: nothing the profile is responsible for differs;
- `fail`: a field the profile writes differs (the profile is enforced);
- `warn`: the same for a warn-only profile (`colocate.io/enforcement: warn`);
- `skip`: the same for a profile with a probability below 100: the pod may have been skipped by it;
- `error`: the chain fails on the pod (a PriorityClass the profile names does not exist), or the pod
  the profiles would make is denied by a validating webhook.

A difference belongs to the last profile step that wrote the field (later profiles overwrite
earlier ones); what the batch/mid resource rewrite and the other plugins change belongs to the
profile that decides the pod's priority class (the last matched one naming a priorityClassName,
else a qosClass, else the last matched one), since the rewrite follows from it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policies.admission.changes import Change, changes_of, overlaps, summary
from policies.admission.patch_risks import sensitive_fields
from policies.admission.plugin import Effect, Read
from policies.admission.profiles import ColocationProfile
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.jsonpatch_diff import diff
from policies.apis.objects import metadata_of, name_of, namespace_of
from webhook.chain import ChainResult, request_for, run_chain
from webhook.registry import Registry, default_routes

PASS, FAIL, WARN, SKIP, ERROR = "pass", "fail", "warn", "skip", "error"
RESULTS: Final = (PASS, FAIL, WARN, ERROR, SKIP)
DRIFTED: Final = frozenset({FAIL, WARN})
FAILING: Final = frozenset({FAIL, ERROR})  # what makes `colocate audit` exit 1 (a warn-only trial does not)
TERMINATED_PHASES: Final = frozenset({"Succeeded", "Failed"})
PROFILE_STEP: Final = "profile/"
#: What the audit reads of the cluster beyond what the registry's plugins read: every Pod, whole (its
#: spec and status are what it re-admits and compares). A state the audit runs on is watched with
#: these too (`webhook.watched.watched_kinds(registry, AUDIT_READS)`), or pods would be metadata only.
AUDIT_READS: Final = frozenset({Read("Pod")})


def _apply_every_profile(n: int) -> int:
    """The audit's dice: every profile with a non-zero probability applies (skips are told apart later)."""
    return 0


@dataclass(frozen=True)
class ProfileResult:
    profile: str
    result: str
    message: str = ""
    changes: tuple[Change, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "result": self.result,
            "message": self.message,
            "differences": [c.to_json() for c in self.changes],
        }


@dataclass(frozen=True)
class PodAudit:
    namespace: str
    name: str
    uid: str
    results: tuple[ProfileResult, ...]

    @property
    def drifted(self) -> bool:
        return any(r.result in DRIFTED for r in self.results)


@dataclass
class AuditReport:
    pods: list[PodAudit] = field(default_factory=list)  # every pod some profile matched
    audited: int = 0  # running pods looked at
    profiles: int = 0
    seconds: float = 0.0
    #: per profile whose patch sets security-sensitive pod fields: those fields (policies/admission/patch_risks.py)
    sensitive: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def drifted(self) -> list[PodAudit]:
        return [p for p in self.pods if p.drifted]

    def counts(self) -> dict[str, Counter[str]]:
        """Per profile: how many pods got each result."""
        counts: dict[str, Counter[str]] = {}
        for pod in self.pods:
            for result in pod.results:
                counts.setdefault(result.profile, Counter())[result.result] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        rows = [
            {"namespace": p.namespace, "pod": p.name, **r.to_json()}
            for p in self.drifted()
            for r in p.results
            if r.result != PASS
        ]
        return {
            "audited": self.audited,
            "matched": len(self.pods),
            "drifted": len(self.drifted()),
            "profiles": self.profiles,
            "seconds": round(self.seconds, 3),
            "summary": {name: {r: c.get(r, 0) for r in RESULTS} for name, c in sorted(self.counts().items())},
            "sensitivePatches": {name: list(fields) for name, fields in sorted(self.sensitive.items())},
            "results": rows,
        }


def running_pods(snapshot: ClusterSnapshot) -> list[Mapping[str, Any]]:
    """Pods not terminated and not being deleted, by namespace and name."""
    pods = [
        p
        for p in snapshot.list("Pod")
        if (p.get("status") or {}).get("phase") not in TERMINATED_PHASES and not metadata_of(p).get("deletionTimestamp")
    ]
    return sorted(pods, key=lambda p: (namespace_of(p), name_of(p)))


def _driver(matched: Sequence[ColocationProfile]) -> str:
    for attribute in ("priority_class_name", "qos_class"):
        deciding = [p for p in matched if getattr(p, attribute)]
        if deciding:
            return deciding[-1].name
    return matched[-1].name


def _owners(operations: Sequence[Mapping[str, Any]], effects: Sequence[Effect], driver: str) -> list[str]:
    """The profile each drift operation belongs to (see the module docstring)."""
    owners = []
    for op in operations:
        owner = driver
        for effect in reversed(effects):
            if effect.applied and any(overlaps(op["path"], change["path"]) for change in effect.changes):
                owner = effect.step[len(PROFILE_STEP) :] if effect.step.startswith(PROFILE_STEP) else driver
                break
        owners.append(owner)
    return owners


def _result_for(profile: ColocationProfile, changes: Sequence[Change]) -> ProfileResult:
    if not changes:
        return ProfileResult(profile.name, PASS)
    if profile.probability is not None and profile.probability < 100:
        return ProfileResult(
            profile.name,
            SKIP,
            f"would set {summary(changes)}; the profile applies to {profile.probability}% of pods",
            tuple(changes),
        )
    return ProfileResult(
        profile.name, WARN if profile.warn_only else FAIL, f"differs: {summary(changes)}", tuple(changes)
    )


def audit_pod(
    pod: Mapping[str, Any], snapshot: ClusterSnapshot, registry: Registry, profiles: Mapping[str, ColocationProfile]
) -> PodAudit | None:
    """The results of every profile matching `pod`; None when none matches."""
    obj = dict(pod)
    request = request_for(obj, registry, "CREATE", uid=str(metadata_of(pod).get("uid") or "audit"))
    outcome = run_chain(request, registry, snapshot, rand_int=_apply_every_profile, audit=True)
    matched = [profiles[name] for name in dict.fromkeys(outcome.matched_profiles) if name in profiles]
    if not matched:
        return None
    identity = (namespace_of(pod) or request.namespace, name_of(pod), str(metadata_of(pod).get("uid") or ""))
    if not outcome.allowed:
        verdict = "the chain fails" if outcome.denied_by.startswith("/mutate") else "the pod it makes is denied"
        message = f"{verdict}: {outcome.denied_by} (code {outcome.code}): {outcome.message}"
        return PodAudit(*identity, tuple(ProfileResult(p.name, ERROR, message) for p in matched))
    operations = diff(pod, outcome.object)
    if not operations:
        return PodAudit(*identity, tuple(ProfileResult(p.name, PASS) for p in matched))
    explained: ChainResult = run_chain(
        request, registry, snapshot, rand_int=_apply_every_profile, explain=True, audit=True
    )
    owners = _owners(operations, explained.effects, _driver(matched))
    changes = changes_of(pod, operations)
    return PodAudit(
        *identity,
        tuple(
            _result_for(p, [c for c, owner in zip(changes, owners, strict=True) if owner == p.name]) for p in matched
        ),
    )


def audit(
    snapshot: ClusterSnapshot,
    registry: Registry | None = None,
    pods: Iterable[Mapping[str, Any]] | None = None,
    on_pod: Callable[[], None] | None = None,
) -> AuditReport:
    """Audit the running pods of `snapshot` (or `pods`) against its profiles; `on_pod` is told of
    each pod audited (a progress bar)."""
    started = time.perf_counter()
    registry = registry or default_routes()
    profiles = {p.name: p for p in snapshot.profiles}
    report = AuditReport(profiles=len(profiles))
    report.sensitive = {name: f for name, p in profiles.items() if (f := sensitive_fields(p.patch))}
    if profiles:
        for pod in running_pods(snapshot) if pods is None else pods:
            report.audited += 1
            if (result := audit_pod(pod, snapshot, registry, profiles)) is not None:
                report.pods.append(result)
            if on_pod is not None:
                on_pod()
    else:
        report.audited = len(running_pods(snapshot)) if pods is None else len(list(pods))
    report.seconds = time.perf_counter() - started
    return report
