"""The CRDs the scheduler reads are shipped, and agree with the one kind table (policies/apis/kinds.py)."""

import pytest
import yaml

from colocate.cluster.files import read_manifest_file
from policies.apis.kinds import kind_named
from tests.support.paths import REPO

CRDS = REPO / "manifests" / "crds"


@pytest.mark.parametrize(
    "kind, file",
    [
        ("Reservation", "reservations.yaml"),
        ("PodGroup", "podgroups.yaml"),
        ("PodMigrationJob", "podmigrationjobs.yaml"),
    ],
)
def test_the_crd_matches_the_kind_table_and_is_in_the_kustomization(kind, file):
    (crd,) = read_manifest_file(CRDS / file)
    row = kind_named(kind)
    assert crd["spec"]["group"] == row.group
    assert crd["spec"]["names"]["kind"] == kind and crd["spec"]["names"]["plural"] == row.plural
    assert crd["spec"]["scope"] == ("Namespaced" if row.namespaced else "Cluster")
    assert [v["name"] for v in crd["spec"]["versions"]] == [row.version]
    assert crd["metadata"]["name"] == f"{row.plural}.{row.group}"
    assert file in yaml.safe_load((CRDS / "kustomization.yaml").read_text())["resources"]


@pytest.mark.parametrize("file", ["reservations.yaml", "podgroups.yaml", "podmigrationjobs.yaml"])
def test_the_crd_validates_against_the_kubernetes_schema(file):
    import kubernetes_validate

    (crd,) = read_manifest_file(CRDS / file)
    kubernetes_validate.validate(crd, "1.30", strict=True)
