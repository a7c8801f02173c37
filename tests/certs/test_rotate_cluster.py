"""`rotate` against the API stand-in: write order, idempotence, the Secret shapes found in the wild."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

from certs.generate import generate_material, service_names
from certs.kube import Cluster
from certs.material import CERT_FILE, fingerprint, parse_certs, pem_certs, pem_key, read_directory, secret_files
from certs.plan import Policy
from certs.rotate import Rotation, Targets, rotate
from tests.certs.conftest import DAY, NOW
from tests.support.apiserver import ApiServer
from tests.support.cluster import webhook_configurations

NAMES = service_names("koordinator-webhook-service", "koordinator-system")
POLICY = Policy(names=NAMES)
WRITES = ("Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def secret(api: ApiServer) -> dict:
    return api.store.get(api.by_kind["Secret"], "koordinator-system", "koordinator-webhook-certs")


def bundles(api: ApiServer) -> set[str]:
    return {w["clientConfig"].get("caBundle", "") for c in webhook_configurations(api) for w in c["webhooks"]}


async def run(targets: Targets, when=NOW, **options) -> Rotation:
    return await asyncio.to_thread(rotate, targets, POLICY, when, **options)


async def test_first_rotation_creates_the_secret_and_fills_every_caBundle(
    api: ApiServer, cluster: Cluster, tmp_path: Path
) -> None:
    rotation = await run(Targets(tmp_path / "certs", cluster))
    assert rotation.secret == "created" and rotation.directory_written
    assert sorted(rotation.patched) == [
        "koordinator-mutating-webhook-configuration",
        "koordinator-validating-webhook-configuration",
    ]
    stored = secret(api)
    assert stored["type"] == "kubernetes.io/tls" and set(stored["data"]) == {"ca.crt", "tls.crt", "tls.key", "ca.key"}
    assert bundles(api) == {stored["data"]["ca.crt"]}
    assert read_directory(tmp_path / "certs").cert == rotation.plan.material.cert


async def test_a_second_rotation_writes_nothing(api: ApiServer, cluster: Cluster, tmp_path: Path) -> None:
    targets = Targets(tmp_path / "certs", cluster)
    await run(targets)
    before = {kind: api.writes(kind) for kind in WRITES}
    version_dir = (tmp_path / "certs" / "..data").readlink()
    rotation = await run(targets, NOW + 30 * DAY)
    assert not rotation.changed and rotation.secret == "unchanged"
    assert {kind: api.writes(kind) for kind in WRITES} == before
    assert (tmp_path / "certs" / "..data").readlink() == version_dir


async def test_a_new_ca_is_trusted_by_both_configurations_before_the_secret_serves_from_it(
    api: ApiServer, cluster: Cluster
) -> None:
    first = await run(Targets(cluster=cluster))
    old_ca = fingerprint(first.plan.material.ca)
    mark = api.store.version
    rotation = await run(Targets(cluster=cluster), force_ca=True)
    new_ca = fingerprint(rotation.plan.material.ca)
    events = [(e.obj["kind"], e.obj) for r, history in api.store.history.items() for e in history if e.version > mark]
    events.sort(key=lambda item: int(item[1]["metadata"]["resourceVersion"]))
    assert [kind for kind, _ in events] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret"]
    for kind, obj in events[:2]:
        trusted = {
            fingerprint(c)
            for w in obj["webhooks"]
            for c in parse_certs(base64.b64decode(w["clientConfig"]["caBundle"]), "caBundle")
        }
        assert trusted == {old_ca, new_ca}, kind
    served = parse_certs(base64.b64decode(events[2][1]["data"][CERT_FILE]), "tls.crt")[0]
    served.verify_directly_issued_by(rotation.plan.material.ca)


async def test_the_old_ca_is_pruned_from_the_caBundle_after_it_expires(api: ApiServer, cluster: Cluster) -> None:
    await run(Targets(cluster=cluster))
    rotation = await run(Targets(cluster=cluster), NOW + 2 * 365 * DAY, force_ca=True)
    assert len(rotation.plan.material.ca_certs) == 2
    old_expiry = rotation.plan.material.ca_certs[1].not_valid_after_utc
    pruned = await run(Targets(cluster=cluster), old_expiry + DAY)
    assert not pruned.plan.renews and len(pruned.patched) == 2 and pruned.secret == "updated"
    assert bundles(api) == {base64.b64encode(pem_certs([rotation.plan.material.ca])).decode()}


async def test_an_opaque_secret_from_koord_manager_is_replaced_and_its_ca_kept(
    api: ApiServer, cluster: Cluster
) -> None:
    koord = generate_material(NAMES, NOW)
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": "koordinator-webhook-certs", "namespace": "koordinator-system"},
            "data": {
                key: base64.b64encode(value).decode()
                for key, value in {
                    "ca-cert.pem": pem_certs([koord.ca]),
                    "ca-key.pem": pem_key(koord.ca_key),
                    "cert.pem": pem_certs([koord.cert]),
                    "key.pem": pem_key(koord.key),
                    "tls.crt": pem_certs([koord.cert]),
                    "tls.key": pem_key(koord.key),
                }.items()
            },
        }
    )
    rotation = await run(Targets(cluster=cluster))
    assert rotation.secret == "replaced" and not rotation.plan.renews
    stored = secret(api)
    assert stored["type"] == "kubernetes.io/tls"
    assert secret_files(stored)[CERT_FILE] == pem_certs([koord.cert])
    assert api.requests["DELETE get Secret"] == 1
    assert (await run(Targets(cluster=cluster))).secret == "unchanged"


async def test_a_secret_with_garbage_is_regenerated(api: ApiServer, cluster: Cluster) -> None:
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": "koordinator-webhook-certs", "namespace": "koordinator-system"},
            "data": {"tls.crt": base64.b64encode(b"not a cert").decode(), "tls.key": "", "ca.crt": ""},
        }
    )
    rotation = await run(Targets(cluster=cluster))
    assert rotation.plan.new_ca and rotation.secret == "updated"
    assert "unusable" in rotation.notes[0]
