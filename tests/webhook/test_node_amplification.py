"""`/mutate-node-status`: resource amplification (Koordinator's `resource_amplification.go`)."""

from __future__ import annotations

import json

import pytest

from tests.support.admission import admit, make_snapshot, patched
from tests.support.builders import make_node

RATIO = "node.koordinator.sh/resource-amplification-ratio"
RAW = "node.koordinator.sh/raw-allocatable"
EMPTY = make_snapshot(priority_classes=False)


def status_update(new: dict, old: dict):
    return admit("/mutate-node-status", new, EMPTY, "UPDATE", old)


def test_first_amplification_keeps_the_raw_allocatable_and_multiplies_cpu():
    old = make_node(allocatable={"cpu": "1", "memory": "1Gi"})
    new = make_node(annotations={RATIO: '{"cpu": 1.5}'}, allocatable={"cpu": "1", "memory": "1Gi"})
    outcome = status_update(new, old)
    result = patched(new, outcome)
    assert result["metadata"]["annotations"][RAW] == '{"cpu":"1","memory":"1Gi"}'
    assert result["status"]["allocatable"] == {"cpu": "1500m", "memory": "1Gi"}


def test_an_integral_result_keeps_the_plain_format():
    new = make_node(annotations={RATIO: '{"cpu": 2, "memory": 1.5}'}, allocatable={"cpu": "1", "memory": "1Gi"})
    result = patched(new, status_update(new, make_node(allocatable={"cpu": "1", "memory": "1Gi"})))
    assert result["status"]["allocatable"]["cpu"] == "2"
    assert result["status"]["allocatable"]["memory"] == "1536Mi"


def test_unchanged_allocatable_reads_the_raw_values_from_the_annotation():
    annotations = {RATIO: '{"cpu": 2}', RAW: '{"cpu":"4"}'}
    old = make_node(annotations=annotations, allocatable={"cpu": "8"})
    new = make_node(annotations=annotations, allocatable={"cpu": "8"})
    result = patched(new, status_update(new, old))
    assert result["status"]["allocatable"]["cpu"] == "8"  # 4 x 2, from the annotation
    assert result["metadata"]["annotations"][RAW] == '{"cpu":"4"}'


def test_a_reported_change_refreshes_the_raw_annotation():
    annotations = {RATIO: '{"cpu": 2}', RAW: '{"cpu":"4"}'}
    old = make_node(annotations=annotations, allocatable={"cpu": "8"})
    new = make_node(annotations=annotations, allocatable={"cpu": "6"})
    result = patched(new, status_update(new, old))
    assert json.loads(result["metadata"]["annotations"][RAW]) == {"cpu": "6"}
    assert result["status"]["allocatable"]["cpu"] == "12"


def test_changes_to_other_resources_do_not_count_as_a_change():
    annotations = {RATIO: '{"cpu": 2}', RAW: '{"cpu":"4"}'}
    old = make_node(annotations=annotations, allocatable={"cpu": "8", "ephemeral-storage": "1Gi"})
    new = make_node(annotations=annotations, allocatable={"cpu": "8", "ephemeral-storage": "2Gi"})
    assert patched(new, status_update(new, old))["metadata"]["annotations"][RAW] == '{"cpu":"4"}'


def test_removing_the_ratio_drops_the_raw_annotation():
    old = make_node(annotations={RATIO: '{"cpu": 2}', RAW: '{"cpu":"4"}'}, allocatable={"cpu": "8"})
    new = make_node(annotations={RAW: '{"cpu":"4"}'}, allocatable={"cpu": "8"})
    outcome = status_update(new, old)
    assert outcome.patch == [{"op": "remove", "path": "/metadata/annotations/node.koordinator.sh~1raw-allocatable"}]


@pytest.mark.parametrize("ratio", ['{"cpu": 1}', '{"cpu": 0.5}', '{"nvidia.com/gpu": 3}'])
def test_ratios_of_one_or_less_and_other_resources_leave_allocatable_alone(ratio):
    new = make_node(annotations={RATIO: ratio}, allocatable={"cpu": "4", "nvidia.com/gpu": "1"})
    result = patched(new, status_update(new, make_node(allocatable={"cpu": "4", "nvidia.com/gpu": "1"})))
    assert result["status"]["allocatable"] == {"cpu": "4", "nvidia.com/gpu": "1"}


def test_create_and_plain_node_requests_pass_untouched():
    new = make_node(annotations={RATIO: '{"cpu": 2}'}, allocatable={"cpu": "4"})
    assert admit("/mutate-node-status", new, EMPTY, "CREATE").patch == []


@pytest.mark.parametrize(
    "ratio, fragment",
    [
        ('{"cpu": "fast"}', 'ratio of cpu must be a number, got "fast"'),
        ("{cpu: 2", "failed to parse annotation node.koordinator.sh/resource-amplification-ratio"),
    ],
)
def test_a_non_numeric_ratio_is_a_clear_denial(ratio, fragment):
    new = make_node(annotations={RATIO: ratio}, allocatable={"cpu": "4"})
    outcome = status_update(new, make_node(allocatable={"cpu": "4"}))
    assert (outcome.allowed, outcome.code) == (False, 500)
    assert fragment in outcome.message


def test_an_unreadable_raw_annotation_is_a_clear_denial():
    annotations = {RATIO: '{"cpu": 2}', RAW: "{not json"}
    new = make_node(annotations=annotations, allocatable={"cpu": "4"})
    outcome = status_update(new, make_node(annotations=annotations, allocatable={"cpu": "4"}))
    assert not outcome.allowed and outcome.code == 500
    assert "failed to parse annotation node.koordinator.sh/raw-allocatable" in outcome.message


@pytest.mark.parametrize(
    "ratio, why",
    [
        ("1e308", "past the largest quantity"),
        ("1e19", "past the largest quantity"),
        ("1" + "0" * 400, "must be a finite number"),
        ("1e400", "must be a finite number"),
    ],
)
def test_an_out_of_range_ratio_is_refused_by_the_status_webhook_and_the_node_validation(ratio, why):
    """Before: 1e308 answered 500 (OverflowError) and 1e19 published allocatable cpu `40E`."""
    annotations = {RATIO: f'{{"cpu": {ratio}}}'}
    new = make_node(annotations=annotations, allocatable={"cpu": "4", "memory": "1Gi"})
    old = make_node(allocatable={"cpu": "4", "memory": "1Gi"})
    outcome = status_update(new, old)
    assert (outcome.allowed, outcome.code) == (False, 400) and why in outcome.message
    validated = admit("/validate-node", new, EMPTY, "UPDATE", old)
    assert not validated.allowed and why in validated.message


def test_a_large_ratio_in_range_still_amplifies():
    new = make_node(annotations={RATIO: '{"cpu": 1000}'}, allocatable={"cpu": "4"})
    result = patched(new, status_update(new, make_node(allocatable={"cpu": "4"})))
    assert result["status"]["allocatable"]["cpu"] == "4k"
    assert admit("/validate-node", new, EMPTY, "UPDATE", make_node(allocatable={"cpu": "4"})).allowed
