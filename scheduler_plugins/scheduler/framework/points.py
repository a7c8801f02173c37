"""The plugins a profile enables at each extension point, typed by point.

Built once from the profile and the instantiated plugins, in profile order; a plugin enabled at a
point it does not implement is a configuration error naming the field (`profiles[0].plugins.filter`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.field_errors import ConfigError
from scheduler_plugins.scheduler.framework.config import Profile
from scheduler_plugins.scheduler.framework.interfaces import (
    EXTENSION_POINTS,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)


@dataclass(frozen=True, slots=True)
class ExtensionPoints:
    """One field per entry of `EXTENSION_POINTS`, named in snake case (`preEnqueue` -> `pre_enqueue`)."""

    pre_enqueue: tuple[PreEnqueuePlugin, ...] = ()
    queue_sort: tuple[QueueSortPlugin, ...] = ()
    pre_filter: tuple[PreFilterPlugin, ...] = ()
    filter: tuple[FilterPlugin, ...] = ()
    post_filter: tuple[PostFilterPlugin, ...] = ()
    pre_score: tuple[PreScorePlugin, ...] = ()
    score: tuple[ScorePlugin, ...] = ()
    reserve: tuple[ReservePlugin, ...] = ()
    permit: tuple[PermitPlugin, ...] = ()
    pre_bind: tuple[PreBindPlugin, ...] = ()
    bind: tuple[BindPlugin, ...] = ()
    post_bind: tuple[PostBindPlugin, ...] = ()

    @classmethod
    def from_profile(cls, profile: Profile, plugins: Mapping[str, object]) -> ExtensionPoints:
        """The profile's enabled plugins per point; raises ConfigError for a plugin enabled at a
        point whose protocol it does not implement (points checked in EXTENSION_POINTS order)."""
        return cls(**{_field_name(point): _enabled(profile, plugins, point) for point in EXTENSION_POINTS})


def _field_name(point: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), point)


def _enabled(profile: Profile, plugins: Mapping[str, object], point: str) -> tuple[Any, ...]:
    protocol = EXTENSION_POINTS[point]
    chosen = []
    for ref in profile.enabled(point):
        plugin = plugins[ref.name]
        if not isinstance(plugin, protocol):
            raise ConfigError(f"{profile.path}.plugins.{point}", f"plugin {ref.name!r} does not implement {point}")
        chosen.append(plugin)
    return tuple(chosen)
