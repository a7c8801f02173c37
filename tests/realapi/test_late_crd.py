"""An optional CRD installed after `colocate serve` started (kube-apiserver v1.20.2).

An operator who does not use elastic quotas has no ElasticQuota CRD; the webhook must still become
ready and admit pods. When the CRD is installed later, the quota webhook must pick the kind up by
itself, without a restart: the first quota tree after it is checked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from colocate.cluster.rest import ApiError, request
from colocate.testing.builders import make_quota
from tests.realapi.objects import LARGE, MEDIUM, pod, serve_from_api, tier_ls
from tests.support.paths import REPO
from tests.support.realapi import RealApi
from tests.support.served import Served
from tests.support.wait import wait_for_sync

pytestmark = pytest.mark.realapi

CRDS = REPO / "manifests" / "crds"
QUOTA_CRD = "elasticquotas.scheduling.sigs.k8s.io"


def remove_quota_crd(realapi: RealApi) -> None:
    """No ElasticQuota CRD, and the kind no longer served (an earlier test may have installed it)."""
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{QUOTA_CRD}"
    request(realapi.client, "DELETE", path)
    wait_for_sync(
        lambda: request(realapi.client, "GET", path)[0] == 404,
        timeout=60,
        interval=0.1,
        message=f"{QUOTA_CRD} to be deleted",
    )


@pytest.fixture
def served_without_quotas(realapi: RealApi, tmp_path: Path) -> Iterator[Served]:
    realapi.require_local("delete the ElasticQuota CRD, and every quota with it")
    for name in ("clustercolocationprofiles.yaml", "reservations.yaml", "nodemetrics.yaml"):
        realapi.apply_file(CRDS / name)
    realapi.wait_crds_established(
        ["clustercolocationprofiles.config.koordinator.sh", "reservations.scheduling.koordinator.sh"]
    )
    realapi.apply_file(REPO / "manifests" / "cluster" / "priorityclasses.yaml")
    realapi.apply_file(REPO / "manifests" / "cluster" / "profiles.yaml")
    remove_quota_crd(realapi)
    served = serve_from_api(realapi, tmp_path)  # ready without the CRD
    registered: list[tuple[str, str]] = []
    try:
        url = f"https://127.0.0.1:{served.port}"
        registered = realapi.register_colocate_webhooks(url, (served.certs / "ca.crt").read_bytes())
        yield served
    finally:
        for kind, name in registered:
            realapi.delete("admissionregistration.k8s.io/v1", kind, name)
        served.stop()


def test_quotas_are_checked_once_their_crd_is_installed_after_serve_started(
    realapi: RealApi, realapi_namespace: str, served_without_quotas: Served
) -> None:
    admitted = realapi.apply([pod("before-the-crd", tier_ls())], realapi_namespace)[0]
    assert admitted["metadata"]["labels"]["koordinator.sh/qosClass"] == "LS"  # pods go on meanwhile

    realapi.apply_file(CRDS / "elasticquotas.yaml")
    realapi.wait_crds_established([QUOTA_CRD])
    installed = time.monotonic()
    # quota names are one tree across namespaces: these are named for this test alone
    parent = make_quota("late-parent", realapi_namespace, is_parent=True, tree_id="late", min=MEDIUM, max=LARGE)
    realapi.apply([parent])
    over = make_quota(
        "late-over", realapi_namespace, parent="late-parent", min={"cpu": "15", "memory": "1Gi"}, max=LARGE
    )

    def refused() -> str:
        try:
            realapi.apply([over], dry_run=True)  # the webhooks run; nothing is stored
        except ApiError as exc:
            return str(exc)
        return ""

    message = wait_for_sync(refused, timeout=60, interval=0.2, message="the quota webhook to check the new kind")
    picked_up = time.monotonic() - installed

    assert "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: late-parent" in message
    assert picked_up < 35, f"the quota webhook took {picked_up:.1f}s to act on the new CRD"
