"""`certs rotate`: renew what `plan_rotation` says, writing in the one order that never breaks TLS.

1. The caBundle of both webhook configurations is made to trust the new bundle (new CA first, old
   CAs that have not expired after it). The API server trusts both CAs from then on.
2. Only then (after `settle` seconds for the API servers to see it, when the CA changed) is the
   new serving certificate stored: in the Secret (which kubelet projects into the pods) and/or the
   certificate directory (which `serve` watches and reloads without restart).
Written in the other order, there is a window in which servers present a certificate no client
trusts, and every admission fails. Each step writes nothing when nothing would change.
"""

from __future__ import annotations

import base64
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

from certs.kube import Cluster
from certs.material import (
    Material,
    MaterialError,
    from_files,
    parse_certs,
    pem_certs,
    read_directory,
    secret_files,
    write_directory,
)
from certs.plan import Plan, Policy, plan_rotation


@dataclass(frozen=True)
class Targets:
    directory: Path | None = None
    cluster: Cluster | None = None  # the Secret and the webhook configurations

    def __post_init__(self) -> None:
        if self.directory is None and self.cluster is None:
            raise ValueError("nothing to rotate: give a certificate directory, a Secret, or both")


@dataclass(frozen=True)
class Rotation:
    plan: Plan
    patched: tuple[str, ...]  # webhook configurations whose caBundle was written
    secret: str  # "unchanged", "created", "updated", "replaced" or "" (no Secret target)
    directory_written: bool
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.patched) or self.secret not in ("", "unchanged") or self.directory_written


def load_current(targets: Targets, secret: dict[str, Any] | None) -> tuple[Material | None, str | None]:
    """The stored material (the Secret wins over the directory), or None and why it is unusable."""
    try:
        if targets.cluster is not None and secret is not None:
            source = f"Secret {targets.cluster.namespace}/{targets.cluster.secret}"
            return from_files(secret_files(secret), source), None
        if targets.directory is not None and targets.directory.exists():
            return read_directory(targets.directory), None
    except MaterialError as exc:
        return None, f"stored certificates unusable, starting over: {exc}"
    return None, None


def bundle_cas(configurations: list[dict[str, Any]]) -> list[x509.Certificate]:
    """Every CA certificate the webhooks trust today (unreadable bundles are ignored: they get replaced)."""
    found: list[x509.Certificate] = []
    for configuration in configurations:
        for webhook in configuration.get("webhooks") or ():
            bundle = (webhook.get("clientConfig") or {}).get("caBundle")
            if bundle:
                try:
                    found.extend(parse_certs(base64.b64decode(bundle), "caBundle"))
                except (MaterialError, ValueError):
                    continue
    return found


def rotate(
    targets: Targets,
    policy: Policy,
    now: dt.datetime,
    *,
    force: bool = False,
    force_ca: bool = False,
    settle: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Rotation:
    cluster = targets.cluster
    secret = cluster.read_secret() if cluster is not None else None
    current, note = load_current(targets, secret)
    trusted = bundle_cas(cluster.webhook_configurations()) if cluster is not None else []
    plan = plan_rotation(current, policy, now, also_trusted=trusted, force=force, force_ca=force_ca)
    patched = tuple(cluster.patch_ca_bundles(pem_certs(plan.material.ca_certs))) if cluster is not None else ()
    if patched and plan.new_ca and settle > 0:
        sleep(settle)
    written = cluster.write_secret(plan.material, secret) if cluster is not None else ""
    directory_written = write_directory(targets.directory, plan.material) if targets.directory is not None else False
    return Rotation(plan, patched, written, directory_written, notes=(note,) if note else ())
