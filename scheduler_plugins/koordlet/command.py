"""`colocate koordlet run`: its flags, and the process around the `Agent` (the store's source,
the HTTP server, signals). The agent's loops are in `agent.py`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colocate.cli import errors, flags
from colocate.cli.parser import Subparsers
from colocate.cluster.files import DirectorySource
from colocate.cluster.store import ClusterStore
from policies.apis.field_errors import ConfigError
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.koordlet.agent import SYNC_TIMEOUT, Agent, AgentSettings, log, watched_kinds
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, LayoutError, detect_version
from scheduler_plugins.koordlet.framework import ExtensionRegistry, default_extensions, plugin_gates, plugin_strategies
from scheduler_plugins.koordlet.options import add_strategy_flags, strategy_options
from scheduler_plugins.koordlet.states import KOORDLET_KINDS
from scheduler_plugins.koordlet.strategies.base import StrategyOptions

if TYPE_CHECKING:
    from colocate.cluster.probes import ProbeListeners


def directory_source(root: Path, store: ClusterStore, interval: float) -> Callable[[], Any]:
    source = DirectorySource(root, store)

    async def run() -> None:
        while True:
            try:
                await asyncio.to_thread(source.scan)
            except Exception as exc:
                log.warning("node directory %s not loaded: %s", root, exc)
            await asyncio.sleep(interval)

    return run


def add_run_command(commands: Subparsers) -> None:
    run = commands.add_parser("run", help="run the node agent: enforce the QoS classes, report NodeMetrics")
    flags.long_running(run)
    run.add_argument("--node-name", required=True, help="the node this agent runs on (downward API spec.nodeName)")
    state = run.add_mutually_exclusive_group()
    flags.add_kubeconfig(
        state,
        help="watch the node's objects, evict and report through this kubeconfig "
        "(default without --node-dir: the in-cluster service account)",
    )
    state.add_argument(
        "--node-dir",
        type=Path,
        metavar="DIR",
        help="read the Node, its NodeSLO and Pods from this directory (no API server)",
    )
    flags.add_context(run)
    flags.add_watch(run)
    add_strategy_flags(run)
    run.add_argument("--dry-run", action="store_true", help="log the cgroup writes and evictions, do none")
    run.add_argument(
        "--only-evict-by-api",
        action="store_true",
        help="count a pod as evicted only when the Eviction API call succeeded (no process kill)",
    )
    run.add_argument("--host", default="0.0.0.0", help="address of /healthz, /readyz, /metrics")
    run.add_argument("--port", type=int, default=9316)
    for flag, default in (
        ("cpu-suppress-interval-seconds", 1.0),
        ("cpu-evict-interval-seconds", 1.0),
        ("cpu-evict-cool-time-seconds", 20.0),
        ("memory-evict-interval-seconds", 1.0),
        ("memory-evict-cool-time-seconds", 4.0),
        ("reconcile-interval-seconds", 1.0),
        ("collect-res-used-interval-seconds", 1.0),
    ):
        dest = flag.removesuffix("-seconds").replace("-", "_").replace("collect_res_used", "collect")
        run.add_argument(f"--{flag}", dest=dest, type=float, default=default, metavar="SECONDS")
    run.set_defaults(func=run_agent)


def run_agent(args: argparse.Namespace) -> int:
    try:
        options = strategy_options(args)
        extensions = default_extensions()
        gates = extensions.gates(args.qos_extension_plugins, plugin_gates())
        if not args.cgroup_root.is_dir():
            raise ConfigError("--cgroup-root", f"{args.cgroup_root}: not a directory")
        detect_version(args.cgroup_root)
        settings = AgentSettings(
            args.node_name,
            args.cgroup_root,
            CgroupDriver(args.cgroup_driver),
            args.dry_run,
            args.only_evict_by_api,
            args.proc_root,
            args.node_dir,
            sys_root=args.sys_root,
            resctrl_root=args.resctrl_root,
            host=args.host,
            port=args.port,
            extension_gates=gates,
            plugin_strategies=tuple(plugin_strategies(gates)),
        )
        api = None
        if args.node_dir is None:
            api = _api(args)
    except (ConfigError, LayoutError) as exc:
        return errors.report(str(exc))
    if args.node_dir is not None and not args.node_dir.is_dir():
        return errors.report(f"--node-dir: {args.node_dir}: not a directory")
    return asyncio.run(serve(settings, options, api, extensions, args))


def _api(args: argparse.Namespace) -> Any:
    from colocate.cluster.client import api_client_or_else

    return api_client_or_else(args.kubeconfig, args.context, instead="--node-dir DIR")


def agent_probes(agent: Agent, host: str, port: int) -> ProbeListeners:
    """GET /healthz (alive), /readyz (200 once the states are synced and the first collection ran),
    /metrics (Prometheus), all on the agent's one address."""
    from colocate.cluster.probes import ProbeListeners, component_answers, readiness_of

    answers = component_answers(readiness_of(agent.ready, "not ready"), agent.registry)
    return ProbeListeners((host, port), (host, port), answers)


async def serve(
    settings: AgentSettings,
    options: StrategyOptions,
    api: Any,
    extensions: ExtensionRegistry,
    args: argparse.Namespace | None = None,
) -> int:
    import signal

    from colocate.cluster.kube import KubeSource
    from colocate.cluster.reflector import ReflectorSettings

    store = ClusterStore(KOORDLET_KINDS + (NODE_METRIC_KIND,))
    agent = Agent(settings, options, store, api, extensions)
    if api is None:
        assert settings.node_dir is not None
        source = directory_source(settings.node_dir, store, settings.reload_interval)
    else:
        reflector = ReflectorSettings(
            watch_timeout=getattr(args, "watch_timeout", 300), backoff_max=getattr(args, "backoff_max", 30.0)
        )
        kube = KubeSource(api, watched_kinds(settings.node_name), store, reflector)
        source = kube.run
    probes = agent_probes(agent, settings.host, settings.port)
    await probes.start()
    log.info(
        "koordlet for node %s: cgroup %s (%s) at %s, serving on %s:%d%s",
        settings.node_name,
        agent.layout.version,
        settings.driver,
        settings.cgroup_root,
        settings.host,
        probes.ports[0],
        " (dry run)" if settings.dry_run else "",
    )
    main = asyncio.create_task(agent.run(source))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, main.cancel)
    try:
        await main
    except asyncio.CancelledError:
        pass
    except TimeoutError:
        log.error("the node's objects were never listed (%ss)", SYNC_TIMEOUT)
        return 1
    finally:
        await probes.stop()
    return 0
