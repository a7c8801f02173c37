"""What `parse_review` makes of a review's request fields: strings or "", objects or nothing, in the
order the checks are made (the uid is known to every error after the request is found)."""

import base64

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.admission.plugin import AdmissionRequest, GroupVersionResource
from webhook.review import MalformedReview, encode_patch, parse_review

ODD = st.sampled_from([None, 1, True, [], {}, "", "x"])


def review(**request):
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": request})


@given(
    namespace=ODD,
    name=ODD,
    sub=ODD,
    kind=st.one_of(ODD, st.fixed_dictionaries({"kind": ODD})),
    resource=st.one_of(ODD, st.fixed_dictionaries({"group": ODD, "version": ODD, "resource": ODD})),
    dry=ODD,
)
def test_fields_that_are_not_strings_read_as_empty(namespace, name, sub, kind, resource, dry):
    version, request = parse_review(
        review(
            uid="u",
            operation="DELETE",
            namespace=namespace,
            name=name,
            subResource=sub,
            kind=kind,
            resource=resource,
            dryRun=dry,
        )
    )

    def text(value):
        return value if isinstance(value, str) else ""

    resource = resource if isinstance(resource, dict) else {}
    assert version == "admission.k8s.io/v1beta1"
    assert request == AdmissionRequest(
        "u",
        "DELETE",
        GroupVersionResource(
            text(resource.get("group")), text(resource.get("version")), text(resource.get("resource"))
        ),
        text(sub),
        text(kind.get("kind")) if isinstance(kind, dict) else "",
        text(namespace),
        text(name),
        None,
        None,
        bool(dry),
    )


@pytest.mark.parametrize(
    "request_, message, uid",
    [
        ({"uid": 7, "operation": "CREATE"}, "AdmissionReview request has no uid", None),
        ({"uid": "u"}, "AdmissionReview request has no operation", "u"),
        ({"uid": "u", "operation": "PATCH"}, "request.operation must be one of CONNECT, CREATE, DELETE, UPDATE", "u"),
        ({"uid": "u", "operation": "CREATE", "object": "pod"}, "request.object must be a JSON object", "u"),
        (
            {"uid": "u", "operation": "CREATE", "object": {}, "oldObject": [1]},
            "request.oldObject must be a JSON object",
            "u",
        ),
    ],
)
def test_request_errors_in_check_order(request_, message, uid):
    with pytest.raises(MalformedReview) as caught:
        parse_review(review(**request_))
    assert caught.value.message.startswith(message) and caught.value.uid == uid
    assert caught.value.api_version == "admission.k8s.io/v1beta1"


def test_objects_are_the_decoded_dicts():
    _, request = parse_review(review(uid="u", operation="UPDATE", object={"a": 1}, oldObject={"a": 2}))
    assert request.object == {"a": 1} and request.old_object == {"a": 2}


@given(
    st.lists(st.fixed_dictionaries({"op": st.just("add"), "path": st.text(max_size=8), "value": st.text()}), max_size=4)
)
def test_a_patch_is_the_standard_base64_of_its_compact_json(operations):
    assert encode_patch(operations) == base64.b64encode(orjson.dumps(operations)).decode()
