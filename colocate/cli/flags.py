"""The flags several commands share, each defined once so that one thing has one name everywhere.

| flag                           | meaning                                                          |
|--------------------------------|------------------------------------------------------------------|
| `--cluster DIR`                | a directory of cluster objects (YAML/JSON, searched recursively) |
| `--kubeconfig FILE`            | reach the API server through this kubeconfig                     |
| `--context NAME`               | the kubeconfig context (default: its current context)            |
| `--watch-timeout/--backoff-max`| how a long-running command lists and watches the API server      |
| `--cert-dir DIR`               | a directory of ca.crt, tls.crt, tls.key (and ca.key)             |
| `--dns-name NAME`              | an extra name of the serving certificate (repeatable)            |
| `--log-level LEVEL`            | global: debug, info, warning, error                              |

A renamed flag keeps its old spelling as a hidden alias (`add_alias`): it still works, is not in
`--help`, and the edge logs one deprecation warning naming the new spelling.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colocate.cli.jsonlog import LOG_LEVELS
from colocate.cli.parser import Container

#: the `argparse.Namespace` attribute collecting "--old is deprecated" notes for the edge to log
DEPRECATED = "deprecated_flags"
#: the log level of a command that runs once and exits: only what went wrong
ONE_SHOT_LOG_LEVEL = "warning"
#: the log level of a server: also what it is doing
LONG_RUNNING_LOG_LEVEL = "info"
_DEFAULT_LOG_LEVEL = "default_log_level"


class _DeprecatedAlias(argparse.Action):
    """Stores like the flag it stands for and notes that the old spelling was used."""

    def __init__(self, option_strings: Sequence[str], dest: str, replacement: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        notes = [*getattr(namespace, DEPRECATED, ()), f"{option_string} is deprecated: use {self.replacement}"]
        setattr(namespace, DEPRECATED, notes)


def bind_address(text: str) -> tuple[str, int]:
    """`host:port` as controller-runtime's bind-address flags take it: an empty host is every
    address, an IPv6 host is in brackets (`[::1]:8080`)."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


def add_alias(container: Container, alias: str, of: argparse.Action) -> None:
    """Accept `alias` as a hidden, deprecated spelling of the (value-taking) flag `of`."""
    typed: dict[str, Any] = {"type": of.type} if of.type is not None else {}
    container.add_argument(
        alias,
        action=_DeprecatedAlias,
        dest=of.dest,
        replacement=of.option_strings[-1],
        choices=of.choices,
        metavar=of.metavar,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        **typed,
    )


def deprecations(args: argparse.Namespace) -> list[str]:
    """The deprecation notes of this command line, for the edge to log."""
    return list(getattr(args, DEPRECATED, ()))


def add_cluster_dir(container: Container, *, required: bool = False, reads: str = "") -> argparse.Action:
    """`--cluster DIR`: a directory of cluster objects; `reads` says what this command uses of it."""
    detail = f": {reads}" if reads else ""
    return container.add_argument(
        "--cluster",
        type=Path,
        metavar="DIR",
        required=required,
        help=f"directory of cluster objects (YAML/JSON, searched recursively){detail}",
    )


def add_refuse_sensitive_patches(parser: argparse.ArgumentParser) -> argparse.Action:
    """`--refuse-sensitive-patches`: the opt-in guard of profiles whose patch changes security-
    sensitive pod fields (policies/admission/patch_risks.py); off by default, as in Koordinator."""
    return parser.add_argument(
        "--refuse-sensitive-patches",
        action="store_true",
        help="refuse ClusterColocationProfiles whose patch sets security-sensitive pod fields (privileged, "
        "hostPath, hostNetwork, serviceAccountName, nodeName, namespace, ...) unless annotated "
        "colocate.io/sensitive-patch: allow",
    )


def add_kubeconfig(container: Container, *, help: str) -> argparse.Action:
    """`--kubeconfig FILE`; `help` says what the command does through it and what it does without it."""
    return container.add_argument("--kubeconfig", type=Path, metavar="FILE", help=help)


def add_context(container: Container) -> argparse.Action:
    return container.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current context)")


def add_cluster_source(
    parser: argparse.ArgumentParser, *, reads: str, through: str, required: bool = False, alias: str = ""
) -> argparse.Action:
    """Where a command reads the cluster: `--cluster DIR` or `--kubeconfig FILE` (never both; one of
    them when `required`, else the in-cluster service account is the default), and `--context`.
    `reads` says what it uses of a directory, `through` what it does through a kubeconfig; `alias`
    is a deprecated spelling of `--cluster`. The `--cluster` action is returned."""
    state = parser.add_mutually_exclusive_group(required=required)
    cluster = add_cluster_dir(state, reads=reads)
    if alias:
        add_alias(state, alias, of=cluster)
    add_kubeconfig(state, help=through)
    add_context(parser)
    return cluster


def add_seconds(container: Container, flag: str, default: float, help: str) -> argparse.Action:
    """A length of time in seconds (a float, so a fraction is fine), with its default."""
    return container.add_argument(flag, type=float, default=default, metavar="SECONDS", help=help)


def add_watch(container: Container) -> None:
    """`--watch-timeout`, `--backoff-max`: how a long-running command follows the API server."""
    container.add_argument(
        "--watch-timeout",
        type=int,
        default=300,
        metavar="SECONDS",
        help="how long one watch request stays open before it is renewed",
    )
    add_seconds(container, "--backoff-max", 30.0, "longest wait between retries when the API server fails")


def add_cert_dir(container: Container, *, required: bool = False, help: str) -> argparse.Action:
    return container.add_argument("--cert-dir", type=Path, metavar="DIR", required=required, help=help)


def add_dns_names(container: Container) -> argparse.Action:
    return container.add_argument(
        "--dns-name",
        action="append",
        default=[],
        metavar="NAME",
        help="extra name (SAN) of the serving certificate (repeatable)",
    )


def add_progress(container: Container) -> argparse.Action:
    """`--progress`/`--no-progress`: a bar on stderr for long work; by default only on a terminal."""
    return container.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )


def add_log_level(container: Container, *, hidden: bool = False) -> argparse.Action:
    """The global `--log-level`; `hidden` keeps an old per-command spelling working without listing it."""
    return container.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        default=argparse.SUPPRESS if hidden else None,
        help=argparse.SUPPRESS
        if hidden
        else f"{'|'.join(LOG_LEVELS)} (default: {LONG_RUNNING_LOG_LEVEL} for servers, {ONE_SHOT_LOG_LEVEL} otherwise)",
    )


def long_running(parser: argparse.ArgumentParser) -> None:
    """Mark a command as a server: it logs at `LONG_RUNNING_LOG_LEVEL` unless `--log-level` says otherwise."""
    parser.set_defaults(**{_DEFAULT_LOG_LEVEL: LONG_RUNNING_LOG_LEVEL})


def log_level(args: argparse.Namespace) -> str:
    """The level this command line asks for: `--log-level`, else the command's default."""
    chosen = getattr(args, "log_level", None) or getattr(args, _DEFAULT_LOG_LEVEL, ONE_SHOT_LOG_LEVEL)
    return str(chosen)
