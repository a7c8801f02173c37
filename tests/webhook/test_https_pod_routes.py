"""AdmissionReview over real HTTPS, verified against the generated CA; patches applied with jsonpatch."""

import base64
import json

import jsonpatch

from tests.support.admission import admission_review, make_snapshot
from tests.support.builders import make_namespace, make_pod, make_profile

PROFILE = make_profile(
    "colocation-profile-example",
    namespaceSelector={"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
    selector={"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
    qosClass="BE",
    priorityClassName="koord-batch",
    koordinatorPriority=1000,
    schedulerName="koord-scheduler",
    labels={"koordinator.sh/mutated": "true"},
    annotations={"koordinator.sh/intercepted": "true"},
    patch={"spec": {"terminationGracePeriodSeconds": 30}},
)
CLUSTER = make_snapshot(PROFILE, make_namespace("colo", {"koordinator.sh/enable-colocation": "true"}))
BATCH_POD = make_pod(
    "spark",
    "colo",
    labels={"koordinator.sh/enable-colocation": "true"},
    requests={"cpu": "500m", "memory": "2Gi"},
    limits={"cpu": "1", "memory": "4Gi"},
)


async def review(server, path, body):
    response = await server.post(path, body)
    assert response.status == 200
    return await response.json()


async def test_mutate_pod_returns_a_patch_that_produces_koordinators_pod(server):
    server.publish(CLUSTER)
    body = admission_review(BATCH_POD)
    result = await review(server, "/mutate-pod", body)
    response = result["response"]
    assert result["apiVersion"] == "admission.k8s.io/v1" and result["kind"] == "AdmissionReview"
    assert response["uid"] == body["request"]["uid"] and response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    pod = jsonpatch.apply_patch(BATCH_POD, json.loads(base64.b64decode(response["patch"])))
    assert pod["metadata"]["labels"] == {
        "koordinator.sh/enable-colocation": "true",
        "koordinator.sh/mutated": "true",
        "koordinator.sh/qosClass": "BE",
        "koordinator.sh/priority": "1000",
    }
    assert pod["spec"]["priority"] == 5000 and pod["spec"]["priorityClassName"] == "koord-batch"
    assert pod["spec"]["schedulerName"] == "koord-scheduler" and pod["spec"]["terminationGracePeriodSeconds"] == 30
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "2Gi"},
        "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "4Gi"},
    }
    assert json.loads(pod["metadata"]["annotations"]["node.koordinator.sh/extended-resource-spec"]) == {
        "containers": {
            "main": {
                "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "4Gi"},
                "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "2Gi"},
            }
        }
    }
    # the mutated pod passes validation
    validated = await review(server, "/validate-pod", admission_review(pod))
    assert validated["response"]["allowed"] is True


async def test_no_change_means_no_patch(server):
    server.publish(CLUSTER)
    response = (await review(server, "/mutate-pod", admission_review(make_pod(namespace="other"))))["response"]
    assert response["allowed"] is True and "patch" not in response and "patchType" not in response


async def test_v1beta1_reviews_are_answered_in_v1beta1(server):
    server.publish(CLUSTER)
    result = await review(server, "/mutate-pod", admission_review(BATCH_POD, api_version="admission.k8s.io/v1beta1"))
    assert result["apiVersion"] == "admission.k8s.io/v1beta1" and result["response"]["allowed"]


async def test_validation_denial_carries_code_and_message(server):
    server.publish(CLUSTER)
    body = admission_review(make_pod(qos="BE"))
    response = (await review(server, "/validate-pod", body))["response"]
    assert response == {
        "uid": body["request"]["uid"],
        "allowed": False,
        "status": {
            "code": 400,
            "message": "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass= cannot be used in combination",
        },
    }


async def test_missing_priority_class_denies_with_500(server):
    server.publish(make_snapshot(make_profile(priorityClassName="nope"), priority_classes=False))
    response = (await review(server, "/mutate-pod", admission_review(make_pod())))["response"]
    assert (
        response["allowed"] is False
        and response["status"]["code"] == 500
        and '"nope" not found' in response["status"]["message"]
    )


async def test_other_resources_and_subresources_are_allowed_untouched(server):
    server.publish(CLUSTER)
    for body in (
        admission_review(BATCH_POD, resource="nodes", kind="Node"),
        admission_review(BATCH_POD, sub_resource="status"),
    ):
        response = (await review(server, "/mutate-pod", body))["response"]
        assert response["allowed"] is True and "patch" not in response


async def test_update_is_not_mutated(server):
    server.publish(CLUSTER)
    body = admission_review(BATCH_POD, operation="UPDATE", old=BATCH_POD)
    response = (await review(server, "/mutate-pod", body))["response"]
    assert response["allowed"] is True and "patch" not in response
