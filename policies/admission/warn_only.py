"""Warn-only profiles (`colocate.io/enforcement: warn`): evaluated on every admission, never applied.

The profile plugins leave a warn-only profile out and note it in the context; this plugin, last in
its route, then asks for each one "what if it were enforced?": it runs the route's other plugins
again on a fresh copy of the request object with that one profile enforced, and compares the
result with the object the route really produced. The difference (or the denial the profile would
cause, by the mutating chain or by the validating rules the route's kind is checked against) is a
`ProfileWarning`: the server turns it into an AdmissionResponse `warnings` entry, which kubectl
prints, and `auditAnnotations` for the API server's audit log.

It costs nothing when no warn-only profile matches, and one extra run of the route per matched
warn-only profile when one does (the benchmark measures it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson

from policies.admission.changes import changes_of
from policies.admission.plugin import (
    CREATE,
    AdmissionContext,
    Denied,
    MutatingPlugin,
    ProfileWarning,
    Read,
    ValidatingPlugin,
)
from policies.apis.jsonpatch_diff import diff

#: kube-apiserver adds the webhook's name: `mpod-create.koordinator.sh/warn-only-profiles`.
AUDIT_PROFILES: Final = "warn-only-profiles"
AUDIT_EFFECTS: Final = "warn-only-effects"
MAX_WARNINGS: Final = 10
MAX_AUDIT_VALUE: Final = 4096


class WarnOnlyProfilesPlugin:
    name = "WarnOnlyProfiles"
    operations = frozenset({CREATE})
    explains_itself = True  # it changes nothing

    def __init__(
        self,
        plugins: Sequence[MutatingPlugin],
        copy: Callable[[dict[str, Any]], dict[str, Any]],
        validators: Sequence[ValidatingPlugin],
    ) -> None:
        self.plugins, self.copy, self.validators = tuple(plugins), copy, tuple(validators)
        self.reads: frozenset[Read] = frozenset(
            [
                *(read for plugin in self.plugins for read in plugin.reads),
                *(read for validator in self.validators for read in validator.reads),
            ]
        )

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation not in self.operations or not ctx.warn_only_matched or ctx.request.object is None:
            return
        for profile in ctx.warn_only_matched:
            warning = self._what_if(profile, obj, ctx)
            if warning is not None:
                ctx.warnings.append(warning)

    def _what_if(self, profile: str, actual: dict[str, Any], ctx: AdmissionContext) -> ProfileWarning | None:
        what_if = AdmissionContext(ctx.request, ctx.cluster, ctx.rand_int, also_enforce=frozenset({profile}))
        obj = self.copy(dict(ctx.request.object or {}))
        try:
            for plugin in self.plugins:
                plugin.mutate(obj, what_if)
        except Denied as refused:
            return ProfileWarning(profile, denial=refused.message)
        operations = diff(actual, obj)
        if not operations:
            return None
        denial = self._denial(obj, what_if)
        if denial and not self._denial(actual, ctx):  # a denial the object would get anyway is not the profile's
            return ProfileWarning(profile, denial=denial)
        return ProfileWarning(profile, tuple(changes_of(actual, operations)))

    def _denial(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> str:
        try:
            for validator in self.validators:
                validator.validate(obj, ctx)
        except Denied as denial:
            return denial.message
        return ""


def warning_lines(warnings: Sequence[ProfileWarning]) -> list[str]:
    """The AdmissionResponse `warnings`: one line per profile, at most MAX_WARNINGS."""
    lines = [w.text() for w in warnings[:MAX_WARNINGS]]
    if len(warnings) > MAX_WARNINGS:
        lines.append(f"and {len(warnings) - MAX_WARNINGS} more warn-only ClusterColocationProfiles would change it")
    return lines


def audit_annotations(warnings: Sequence[ProfileWarning]) -> dict[str, str]:
    """The AdmissionResponse `auditAnnotations`: which profiles, and what each would have done (JSON)."""
    if not warnings:
        return {}
    effects = {
        w.profile: {"denial": w.denial} if w.denial else {"changes": [str(c) for c in w.changes]} for w in warnings
    }
    text = orjson.dumps(effects).decode()
    if len(text) > MAX_AUDIT_VALUE:
        text = orjson.dumps({w.profile: {"outcome": w.outcome} for w in warnings}).decode()[:MAX_AUDIT_VALUE]
    return {AUDIT_PROFILES: ",".join(w.profile for w in warnings)[:MAX_AUDIT_VALUE], AUDIT_EFFECTS: text}
