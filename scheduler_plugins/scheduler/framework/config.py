"""KubeSchedulerConfiguration (Koordinator's `pkg/scheduler/apis/config/`): profiles, plugin sets
per extension point, weights and `pluginConfig` args, defaulted and validated once with the field
path in every error.

Plugin sets merge with the in-tree defaults as kube-scheduler does: a default plugin stays unless
disabled (`"*"` disables every default of that point); an enabled plugin that is also a default
takes the default's position with the custom weight; other enabled plugins are appended in order.
A score weight of 0 (or none) means 1, as upstream.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policies.apis.field_errors import ConfigError, Fields, check_range
from scheduler_plugins.scheduler.framework.interfaces import EXTENSION_POINTS
from scheduler_plugins.scheduler.framework.registry import Registry

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "koord-scheduler"
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # 0 = adaptive, as kube-scheduler


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 1


#: Koordinator's shipped weight: a node with a reservation the pod can use wins over balance.
RESERVATION_SCORE_WEIGHT = 5000

#: The profile used when no configuration file is given, and the base every profile merges with.
DEFAULT_PLUGINS: Mapping[str, tuple[PluginRef, ...]] = {
    "preEnqueue": (PluginRef("Coscheduling"),),
    "queueSort": (PluginRef("PrioritySort"),),
    "preFilter": (
        PluginRef("NodeResourcesFit"),
        PluginRef("LoadAwareScheduling"),
        PluginRef("Reservation"),
        PluginRef("Coscheduling"),
    ),
    "filter": (PluginRef("NodeResourcesFit"), PluginRef("LoadAwareScheduling"), PluginRef("Reservation")),
    "postFilter": (PluginRef("Coscheduling"), PluginRef("DefaultPreemption")),
    "preScore": (PluginRef("NodeResourcesFit"), PluginRef("Reservation")),
    "score": (
        PluginRef("LoadAwareScheduling", 1),
        PluginRef("NodeResourcesFit", 1),
        PluginRef("Reservation", RESERVATION_SCORE_WEIGHT),
    ),
    "reserve": (PluginRef("LoadAwareScheduling"), PluginRef("Reservation"), PluginRef("Coscheduling")),
    "permit": (PluginRef("Coscheduling"),),
    "preBind": (PluginRef("Reservation"), PluginRef("DefaultPreBind")),
    "bind": (PluginRef("Reservation"), PluginRef("DefaultBinder")),
    "postBind": (),
}


@dataclass(frozen=True)
class Profile:
    scheduler_name: str
    plugins: Mapping[str, tuple[PluginRef, ...]]
    args: Mapping[str, Any]
    path: str = "profiles[0]"
    #: the profile's own percentageOfNodesToScore (KubeSchedulerProfile, kube-scheduler ≥ 1.27):
    #: when set it wins over the top-level one; None: use the top-level one
    percentage_of_nodes_to_score: int | None = None

    def enabled(self, point: str) -> tuple[PluginRef, ...]:
        return self.plugins.get(point, ())

    def plugin_names(self) -> list[str]:
        """Every enabled plugin once, in first-enabled order."""
        seen: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            for ref in self.enabled(point):
                seen.setdefault(ref.name)
        return list(seen)


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[Profile, ...]
    extenders: tuple[Mapping[str, Any], ...] = ()
    percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    source: str = field(default="<defaults>", compare=False)

    def profile(self, scheduler_name: str | None = None) -> Profile:
        if scheduler_name is None:
            return self.profiles[0]
        for profile in self.profiles:
            if profile.scheduler_name == scheduler_name:
                return profile
        raise KeyError(f"no profile for schedulerName {scheduler_name!r}")


def _entries(block: Fields, key: str) -> Iterator[Fields]:
    """The items of the list `key` of `block`, each with its field path (`...enabled[2]`)."""
    for i, item in enumerate(block.raw.get(key) or []):
        yield Fields(item, f"{block.at(key)}[{i}]")


def _plugin_named(entry: Fields, registry: Registry, seen: Container[str], twice: str, *, listed: bool) -> str:
    """The registered plugin `entry` names, once: an unknown name (with the registered ones when
    `listed`) or one already `seen` (said as `twice`, with `{name}` for the name) is refused."""
    name = entry.str("name")
    if name not in registry:
        registered = f" (registered: {', '.join(registry.names())})" if listed else ""
        raise ConfigError(entry.at("name"), f"unknown plugin {name!r}{registered}")
    if name in seen:
        raise ConfigError(entry.at("name"), twice.format(name=repr(name)))
    return name


def _merge(point: str, defaults: tuple[PluginRef, ...], block: Fields, registry: Registry) -> tuple[PluginRef, ...]:
    disabled = {entry.str("name") for entry in _entries(block, "disabled")}
    custom: dict[str, PluginRef] = {}
    for entry in _entries(block, "enabled"):
        name = _plugin_named(entry, registry, custom, "plugin {name} enabled twice", listed=True)
        weight = entry.int("weight", 0) or 0
        if weight < 0:
            raise ConfigError(entry.at("weight"), f"must not be negative, got {weight}")
        custom[name] = PluginRef(name, weight or 1)
    merged: list[PluginRef] = []
    for ref in defaults:
        if "*" in disabled or ref.name in disabled:
            continue
        merged.append(custom.pop(ref.name, ref))
    merged.extend(custom.values())
    return tuple(merged)


def _plugin_args(profile: Fields, names: list[str], registry: Registry) -> dict[str, Any]:
    raw_args: dict[str, tuple[Any, str]] = {}
    for entry in _entries(profile, "pluginConfig"):
        name = _plugin_named(entry, registry, raw_args, "duplicate pluginConfig for {name}", listed=False)
        args = dict(Fields(entry.raw.get("args"), entry.at("args")).raw)
        kind = args.pop("kind", None)
        args.pop("apiVersion", None)
        if kind not in (None, f"{name}Args"):
            raise ConfigError(entry.at("args.kind"), f"must be {name}Args, got {kind!r}")
        raw_args[name] = (args, entry.at("args"))
    parsed: dict[str, Any] = {}
    for name in dict.fromkeys([*names, *raw_args]):
        raw, path = raw_args.get(name, (None, f"{profile.path}.pluginConfig[{name}].args"))
        parsed[name] = registry[name].parse_args(raw, path)
    return parsed


def _profile(raw: Any, path: str, registry: Registry) -> Profile:
    fields = Fields(raw, path)
    plugins_block = fields.sub("plugins")
    if plugins_block.raw.get("multiPoint"):
        raise ConfigError(
            plugins_block.at("multiPoint"), "multiPoint is not supported; list plugins per extension point"
        )
    plugins: dict[str, tuple[PluginRef, ...]] = {}
    for point, defaults in DEFAULT_PLUGINS.items():
        plugins[point] = _merge(point, defaults, plugins_block.sub(point), registry)
    for key in plugins_block.raw:
        if key not in DEFAULT_PLUGINS and key != "multiPoint":
            raise ConfigError(plugins_block.at(key), "unknown extension point")
    if len(plugins["queueSort"]) > 1:
        raise ConfigError(plugins_block.at("queueSort"), "only one queue sort plugin may be enabled")
    if not plugins["bind"]:
        raise ConfigError(plugins_block.at("bind"), "at least one bind plugin must be enabled")
    percentage = None
    if fields.raw.get("percentageOfNodesToScore") is not None:
        percentage = fields.int("percentageOfNodesToScore", DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE)
        check_range(fields.at("percentageOfNodesToScore"), percentage, 0, 100)
    profile = Profile(fields.str("schedulerName", DEFAULT_SCHEDULER_NAME), plugins, {}, path)
    args = _plugin_args(fields, profile.plugin_names(), registry)
    return Profile(profile.scheduler_name, plugins, args, path, percentage)


def parse_config(doc: Any, registry: Registry, source: str = "<document>") -> SchedulerConfig:
    top = Fields(doc, "")
    api_version, kind = top.str("apiVersion", API_VERSION), top.str("kind", KIND)
    if api_version != API_VERSION:
        raise ConfigError("apiVersion", f"must be {API_VERSION}, got {api_version!r}")
    if kind != KIND:
        raise ConfigError("kind", f"must be {KIND}, got {kind!r}")
    raw_profiles = top.raw.get("profiles") or [{}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles", "must be a list")
    profiles = tuple(_profile(p, f"profiles[{i}]", registry) for i, p in enumerate(raw_profiles))
    names = [p.scheduler_name for p in profiles]
    if len(set(names)) != len(names):
        raise ConfigError("profiles", f"duplicate schedulerName in {names}")
    percentage = top.int("percentageOfNodesToScore", DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE)
    check_range("percentageOfNodesToScore", percentage, 0, 100)
    extenders = []
    for i, ext in enumerate(top.raw.get("extenders") or []):
        entry = Fields(ext, f"extenders[{i}]")
        if not entry.str("urlPrefix"):
            raise ConfigError(entry.at("urlPrefix"), "is required")
        extenders.append(dict(entry.raw))
    return SchedulerConfig(profiles, tuple(extenders), percentage, source)


def load_config(path: str | Path | None, registry: Registry) -> SchedulerConfig:
    """The configuration in `path`, or the default profile when `path` is None."""
    if path is None:
        return parse_config({}, registry, "<defaults>")
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError("", f"{path}: cannot read: {exc}") from exc
    return parse_config(doc or {}, registry, str(path))
