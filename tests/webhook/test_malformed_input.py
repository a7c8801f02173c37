"""Bad requests get a clear error, never a crash or a bare 500, and the server keeps serving."""

import json
import logging

import pytest

from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_pod


async def assert_still_serving(server):
    response = await server.post("/mutate-pod", admission_review(make_pod()))
    assert response.status == 200 and (await response.json())["response"]["allowed"] is True


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "no request"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"operation": "CREATE"}}',
            "no uid",
        ),
        (b"", "not valid JSON"),
        (b"\xff\xfe\x00", "not valid JSON"),
    ],
)
async def test_unreadable_reviews_get_http_400_with_a_message(server, data, fragment):
    server.publish(make_snapshot())
    response = await server.post("/mutate-pod", data=data)
    assert response.status == 400
    assert fragment in (await response.json())["error"]
    await assert_still_serving(server)


def with_request(**changes):
    body = admission_review(make_pod(), uid="known-uid")
    body.update({k: v for k, v in changes.items() if k in ("apiVersion", "kind")})
    body["request"].update({k: v for k, v in changes.items() if k not in ("apiVersion", "kind")})
    return body


@pytest.mark.parametrize(
    "body, fragment",
    [
        (with_request(kind="ConfigMap"), "expected kind AdmissionReview"),
        (with_request(apiVersion="admission.k8s.io/v2"), "unsupported AdmissionReview apiVersion"),
        (with_request(object=None), "there is no content to decode"),
        (with_request(object={}), "there is no content to decode"),
        (with_request(object=[1]), "request.object must be a JSON object"),
        (with_request(operation=""), "no operation"),
        (
            with_request(object={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}),
            "admits Pod objects, got kind 'Node'",
        ),
        (with_request(operation="UPDATE", oldObject=None), "oldObject"),
    ],
)
@pytest.mark.parametrize("path", ["/mutate-pod", "/validate-pod"])
async def test_reviews_with_a_uid_get_an_admission_review_denial(server, body, fragment, path):
    server.publish(make_snapshot())
    response = await server.post(path, body)
    assert response.status == 200
    answer = (await response.json())["response"]
    assert answer["uid"] == "known-uid" and answer["allowed"] is False
    assert answer["status"]["code"] == 400 and fragment in answer["status"]["message"]
    await assert_still_serving(server)


async def test_delete_without_old_object_is_admitted_by_pod_validation(server):
    server.publish(make_snapshot())
    response = await server.post("/validate-pod", with_request(operation="DELETE", object=None, oldObject=None))
    assert (await response.json())["response"]["allowed"] is True


async def test_oversized_body_is_refused_with_the_uid_and_the_limit(small_body_server):
    server = small_body_server
    server.publish(make_snapshot())
    body = admission_review(make_pod(annotations={"big": "x" * 10_000}), uid="big-uid")
    response = await server.post("/mutate-pod", body)
    answer = (await response.json())["response"]
    assert answer["uid"] == "big-uid" and answer["allowed"] is False and answer["status"]["code"] == 400
    assert "4096 byte limit" in answer["status"]["message"]
    await assert_still_serving(server)


async def test_oversized_body_without_a_readable_uid_gets_http_400(small_body_server):
    response = await small_body_server.post("/mutate-pod", data=b"[" + b"1," * 5000 + b"1]")
    assert response.status == 400 and "byte limit" in (await response.json())["error"]
    await assert_still_serving(small_body_server)


async def test_health_readiness_and_metrics(server):
    assert (await server.session.get(server.probes + "/healthz")).status == 200
    assert (await server.session.get(server.probes + "/readyz")).status == 503  # nothing loaded yet
    server.publish(make_snapshot())
    assert (await server.session.get(server.probes + "/readyz")).status == 200
    await server.post("/mutate-pod", admission_review(make_pod()))
    await server.post("/mutate-pod", data=b"nonsense")
    text = await (await server.session.get(server.probes + "/metrics")).text()
    assert 'controller_runtime_webhook_requests_total{code="200",webhook="/mutate-pod"} 1.0' in text
    assert 'controller_runtime_webhook_requests_total{code="400",webhook="/mutate-pod"} 1.0' in text
    assert 'controller_runtime_webhook_latency_seconds_count{webhook="/mutate-pod"} 2.0' in text
    assert 'controller_runtime_webhook_requests_in_flight{webhook="/mutate-pod"} 0.0' in text
    assert (
        'koord_manager_webhook_webhook_duration_milliseconds_count{object_type="pod",operation="CREATE",'
        'plugin_name="ExtendedResourceSpec",status="allowed",webhook_type="mutate"} 1.0'
    ) in text


async def test_profile_matches_are_counted_and_logged(server, caplog):
    from tests.support.builders import make_profile

    server.publish(make_snapshot(make_profile("tag-everything", labels={"x": "y"})))
    with caplog.at_level(logging.INFO, logger="colocate.admission"):
        body = admission_review(make_pod("web-1", "shop"))
        await server.post("/mutate-pod", body)
    text = await (await server.session.get(server.probes + "/metrics")).text()
    assert 'colocate_profile_matches_total{profile="tag-everything"} 1.0' in text
    fields = [r.fields for r in caplog.records if getattr(r, "fields", None)]
    assert len(fields) == 1
    line = fields[0]
    assert line["uid"] == body["request"]["uid"] and line["path"] == "/mutate-pod" and line["operation"] == "CREATE"
    assert line["object"] == "shop/web-1" and line["allowed"] is True and line["matchedProfiles"] == ["tag-everything"]
    assert line["patchOperations"] == 1 and line["durationMs"] >= 0
    json.dumps(line)  # it must be serialisable as one JSON line
