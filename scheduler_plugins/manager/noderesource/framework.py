"""The manager's plugin table (Koordinator's `pkg/slo-controller/noderesource/framework`).

A node resource plugin implements the extension points it takes part in, each a small protocol:

- `SetupPlugin.setup`: once, when the table is built; a plugin asks for the kinds it reads beyond
  the manager's own (Koordinator's Setup adds its watches to the controller builder);
- `CalculatePlugin.calculate`: the plugin's result for one node this round, from what it declares
  in `reads` and nothing else (its `Reading` refuses any other read). None is the reset: the
  framework resets every plugin when colocation is off for the node, and every plugin that reads
  the NodeMetric when it is degraded (Koordinator's Reset);
- `PreUpdatePlugin.pre_update`: what the result writes beside the Node before it is updated (the
  batch plugin's NodeResourceTopology zones);
- `PreparePlugin.prepare`: the result applied to the node's status and annotations;
- `StatusCheckPlugin.needs_sync` and `MetaCheckPlugin.needs_sync_meta`: why the prepared node must
  be written (each plugin names the resources it owns and says why they moved).

`PluginTable` holds one ordered list (`plugins_profile.py`): each extension point runs its plugins
in that order, but calculation, which runs a plugin after those whose results it reads. Because
each plugin declares its reads, the memoising planner (`memo.MemoPlanner`) keys a plugin's kept
result on exactly those, and `plan.plan_node` calls the same plugins without keeping anything.

This module runs for every plugin of every node in a round, so it is compiled with the whatif group
(colocate/cluster/compiled.py): its values are plain classes and tuples rather than frozen
dataclasses, and a plugin takes part in an extension point when it has the protocol's members
(`_implements`, what a `runtime_checkable` protocol tests; mypyc compiles neither).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from operator import is_
from typing import Any, Final, Generic, NamedTuple, Protocol, TypeVar, cast

from policies.apis.slo_config.colocation import ColocationStrategy
from policies.apis.slo_config.cpu_normalization import NormalizationConfig
from policies.apis.slo_config.manager_config import ManagerConfig
from policies.apis.slo_config.resource_amplification import AmplificationConfig
from scheduler_plugins.manager.noderesource.inputs import MetricInput, NodeInput, NodeRead

T = TypeVar("T")
Object = Mapping[str, Any]


class Sources(NamedTuple):
    """Everything one node's round may read; a plugin sees only what its `reads` select. A tuple
    rather than a frozen dataclass: one is made per node and round (see `plan.NodePlan`)."""

    config: ManagerConfig
    read: NodeRead
    strategy: ColocationStrategy
    nrt: Object | None
    node_input: NodeInput
    #: None while the NodeMetric is not read (colocation off, or degraded)
    metric: MetricInput | None
    #: the results of the plugins calculated before this one, by plugin name
    results: Mapping[str, object]
    #: kind -> the object of that kind named after the node (the kinds the plugins' setup asked for)
    watched: Mapping[str, Object | None]


def _equal(a: object, b: object) -> bool:
    return a is b or a == b


class Read(Generic[T]):
    """One thing a plugin reads: `of` takes it from the round's sources; `same` says whether two
    readings are the same for a kept result (identity for objects replaced on change, equality for
    small values such as labels and one annotation's text). A value (`Final` attributes, equal only
    to itself), written as a plain class rather than a frozen dataclass so that this module compiles
    (colocate/cluster/compiled.py): a round calls these for every plugin of every node."""

    __slots__ = ("name", "of", "same", "metric", "result_of")

    def __init__(
        self,
        name: str,
        of: Callable[[Sources], T],
        same: Callable[[object, object], bool] = _equal,
        metric: bool = False,
        result_of: str = "",
    ) -> None:
        self.name: Final = name
        self.of: Final = of
        self.same: Final = same
        #: whether it is the NodeMetric (a degraded node resets the plugins that read it)
        self.metric: Final = metric
        #: the plugin whose result this is, for results of other plugins
        self.result_of: Final = result_of

    def __repr__(self) -> str:
        return f"Read({self.name})"


def _nrt_annotations(sources: Sources) -> object:
    return ((sources.nrt or {}).get("metadata") or {}).get("annotations")


STRATEGY: Read[ColocationStrategy] = Read("strategy", lambda s: s.strategy, is_)
NODE_INPUT: Read[NodeInput] = Read("node and pods", lambda s: s.node_input, is_)
NODE_LABELS: Read[Mapping[str, str]] = Read("node labels", lambda s: s.read.labels)
METRIC: Read[MetricInput] = Read("NodeMetric", lambda s: cast(MetricInput, s.metric), is_, metric=True)
NRT: Read[Object | None] = Read("NodeResourceTopology", lambda s: s.nrt, is_)
NRT_ANNOTATIONS: Read[Mapping[str, str] | None] = Read(
    "NodeResourceTopology annotations", lambda s: cast("Mapping[str, str] | None", _nrt_annotations(s)), is_
)
NORMALIZATION_CONFIG: Read[NormalizationConfig] = Read(
    "cpu-normalization config", lambda s: s.config.normalization, is_
)
AMPLIFICATION_CONFIG: Read[AmplificationConfig] = Read(
    "resource-amplification config", lambda s: s.config.amplification, is_
)


@cache
def node_annotation(key: str) -> Read[str | None]:
    """The text of one annotation of the node (one `Read` per key)."""
    return Read(f"node annotation {key}", lambda s: s.read.annotations.get(key))


@cache
def result_of(plugin: str) -> Read[object]:
    """Another plugin's result this round (it is calculated first)."""
    return Read(f"result of {plugin}", lambda s: s.results.get(plugin), result_of=plugin)


