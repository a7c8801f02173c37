"""`colocate certs generate|inspect|rotate`: argument parsing and printing; the work is elsewhere.

Targets: a certificate directory (`--cert-dir`), the cluster (`--kubeconfig`/`--context`, or
`--in-cluster`: the Secret `--cert-namespace/--cert-secret` and both webhook configurations), or both.
Exit codes: 0 ok, 1 a check failed (inspect) or the API refused a write, 2 bad input.

The names of the webhook in the cluster (`add_service_names`) are spelled the same here and in
`colocate serve --self-managed-certs`; the older `--namespace`, `--service`, `--secret-name` and
`rotate --settle` still work as hidden aliases.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from certs.generate import DEFAULT_VALIDITY, KEY_TYPES, generate_material, service_names, utcnow
from certs.material import MaterialError, from_files, read_directory, secret_files, write_directory
from certs.names import NAMESPACE, SECRET, SERVICE
from certs.plan import CA_RENEW_BEFORE, SERVING_RENEW_BEFORE, Policy
from colocate.cli import flags
from colocate.cli.errors import UsageError
from colocate.cli.output import add_output
from colocate.cli.parser import Container, Subparsers, add_command_group
from colocate.cluster.client import api_errors

if TYPE_CHECKING:
    from certs.kube import Cluster


def _days(value: str) -> dt.timedelta:
    try:
        days = float(value)
    except ValueError:
        days = 0
    if not 0 < days < 1e6:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of days")
    return dt.timedelta(days=days)


def _when(value: str) -> dt.datetime:
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO 8601 time (2027-01-31, 2027-01-31T12:00:00Z)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _talks_to_the_cluster(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """An unreachable or refusing API server is one line and exit 2, not a traceback."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        with api_errors(f"certs {args.certs_command}"):
            return command(args)

    return run


def _not_a_package(directory: Path) -> None:
    """A CA key written into a Python package (`--cert-dir certs` in a colocate checkout is colocate's
    own `certs/`) ends up in wheels and commits: refuse."""
    if (directory / "__init__.py").exists():
        raise UsageError(
            f"--cert-dir {directory} is a Python package, not a place for private keys: "
            "use a directory outside the source tree (or certs-local/, which git ignores)"
        )


def _cluster(args: argparse.Namespace) -> Cluster | None:
    if args.kubeconfig is None and not args.in_cluster:
        return None  # before the imports: the API client is not paid for by offline commands
    from certs.kube import Cluster
    from colocate.cluster.client import api_client

    return Cluster(api_client(args.kubeconfig, args.context), namespace=args.cert_namespace, secret=args.cert_secret)


def _policy(args: argparse.Namespace) -> Policy:
    """The rotation policy the flags give; a validity within the renewal window names the flags
    involved (`certs generate` has no --renew-before: it says what the window is)."""
    for validity, window, default, renew_flag in (
        ("--validity", "renew_before", SERVING_RENEW_BEFORE, "--renew-before"),
        ("--ca-validity", "ca_renew_before", CA_RENEW_BEFORE, "--ca-renew-before"),
    ):
        days = getattr(args, validity[2:].replace("-", "_")).days
        renew = getattr(args, window, None)
        if renew is not None and days <= renew.days:
            raise UsageError(f"{validity} {days}d: must exceed {renew_flag} ({renew.days}d), or every run renews")
        if renew is None and days <= default.days:
            raise UsageError(
                f"{validity} {days}d: must exceed {default.days}d, the time before expiry at which "
                "`certs rotate` and `serve --self-managed-certs` renew, or every run renews"
            )
    try:
        return _new_policy(args)
    except ValueError as exc:  # the checks above are the policy's own: this is a safety net
        raise UsageError(str(exc)) from exc


def _new_policy(args: argparse.Namespace) -> Policy:
    return Policy(
        names=service_names(args.cert_service, args.cert_namespace, args.dns_name),
        validity=args.validity,
        ca_validity=args.ca_validity,
        key_type=args.key_type,
        renew_before=getattr(args, "renew_before", SERVING_RENEW_BEFORE),
        ca_renew_before=getattr(args, "ca_renew_before", CA_RENEW_BEFORE),
    )


