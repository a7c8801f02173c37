"""What a policy plugin receives and how it says no.

Two error families, as in kopf: a malformed *request* is the codec's business (`webhook.review`);
a rejected *object* is a `Denied` raised by a plugin, carrying the HTTP-style code Koordinator uses
(400 for validation failures, 500 for mutator errors such as an unknown PriorityClass).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from policies.admission.changes import Change, summary
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.jsonpatch_diff import diff
from policies.apis.kinds import kind_named
from policies.apis.objects import json_copy

CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"
OPERATIONS: Final = frozenset({CREATE, UPDATE, DELETE, CONNECT})


@dataclass(frozen=True, slots=True)
class Read:
    """A part of the cluster snapshot a plugin reads: a whole kind, or one namespace or one object of it.

    Plugins declare what they read (`reads`) so that the webhook watches exactly that, and grants
    itself exactly that in RBAC: `Read("Node")` is every Node, `Read("ConfigMap", "ns", "name")` the
    one ConfigMap. The kind must be a row of the kinds table (`policies.apis.kinds`).

    `metadata_only`: the plugin reads nothing of these objects but `apiVersion`, `kind` and
    `metadata` (what the API server's PartialObjectMetadata carries), so that when no reader of the
    kind needs more, the webhook keeps only that of each object (`webhook.watched`), as
    controller-runtime's metadata-only watches do: a pod's spec and status are most of its size.
    """

    kind: str
    namespace: str = ""
    name: str = ""
    metadata_only: bool = False

    def __post_init__(self) -> None:
        kind = kind_named(self.kind)  # a KeyError names a kind nobody declared
        if self.namespace and not kind.namespaced:
            raise ValueError(f"{self.kind} is cluster-scoped: a read of it cannot name namespace {self.namespace!r}")


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    group: str
    version: str
    resource: str


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The parts of an AdmissionReview request that policies read."""

    uid: str
    operation: str
    resource: GroupVersionResource
    sub_resource: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    object: Mapping[str, Any] | None = None
    old_object: Mapping[str, Any] | None = None
    dry_run: bool = False


class Denied(Exception):
    """The object is refused; `message` is what the user sees, `code` the status code."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass
class Effect:
    """What one step did to an object (collected only when explaining).

    A step is a matched profile (`profile/<name>`), the batch/mid resource rewrite, or a plugin
    (`plugin/<name>`); `applied` is false for a profile skipped by its probability.
    """

    step: str
    applied: bool
    changes: list[dict[str, Any]] = field(default_factory=list)
    #: what the step did that its changes do not show (a patched field dropped by the kind's type)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProfileWarning:
    """What a warn-only profile would have done to an object had it been enforced: its changes, or
    the denial it would have caused (by the mutating chain, or by a validating rule)."""

    profile: str
    changes: tuple[Change, ...] = ()
    denial: str = ""

    @property
    def outcome(self) -> str:
        return "deny" if self.denial else "change"

    def text(self, limit: int = 256) -> str:
        """The line kubectl prints after `Warning: `."""
        detail = f"would deny the request: {self.denial}" if self.denial else f"would set {summary(self.changes, 3)}"
        line = f"warn-only ClusterColocationProfile {self.profile} {detail}"
        return line if len(line) <= limit else line[: limit - 3] + "..."


def default_rand_int(n: int) -> int:
    """Uniform integer in [0, n): Koordinator's `rand.Intn`."""
    return random.randrange(n)


@dataclass
class AdmissionContext:
    """Per-request state shared by the plugins of one handler."""

    request: AdmissionRequest
    cluster: ClusterSnapshot
    rand_int: Callable[[int], int] = default_rand_int
    matched_profiles: list[str] = field(default_factory=list)
    effects: list[Effect] | None = None  # a list when the caller wants an explanation
    #: Re-evaluating an object admitted earlier (the background audit) rather than admitting a new one:
    #: a label that still holds the value the object came with, and ends with a profile's suffix,
    #: counts as suffixed, because labelSuffixes is the one profile step that is not idempotent (5.4).
    audit: bool = False
    #: Warn-only profiles to apply anyway: the one whose effect the WarnOnlyProfiles plugin measures.
    also_enforce: frozenset[str] = frozenset()
    #: Warn-only profiles that matched and were not applied, in name order.
    warn_only_matched: list[str] = field(default_factory=list)
    #: What those would have done (the WarnOnlyProfiles plugin fills it).
    warnings: list[ProfileWarning] = field(default_factory=list)

    #: notes of the step being run, moved to its Effect by `record`
    pending_notes: list[str] = field(default_factory=list)

    @property
    def explaining(self) -> bool:
        return self.effects is not None

    def note(self, text: str) -> None:
        """Say something about the step being run, when explaining."""
        if self.effects is not None:
            self.pending_notes.append(text)

    def record(self, step: str, applied: bool, before: Any, after: Any) -> None:
        """Note what `step` changed, when explaining (`before` must be a copy taken before it ran)."""
        if self.effects is not None:
            notes, self.pending_notes = self.pending_notes, []
            self.effects.append(Effect(step, applied, json_copy(diff(before, after)), notes))


class MutatingPlugin(Protocol):
    """Changes `obj` (a private copy of the request object) in place, or raises `Denied`.

    `operations` are the operations it acts on (on any other it must leave `obj` alone), `reads` the
    parts of `ctx.cluster` it may read. A plugin that sets `explains_itself` records its own
    finer-grained effects with `ctx.record`; for the others the runner records the plugin's whole
    change.
    """

    name: str
    operations: frozenset[str]
    reads: frozenset[Read]
    explains_itself: bool

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None: ...


class ValidatingPlugin(Protocol):
    """Raises `Denied` when `obj` (the request object, or oldObject on DELETE) may not be admitted.

    `operations` and `reads` as for `MutatingPlugin`: it refuses nothing on another operation.
    """

    name: str
    operations: frozenset[str]
    reads: frozenset[Read]

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None: ...