@cache
def watched(kind: str) -> Read[Object | None]:
    """The object of `kind` named after the node; the plugin's setup must `watch` the kind."""
    return Read(f"{kind} of the node", lambda s: s.watched.get(kind), is_)


class UndeclaredRead(LookupError):
    """A plugin read what it did not declare (its kept result would not notice that change)."""


class Reading:
    """What one plugin reads this round: the values of its declared reads, and no others."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[Read[Any], object]) -> None:
        self._values = values

    def __call__(self, read: Read[T]) -> T:
        try:
            return cast(T, self._values[read])
        except KeyError:
            raise UndeclaredRead(f"{read.name} is not among the plugin's reads") from None


def readings(plugin: CalculatePlugin, sources: Sources) -> tuple[object, ...]:
    """The values of the plugin's reads from the sources, in its declared order (the kept result's key)."""
    return tuple([read.of(sources) for read in plugin.reads])


def calculate(plugin: CalculatePlugin, sources: Sources) -> object:
    """The plugin's result, read afresh (what `plan.plan_node` does; `memo.MemoPlanner` keeps it)."""
    return plugin.calculate(Reading({read: read.of(sources) for read in plugin.reads}))


class PreparedNode:
    """The node as a write would leave it: copies of its status capacity and allocatable and of its
    annotations, which prepare plugins change, and `amounts`: each resource a plugin set, in
    thousandths (what the status checks compare; a resource a plugin removed is absent)."""

    __slots__ = ("capacity", "allocatable", "annotations", "amounts")

    def __init__(self, node: Object) -> None:
        status = node.get("status") or {}
        self.capacity: dict[str, Any] = dict(status.get("capacity") or {})
        self.allocatable: dict[str, Any] = dict(status.get("allocatable") or {})
        self.annotations: dict[str, Any] = dict((node.get("metadata") or {}).get("annotations") or {})
        self.amounts: dict[str, int] = {}

    def set(self, name: str, text: str, milli: int) -> None:
        """Write one resource in capacity and allocatable (`milli`: what `text` says in thousandths)."""
        self.capacity[name] = self.allocatable[name] = text
        self.amounts[name] = milli

    def remove(self, name: str) -> None:
        self.capacity.pop(name, None)
        self.allocatable.pop(name, None)
        self.amounts.pop(name, None)

    def as_dict(self) -> dict[str, Any]:
        return {"annotations": self.annotations, "capacity": self.capacity, "allocatable": self.allocatable}