def _generate(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    if args.cert_dir is None and cluster is None:
        raise UsageError("give --cert-dir DIR and/or a cluster (--kubeconfig FILE or --in-cluster)")
    material = generate_material(
        list(_policy(args).names),
        utcnow(),
        ca_validity=args.ca_validity,
        validity=args.validity,
        key_type=args.key_type,
    )
    if args.cert_dir is not None:
        _not_a_package(args.cert_dir)
        if (args.cert_dir / "tls.crt").exists() and not args.force:
            raise UsageError(
                f"{args.cert_dir} already holds certificates; `certs rotate` renews them without "
                "breaking clients (or --force to overwrite)"
            )
        write_directory(args.cert_dir, material)
        print(f"wrote {args.cert_dir}/ca.crt, tls.crt, tls.key, ca.key")
    if cluster is not None:
        existing = cluster.read_secret()
        if existing is not None and not args.force:
            raise UsageError(f"Secret {cluster.namespace}/{cluster.secret} exists; use `certs rotate` (or --force)")
        print(f"Secret {cluster.namespace}/{cluster.secret}: {cluster.write_secret(material, existing)}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from certs.inspect import inspect

    cluster = _cluster(args)
    try:
        if cluster is not None and (secret := cluster.read_secret()) is not None:
            material = from_files(secret_files(secret), f"Secret {cluster.namespace}/{cluster.secret}")
        elif args.cert_dir is not None:
            material = read_directory(args.cert_dir)
        else:
            raise UsageError("nothing to inspect: give --cert-dir DIR or a cluster holding the Secret")
    except MaterialError as exc:
        raise UsageError(str(exc)) from exc
    report = inspect(
        material,
        args.at or utcnow(),
        name=f"{args.cert_service}.{args.cert_namespace}.svc",
        required_names=service_names(args.cert_service, args.cert_namespace, args.dns_name),
        configurations=cluster.webhook_configurations() if cluster is not None else (),
        threshold_days=args.threshold_days,
    )
    print(report.to_json() if args.output == "json" else report.to_text())
    return 0 if report.ok else 1


def _rotate(args: argparse.Namespace) -> int:
    from certs.rotate import Targets, rotate

    try:
        if args.cert_dir is not None:
            _not_a_package(args.cert_dir)
        targets, policy = Targets(args.cert_dir, _cluster(args)), _policy(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    rotation = rotate(
        targets, policy, args.at or utcnow(), force=args.force, force_ca=args.force_ca, settle=args.cert_settle
    )
    for note in rotation.notes:
        print(f"note: {note}")
    for reason in rotation.plan.reasons:
        print(reason)
    print(f"trust bundle: {len(rotation.plan.material.ca_certs)} CA(s)")
    print(f"caBundle patched: {', '.join(rotation.patched) or 'none'}")
    if rotation.secret:
        print(f"Secret: {rotation.secret}")
    if targets.directory is not None:
        print(f"{targets.directory}: {'written' if rotation.directory_written else 'unchanged'}")
    if not rotation.changed:
        print("nothing to do: certificates are valid and trusted")
    return 0


def add_service_names(container: Container, *, old_spellings: bool = False) -> None:
    """Where the webhook's certificate lives in the cluster: `serve` and `certs` spell these alike."""
    namespace = container.add_argument(
        "--cert-namespace",
        default=NAMESPACE,
        metavar="NS",
        help=f"namespace of the webhook Service, its Secret and Lease ({NAMESPACE})",
    )
    service = container.add_argument(
        "--cert-service",
        default=SERVICE,
        metavar="NAME",
        help=f"the webhook Service, whose names the certificate carries ({SERVICE})",
    )
    secret = container.add_argument(
        "--cert-secret",
        default=SECRET,
        metavar="NAME",
        help=f"the kubernetes.io/tls Secret holding the certificates ({SECRET})",
    )
    if old_spellings:
        flags.add_alias(container, "--namespace", of=namespace)
        flags.add_alias(container, "--service", of=service)
        flags.add_alias(container, "--secret-name", of=secret)


def _common(parser: argparse.ArgumentParser, *, cert_options: bool = True) -> None:
    flags.add_cert_dir(parser, help="directory with ca.crt, tls.crt, tls.key, ca.key")
    flags.add_kubeconfig(parser, help="use the cluster through this kubeconfig")
    flags.add_context(parser)
    parser.add_argument("--in-cluster", action="store_true", help="use the cluster through the pod's service account")
    add_service_names(parser, old_spellings=True)
    flags.add_dns_names(parser)
    if cert_options:
        parser.add_argument(
            "--validity",
            type=_days,
            default=DEFAULT_VALIDITY,
            metavar="DAYS",
            help="of the serving certificate (default 3650)",
        )
        parser.add_argument(
            "--ca-validity", type=_days, default=DEFAULT_VALIDITY, metavar="DAYS", help="of the CA (default 3650)"
        )
        parser.add_argument("--key-type", choices=KEY_TYPES, default="rsa2048")


def register_commands(subparsers: Subparsers) -> None:
    commands = add_command_group(subparsers, "certs", help="generate, inspect and rotate the webhook certificates")
    _generate_flags(
        commands.add_parser(
            "generate",
            help="a new CA and serving certificate for the Service",
            description="Write a new CA and serving certificate to a directory and/or a "
            "kubernetes.io/tls Secret. Refuses to overwrite without --force.",
        )
    )
    _inspect_flags(
        commands.add_parser(
            "inspect",
            help="show the certificates and check chain, expiry and caBundle",
            description="Exit 0 when everything verifies, 1 when a check fails "
            "(including expiry within --threshold-days), 2 on bad input.",
        )
    )
    _rotate_flags(
        commands.add_parser(
            "rotate",
            help="renew what is due; caBundle first, then the serving certificate",
            description="Renew the serving certificate when it fails Koordinator's rules "
            "(6 months left, wrong names, broken chain) and the CA when it has "
            "under a year; trust the new CA in both webhook configurations "
            "before serving from it; prune expired CAs. Writes nothing when "
            "nothing is due.",
        )
    )


def _generate_flags(generate: argparse.ArgumentParser) -> None:
    _common(generate)
    generate.add_argument("--force", action="store_true", help="overwrite existing certificates")
    generate.set_defaults(func=_talks_to_the_cluster(_generate))


def _inspect_flags(inspect: argparse.ArgumentParser) -> None:
    _common(inspect, cert_options=False)
    inspect.add_argument(
        "--threshold-days",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="fail when a certificate expires within this many days (default 30)",
    )
    inspect.add_argument("--at", type=_when, metavar="TIME", help="check as of this ISO time instead of now")
    add_output(inspect, ("text", "json"), default="text")
    inspect.set_defaults(func=_talks_to_the_cluster(_inspect))


def _rotate_flags(rotate_: argparse.ArgumentParser) -> None:
    _common(rotate_)
    rotate_.add_argument("--force", action="store_true", help="renew the serving certificate even if not due")
    rotate_.add_argument(
        "--force-ca", action="store_true", help="renew the CA (and serving certificate) even if not due"
    )
    rotate_.add_argument(
        "--renew-before",
        type=_days,
        default=SERVING_RENEW_BEFORE,
        metavar="DAYS",
        help="renew the serving certificate this long before it expires (default 182)",
    )
    rotate_.add_argument(
        "--ca-renew-before",
        type=_days,
        default=CA_RENEW_BEFORE,
        metavar="DAYS",
        help="renew the CA this long before it expires (default 365)",
    )
    settle = flags.add_seconds(
        rotate_, "--cert-settle", 5.0, "after a new CA is trusted, wait this long before serving from it (default 5)"
    )
    flags.add_alias(rotate_, "--settle", of=settle)
    rotate_.add_argument("--at", type=_when, metavar="TIME", help="decide as of this ISO time instead of now")
    rotate_.set_defaults(func=_talks_to_the_cluster(_rotate))
