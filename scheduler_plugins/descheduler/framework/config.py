"""DeschedulerConfiguration `descheduler/v1alpha2` (Koordinator's
`pkg/descheduler/apis/config/types.go`, `v1alpha2/defaults.go`): parsed, defaulted and validated
once at the boundary; every error names its field
(`profiles[0].pluginConfig[1].args.lowThresholds.cpu`).

Plugin sets are merged with the defaults (evict and filter: MigrationController): a disabled `*`
drops every default, a disabled name drops that default, an enabled plugin with a default's name
replaces it in place, other enabled plugins are appended in order. Every enabled plugin that has an
args kind and no pluginConfig gets its defaulted args.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from policies.apis.field_errors import ConfigError, Fields
from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from scheduler_plugins.descheduler.framework.registry import Registry

log = logging.getLogger("colocate.descheduler")

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerConfiguration"
DEFAULT_PROFILE_NAME: Final = "koord-descheduler"
DEFAULT_INTERVAL_SECONDS: Final = 120.0
#: where /healthz and /metrics listen when the configuration does not say: in a pod, every address
#: (the kubelet probes the pod's IP; Koordinator's default); anywhere else, loopback only
IN_CLUSTER_BIND_ADDRESS: Final = "0.0.0.0:10251"
OFF_CLUSTER_BIND_ADDRESS: Final = "127.0.0.1:10251"
MIGRATION_CONTROLLER: Final = "MigrationController"
EXTENSION_POINTS: Final = ("deschedule", "balance", "evict", "filter")
#: the default plugin set of every profile
DEFAULT_PLUGINS: Final[Mapping[str, tuple[str, ...]]] = {
    "deschedule": (),
    "balance": (),
    "evict": (MIGRATION_CONTROLLER,),
    "filter": (MIGRATION_CONTROLLER,),
}

_TOP_FIELDS: Final = frozenset(
    {
        "apiVersion",
        "kind",
        "leaderElection",
        "clientConnection",
        "healthzBindAddress",
        "metricsBindAddress",
        "deschedulingInterval",
        "dryRun",
        "nodeSelector",
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
        "maxNoOfPodsToEvictTotal",
        "profiles",
        "debuggingConfiguration",
        "enableContentionProfiling",
        "enableProfiling",
    }
)


def check_fields(fields: Fields, known: frozenset[str]) -> None:
    """Strict decoding: an unknown field is an error (a typo must not be silently ignored)."""
    for key in fields.raw:
        if key not in known:
            raise ConfigError(fields.at(str(key)), "unknown field")


def selector(fields: Fields, key: str) -> LabelSelector | None:
    """An optional LabelSelector; a malformed one is an error at its path."""
    if not fields.has(key):
        return None
    try:
        compiled = compile_selector(fields.raw[key], fields.at(key))
    except SelectorShapeError as exc:
        raise ConfigError(exc.path, exc.detail) from exc
    if isinstance(compiled, InvalidSelector):
        raise ConfigError(fields.at(key), compiled.error)
    return compiled


def _optional_count(fields: Fields, key: str) -> int | None:
    value = fields.int(key, None)
    if value is not None and value < 0:
        raise ConfigError(fields.at(key), f"must be greater than or equal to 0, got {value}")
    return value


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    resource_lock: str = "leases"
    resource_namespace: str = "koordinator-system"
    resource_name: str = "koord-descheduler"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class ClientConnection:
    """`clientConnection` (component-base's ClientConnectionConfiguration, the descheduler's
    defaults: 50 requests a second, bursts of 100): the rate every API request is held to, and the
    kubeconfig used when `--kubeconfig` is not given."""

    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100


#: content types the `kubernetes` client speaks (protobuf, Koordinator's default, it cannot)
JSON_CONTENT_TYPES: Final = frozenset({"", "application/json"})


@dataclass(frozen=True)
class Profile:
    name: str
    node_selector: LabelSelector | None
    #: enabled plugin names per extension point, merged with the defaults, in order
    plugins: Mapping[str, tuple[str, ...]]
    #: parsed args per plugin name
    args: Mapping[str, Any]


@dataclass(frozen=True)
class DeschedulerConfig:
    profiles: tuple[Profile, ...]
    leader_election: LeaderElection = LeaderElection()
    healthz_bind_address: str | None = None  # None: `bind_addresses` decides by where we run
    metrics_bind_address: str | None = None
    descheduling_interval: float = DEFAULT_INTERVAL_SECONDS
    dry_run: bool = False
    node_selector: LabelSelector | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    client_connection: ClientConnection = ClientConnection()

    def bind_addresses(self, *, in_cluster: bool) -> tuple[str, str]:
        """(healthz, metrics) as configured, else every address in a pod and loopback off-cluster:
        a descheduler run from a laptop must not serve its metrics to the whole network."""
        default = IN_CLUSTER_BIND_ADDRESS if in_cluster else OFF_CLUSTER_BIND_ADDRESS
        return self.healthz_bind_address or default, self.metrics_bind_address or default


def _client_connection(fields: Fields) -> ClientConnection:
    check_fields(fields, frozenset({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"}))
    for key in ("qps", "burst"):
        if fields.has(key) and (isinstance(fields.raw[key], bool) or not isinstance(fields.raw[key], int | float)):
            raise ConfigError(fields.at(key), "must be a number")
    qps = float(fields.raw.get("qps") or 50.0)  # 0: the default, as Koordinator's defaulting
    burst = fields.raw.get("burst") or 100
    if qps < 0:
        raise ConfigError(fields.at("qps"), f"Invalid value: {qps:g}: must be greater than or equal to 0")
    if burst < 0 or burst != int(burst):
        raise ConfigError(fields.at("burst"), f"Invalid value: {burst}: must be a whole number >= 0")
    for key in ("contentType", "acceptContentTypes"):
        types = {t.strip() for t in (fields.str(key) or "").split(",")}
        if not types <= JSON_CONTENT_TYPES:
            log.warning("%s: %s is not used: the client speaks application/json only", fields.at(key), fields.str(key))
    return ClientConnection(fields.str("kubeconfig") or "", qps, int(burst))


def _warn_debugging(fields: Fields) -> None:
    """Koordinator serves /debug/pprof under these; colocate has no profiling endpoint: say so."""
    debugging = fields.sub("debuggingConfiguration")
    check_fields(debugging, frozenset({"enableProfiling", "enableContentionProfiling"}))
    for where in (fields, debugging):
        for key in ("enableProfiling", "enableContentionProfiling"):
            if where.bool(key, False):
                log.warning("%s: true is not acted on: colocate serves no /debug/pprof endpoints", where.at(key))


def _leader_election(fields: Fields) -> LeaderElection:
    check_fields(
        fields,
        frozenset(
            {
                "leaderElect",
                "resourceLock",
                "resourceNamespace",
                "resourceName",
                "leaseDuration",
                "renewDeadline",
                "retryPeriod",
            }
        ),
    )
    lock = fields.str("resourceLock", "leases")
    if lock != "leases":
        raise ConfigError(fields.at("resourceLock"), f'Unsupported value: "{lock}": supported values: "leases"')
    election = LeaderElection(
        leader_elect=fields.bool("leaderElect", True),
        resource_lock=lock,
        resource_namespace=fields.str("resourceNamespace", "koordinator-system") or "koordinator-system",
        resource_name=fields.str("resourceName", "koord-descheduler") or "koord-descheduler",
        lease_duration=fields.duration("leaseDuration", 15.0),
        renew_deadline=fields.duration("renewDeadline", 10.0),
        retry_period=fields.duration("retryPeriod", 2.0),
    )
    if election.leader_elect and not election.renew_deadline < election.lease_duration:
        raise ConfigError(fields.at("renewDeadline"), "must be less than leaseDuration")
    return election


def _plugin_names(fields: Fields, key: str) -> list[str]:
    raw = fields.raw.get(key) or []
    if not isinstance(raw, list):
        raise ConfigError(fields.at(key), "must be a list of {name: ...}")
    names = []
    for index, item in enumerate(raw):
        entry = Fields(item, f"{fields.at(key)}[{index}]")
        name = entry.str("name")
        if not name:
            raise ConfigError(entry.at("name"), "Required value")
        names.append(name)
    return names


def merge_plugin_set(defaults: tuple[str, ...], enabled: list[str], disabled: list[str]) -> tuple[str, ...]:
    """Plugin-set merging as kube-scheduler and Koordinator's descheduler merge a profile's
    plugins."""
    kept = [] if "*" in disabled else [name for name in defaults if name not in disabled]
    out = list(kept)
    for name in enabled:
        if name in kept:
            continue  # replaces the default in place
        out.append(name)
    return tuple(out)


def _args_block(raw: Any, name: str, path: str) -> Fields:
    fields = Fields(raw, path)
    api_version = fields.str("apiVersion")
    if api_version and api_version != API_VERSION:
        raise ConfigError(
            fields.at("apiVersion"), f'Unsupported value: "{api_version}": supported values: "{API_VERSION}"'
        )
    kind = fields.str("kind")
    if kind and kind != f"{name}Args":
        raise ConfigError(fields.at("kind"), f'must be "{name}Args" for plugin {name}, got "{kind}"')
    return fields


def _profile(fields: Fields, index_name: str, registry: Registry) -> Profile:
    check_fields(fields, frozenset({"name", "nodeSelector", "plugins", "pluginConfig"}))
    plugins_fields = fields.sub("plugins")
    check_fields(plugins_fields, frozenset(EXTENSION_POINTS))
    plugins: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        point_fields = plugins_fields.sub(point)
        check_fields(point_fields, frozenset({"enabled", "disabled"}))
        enabled = _plugin_names(point_fields, "enabled")
        for position, name in enumerate(enabled):
            if name not in registry:
                raise ConfigError(
                    f"{point_fields.at('enabled')}[{position}].name",
                    f'Unsupported value: "{name}": supported values: '
                    + ", ".join(f'"{n}"' for n in sorted(registry.names())),
                )
        seen: set[str] = set()
        for position, name in enumerate(enabled):
            if name in seen:
                raise ConfigError(f"{point_fields.at('enabled')}[{position}].name", f'Duplicate value: "{name}"')
            seen.add(name)
        plugins[point] = merge_plugin_set(DEFAULT_PLUGINS[point], enabled, _plugin_names(point_fields, "disabled"))
    if not plugins["evict"] and (plugins["deschedule"] or plugins["balance"]):
        raise ConfigError(
            plugins_fields.at("evict.enabled"),
            "Required value: a profile with Deschedule or Balance plugins needs an Evict plugin",
        )
    raw_configs = fields.raw.get("pluginConfig") or []
    if not isinstance(raw_configs, list):
        raise ConfigError(fields.at("pluginConfig"), "must be a list of {name, args}")
    args: dict[str, Any] = {}
    for position, item in enumerate(raw_configs):
        entry = Fields(item, f"{fields.at('pluginConfig')}[{position}]")
        check_fields(entry, frozenset({"name", "args"}))
        name = entry.str("name")
        if not name:
            raise ConfigError(entry.at("name"), "Required value")
        if name in args:
            raise ConfigError(entry.at("name"), f'Duplicate value: "{name}"')
        if name not in registry:
            raise ConfigError(entry.at("name"), f'Unsupported value: "{name}": no such plugin')
        args[name] = registry[name].parse_args(_args_block(entry.raw.get("args"), name, entry.at("args")))
    for name in dict.fromkeys(n for point in EXTENSION_POINTS for n in plugins[point]):
        if name not in args and registry[name].has_args:
            args[name] = registry[name].parse_args(Fields({}, f"{fields.path}.pluginConfig[{name}].args"))
    return Profile(fields.str("name") or index_name, selector(fields, "nodeSelector"), plugins, args)


def parse_config(raw: Any, registry: Registry) -> DeschedulerConfig:
    fields = Fields(raw, "")
    check_fields(fields, _TOP_FIELDS)
    if fields.str("apiVersion") != API_VERSION:
        raise ConfigError(
            "apiVersion", f'Unsupported value: "{fields.str("apiVersion")}": supported values: "{API_VERSION}"'
        )
    if fields.str("kind") != KIND:
        raise ConfigError("kind", f'Unsupported value: "{fields.str("kind")}": supported values: "{KIND}"')
    interval = fields.duration("deschedulingInterval", DEFAULT_INTERVAL_SECONDS)
    if interval < 0:
        raise ConfigError("deschedulingInterval", "must be greater than or equal to 0")
    raw_profiles = fields.raw.get("profiles")
    if raw_profiles is None:
        raw_profiles = [{}]
    if not isinstance(raw_profiles, list) or not raw_profiles:
        raise ConfigError("profiles", "Required value: at least one profile")
    profiles = []
    names: set[str] = set()
    for index, item in enumerate(raw_profiles):
        default_name = DEFAULT_PROFILE_NAME if len(raw_profiles) == 1 else ""
        profile = _profile(Fields(item, f"profiles[{index}]"), default_name, registry)
        if not profile.name:
            raise ConfigError(f"profiles[{index}].name", "Required value")
        if profile.name in names:
            raise ConfigError(f"profiles[{index}].name", f'Duplicate value: "{profile.name}"')
        names.add(profile.name)
        profiles.append(profile)
    _warn_debugging(fields)
    return DeschedulerConfig(
        profiles=tuple(profiles),
        leader_election=_leader_election(fields.sub("leaderElection")),
        healthz_bind_address=fields.str("healthzBindAddress", "") or None,
        metrics_bind_address=fields.str("metricsBindAddress", "") or None,
        descheduling_interval=interval,
        dry_run=fields.bool("dryRun", False),
        node_selector=selector(fields, "nodeSelector"),
        max_per_node=_optional_count(fields, "maxNoOfPodsToEvictPerNode"),
        max_per_namespace=_optional_count(fields, "maxNoOfPodsToEvictPerNamespace"),
        max_total=_optional_count(fields, "maxNoOfPodsToEvictTotal"),
        client_connection=_client_connection(fields.sub("clientConnection")),
    )


def load_config(path: str | Path, registry: Registry) -> DeschedulerConfig:
    """Read and parse a configuration file; unreadable or malformed YAML is a ConfigError."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("--config", f"{path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError("--config", f"{path}: not YAML: {exc}") from exc
    return parse_config(raw, registry)