class SetupOptions:
    """What a plugin's setup may ask of the manager: the kinds it reads (each object is the one
    named after its node, as Koordinator's NodeMetric, NodeSLO and Device are)."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def watch(self, kind: str) -> None:
        if kind not in self.kinds:
            self.kinds.append(kind)


class SetupPlugin(Protocol):
    name: str

    def setup(self, options: SetupOptions) -> None: ...


class CalculatePlugin(Protocol):
    name: str
    #: everything `calculate` reads (its `Reading` holds these and nothing else)
    reads: tuple[Read[Any], ...]

    def calculate(self, reading: Reading) -> object: ...


class PreUpdatePlugin(Protocol):
    name: str

    def pre_update(self, result: object) -> Mapping[str, Mapping[str, str]]:
        """The NodeResourceTopology zone values to write (zone name -> resource -> text)."""
        ...


class PreparePlugin(Protocol):
    name: str

    def prepare(self, result: object, node: PreparedNode) -> None:
        """Apply the result (None: the reset) to the prepared node. Must not read other plugins'
        results: what it needs of them, it declares as reads and keeps in its own result."""
        ...


class StatusCheckPlugin(Protocol):
    name: str
    #: the node resources this plugin writes in `status` (what the manager patches and compares)
    resources: tuple[str, ...]

    def needs_sync(self, strategy: ColocationStrategy, old: Mapping[str, int], new: Mapping[str, int]) -> Sequence[str]:
        """Why the status must be written (`old`/`new`: its resources in thousandths), or nothing."""
        ...


class MetaCheckPlugin(Protocol):
    name: str

    def needs_sync_meta(self, old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
        """Why the annotations must be patched, or None."""
        ...


def _implements(plugin: object, *members: str) -> bool:
    """Whether `plugin` has every member of an extension point's protocol (callers name them all, as
    declared above), as `isinstance` against a `runtime_checkable` protocol tests."""
    return all(hasattr(plugin, member) for member in members)


def _calculation_order(plugins: Sequence[CalculatePlugin]) -> tuple[CalculatePlugin, ...]:
    """The table's order, each plugin moved after the plugins whose results it reads."""
    names = {plugin.name for plugin in plugins}
    for plugin in plugins:
        missing = [read.result_of for read in plugin.reads if read.result_of and read.result_of not in names]
        if missing:
            raise ValueError(f"plugin {plugin.name} reads the result of {missing}, which is not in the table")
    done: dict[str, CalculatePlugin] = {}
    while len(done) < len(plugins):
        ready = [p for p in plugins if p.name not in done and all(r.result_of in done for r in p.reads if r.result_of)]
        if not ready:
            raise ValueError(f"plugins read each other's results in a cycle: {sorted(names - done.keys())}")
        done.update((p.name, p) for p in ready)
    return tuple(done.values())


class PluginTable:
    """One ordered list of plugins and, per extension point, those that implement it. A duplicate
    name is an error; so is a plugin that reads the result of one not in the table. A value (`Final`
    attributes), a plain class so that this module compiles (see `Read`)."""

    __slots__ = (
        "plugins",
        "calculators",
        "pre_updaters",
        "preparers",
        "status_checks",
        "meta_checks",
        "resources",
        "watched_kinds",
        "metric_readers",
    )

    def __init__(self, plugins: tuple[object, ...]) -> None:
        names = [str(getattr(plugin, "name", "")) for plugin in plugins]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates or "" in names:
            raise ValueError(f"plugin names must be given and unique: {duplicates or names}")
        options = SetupOptions()
        for plugin in plugins:
            if _implements(plugin, "name", "setup"):
                cast(SetupPlugin, plugin).setup(options)
        calculators = [cast(CalculatePlugin, p) for p in plugins if _implements(p, "name", "reads", "calculate")]
        checks = tuple(cast(StatusCheckPlugin, p) for p in plugins if _implements(p, "name", "resources", "needs_sync"))
        self.plugins: Final = plugins
        self.calculators: Final = _calculation_order(calculators)
        self.pre_updaters: Final = tuple(
            cast(PreUpdatePlugin, p) for p in plugins if _implements(p, "name", "pre_update")
        )
        self.preparers: Final = tuple(cast(PreparePlugin, p) for p in plugins if _implements(p, "name", "prepare"))
        self.status_checks: Final = checks
        self.meta_checks: Final = tuple(
            cast(MetaCheckPlugin, p) for p in plugins if _implements(p, "name", "needs_sync_meta")
        )
        #: every resource a status-check plugin owns, sorted (the order the plan lists them in)
        self.resources: Final = tuple(sorted({r for p in checks for r in p.resources}))
        #: the kinds the plugins' setup asked for
        self.watched_kinds: Final = tuple(options.kinds)
        #: the names of the plugins that read the NodeMetric (reset when it is degraded)
        self.metric_readers: Final = frozenset(p.name for p in calculators if any(read.metric for read in p.reads))

    def prepare(self, node: Object, results: Mapping[str, object]) -> PreparedNode:
        """The node as the results leave it (each prepare plugin in table order)."""
        prepared = PreparedNode(node)
        for plugin in self.preparers:
            plugin.prepare(results.get(plugin.name), prepared)
        return prepared

    def zones(self, results: Mapping[str, object]) -> dict[str, dict[str, str]]:
        """The NodeResourceTopology zone values the pre-update plugins write, merged per zone."""
        zones: dict[str, dict[str, str]] = {}
        for plugin in self.pre_updaters:
            for zone, values in plugin.pre_update(results.get(plugin.name)).items():
                zones.setdefault(zone, {}).update(values)
        return zones
