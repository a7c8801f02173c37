"""`/mutate-reservation` and `/validate-reservation` (Koordinator's
`pkg/webhook/reservation/mutating/`)."""

from __future__ import annotations

from pathlib import Path

from tests.support.admission import admit, make_snapshot, patched
from tests.support.builders import make_reservation

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = make_snapshot(fixtures=(FIXTURES / "reservation-profiles.yaml",), priority_classes=False)


def test_matching_profiles_apply_in_name_order_to_metadata_and_the_template():
    reservation = make_reservation(labels={"app": "batch"})
    outcome = admit("/mutate-reservation", reservation, CLUSTER)
    result = patched(reservation, outcome)
    labels = result["metadata"]["labels"]
    assert outcome.matched_profiles == ["a-reservations", "b-reservations"]
    assert labels["from-profile"] == "b"  # the later profile wins
    assert labels["koordinator.sh/qosClass"] == "BE"
    assert labels["koordinator.sh/priority"] == "1111"
    assert labels["mapped-app"] == "batch"
    assert result["metadata"]["annotations"] == {"patched": "yes"}
    template_spec = result["spec"]["template"]["spec"]
    assert template_spec["schedulerName"] == "koord-scheduler"
    assert (template_spec["priorityClassName"], template_spec["priority"], template_spec["preemptionPolicy"]) == (
        "koord-batch",
        5000,
        "PreemptLowerPriority",
    )


def test_no_resource_rewrite_for_reservations():
    reservation = make_reservation(labels={"app": "batch"})
    result = patched(reservation, admit("/mutate-reservation", reservation, CLUSTER))
    assert result["spec"]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}


def test_without_a_template_scheduling_fields_are_not_set():
    reservation = make_reservation(labels={"app": "batch"}, template=False)
    result = patched(reservation, admit("/mutate-reservation", reservation, CLUSTER))
    assert "template" not in result["spec"]
    assert result["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"


def test_a_missing_priority_class_is_a_500_denial():
    cluster = make_snapshot(*[o for o in CLUSTER.list("ClusterColocationProfile")], priority_classes=False)
    outcome = admit("/mutate-reservation", make_reservation(labels={"app": "batch"}), cluster)
    assert (outcome.allowed, outcome.code) == (False, 500)
    assert outcome.message == 'priorityclasses.scheduling.k8s.io "koord-batch" not found'


def test_update_and_unmatched_reservations_are_untouched():
    reservation = make_reservation(labels={"app": "batch"})
    assert admit("/mutate-reservation", reservation, CLUSTER, "UPDATE", reservation).patch == []
    assert admit("/mutate-reservation", make_reservation(labels={"app": "other"}), CLUSTER).patch == []


def test_validate_reservation_admits_well_formed_requests_and_refuses_empty_ones():
    assert admit("/validate-reservation", make_reservation(), CLUSTER).allowed
    outcome = admit("/validate-reservation", None, CLUSTER)
    assert (outcome.allowed, outcome.code) == (False, 400)


GRACE_PROFILE = {
    "apiVersion": "config.koordinator.sh/v1alpha1",
    "kind": "ClusterColocationProfile",
    "metadata": {"name": "grace"},
    "spec": {
        "selector": {"matchLabels": {"app": "batch"}},
        "patch": {"metadata": {"labels": {"patched": "yes"}}, "spec": {"terminationGracePeriodSeconds": 30}},
    },
}


def test_a_patched_field_a_reservation_does_not_have_is_dropped_as_koordinator_and_the_schema_do():
    """Koordinator merges a profile's patch into the Reservation itself and decodes the result into
    its type, dropping `spec.terminationGracePeriodSeconds`; a real API server's CRD schema prunes
    it too. Before, the patch carried it and `colocate apply` showed a change never stored."""
    reservation = make_reservation(labels={"app": "batch"})
    outcome = admit("/mutate-reservation", reservation, make_snapshot(GRACE_PROFILE, priority_classes=False))
    result = patched(reservation, outcome)
    assert result["metadata"]["labels"]["patched"] == "yes"  # the rest of the patch applies
    assert "terminationGracePeriodSeconds" not in result["spec"]
    assert result["spec"]["template"] == reservation["spec"]["template"]


def test_apply_explain_says_the_dropped_field(tmp_path: Path, capsys) -> None:
    import yaml

    from colocate.main import main

    cluster = tmp_path / "cluster"
    cluster.mkdir()
    (cluster / "profile.yaml").write_text(yaml.safe_dump(GRACE_PROFILE))
    (tmp_path / "reservation.yaml").write_text(yaml.safe_dump(make_reservation(labels={"app": "batch"})))
    code = main(["apply", "--cluster", str(cluster), "-f", str(tmp_path / "reservation.yaml"), "--explain"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "note: spec.patch sets spec.terminationGracePeriodSeconds, which the kind does not have" in err
    assert "terminationGracePeriodSeconds" not in out


def test_the_reservation_fields_kept_are_those_the_crd_schema_types() -> None:
    import yaml

    from policies.admission.reservation import RESERVATION_FIELDS, RESERVATION_SPEC_FIELDS
    from tests.support.paths import REPO

    crd = yaml.safe_load((REPO / "manifests" / "crds" / "reservations.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert set(schema["properties"]) == RESERVATION_FIELDS
    assert set(schema["properties"]["spec"]["properties"]) == RESERVATION_SPEC_FIELDS
