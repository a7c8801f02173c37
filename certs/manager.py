"""Self-managed certificates (`serve --self-managed-certs`): the leader rotates before expiry.

Every replica runs `manage_certificates`; the one holding the Lease runs `rotate` against the
Secret and the webhook configurations every `check_interval`, which writes nothing until a rule of
`plan_rotation` fails. The others keep trying for the lease; all of them pick the new files up
through their mounted Secret and the TLS reloader. Blocking API calls run in a thread, and every
failure is logged and retried: serving never depends on this loop.

In a cluster the first replicas start before any certificate exists: `wait_for_projection` runs the
same loop (its leader creates the Secret, after putting the CA in both caBundles) until the kubelet
has projected the Secret into the certificate directory. A replica never makes up a CA of its own
there: no webhook configuration would trust it, and the directory is a read-only Secret volume.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass

from kubernetes import client

from certs.generate import service_names, utcnow
from certs.kube import Cluster
from certs.material import CertPaths
from certs.names import NAMESPACE, SECRET, SERVICE
from certs.plan import Policy
from certs.rotate import Rotation, Targets, rotate
from colocate.cluster.leader import LeaseElector

log = logging.getLogger("colocate.certs")
LEASE_NAME = "colocate-webhook-certs"  # the Lease the replicas of one webhook elect a rotator with


@dataclass(frozen=True)
class ManagerSettings:
    namespace: str = NAMESPACE  # of the Service, the Secret and the Lease
    service: str = SERVICE
    secret: str = SECRET
    dns_names: tuple[str, ...] = ()
    lease_duration: float = 15.0  # seconds a silent leader keeps the lease
    renew_interval: float = 5.0  # how often the lease is renewed (well under its duration)
    check_interval: float = 60.0  # how often the leader checks whether rotation is due
    settle: float = 5.0  # seconds between trusting a new CA and serving from it


def self_management(
    api: client.ApiClient, settings: ManagerSettings, identity: str, clock: Callable[[], dt.datetime] = utcnow
) -> Coroutine[None, None, None]:
    """The loop `serve --self-managed-certs` runs next to the server."""
    elector = LeaseElector(
        api,
        settings.namespace,
        identity,
        name=LEASE_NAME,
        duration=dt.timedelta(seconds=settings.lease_duration),
        clock=clock,
    )
    targets = Targets(cluster=Cluster(api, namespace=settings.namespace, secret=settings.secret))
    policy = Policy(names=service_names(settings.service, settings.namespace, settings.dns_names))
    return manage_certificates(elector, targets, policy, settings, clock)


async def wait_for_projection(
    paths: CertPaths, management: Coroutine[None, None, None], settings: ManagerSettings, interval: float = 1.0
) -> None:
    """Run `management` until `paths` holds a complete certificate (the kubelet projects the Secret on
    its own sync period, up to a minute or so after the leader wrote it), then stop it."""
    task = asyncio.create_task(management)
    log.info(
        "no certificate in %s yet: waiting for the leader to create Secret %s/%s and for its projection",
        paths.directory,
        settings.namespace,
        settings.secret,
    )
    try:
        while not paths.complete():
            if task.done():
                task.result()  # raise what stopped it
                raise RuntimeError("certificate management stopped before any certificate was projected")
            await asyncio.sleep(interval)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    log.info("certificate projected into %s", paths.directory)


async def manage_certificates(
    elector: LeaseElector,
    targets: Targets,
    policy: Policy,
    settings: ManagerSettings = ManagerSettings(),
    clock: Callable[[], dt.datetime] = utcnow,
    on_rotation: Callable[[Rotation], None] | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    next_check = 0.0
    leader = False
    while True:
        try:
            now_leader = await asyncio.to_thread(elector.try_acquire_or_renew)
            if now_leader != leader:
                log.info("certificate rotation: %s leadership (%s)", "took" if now_leader else "lost", elector.identity)
                leader, next_check = now_leader, 0.0
            if leader and loop.time() >= next_check:
                next_check = loop.time() + settings.check_interval
                rotation = await asyncio.to_thread(rotate, targets, policy, clock(), settle=settings.settle)
                if rotation.changed:
                    log.info(
                        "rotated certificates: %s; caBundle patched on %s; Secret %s",
                        "; ".join(rotation.plan.reasons) or "trust bundle pruned",
                        ", ".join(rotation.patched) or "none",
                        rotation.secret or "-",
                    )
                if on_rotation is not None:
                    on_rotation(rotation)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - keep serving; try again next round
            log.warning("certificate management failed, retrying: %s: %s", type(exc).__name__, exc)
        await asyncio.sleep(settings.renew_interval)
