"""A compressed body is refused before it is read: a gzip bomb costs the server nothing."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import time

from tests.support.admission import admission_review
from tests.support.builders import make_pod

INFLATED = 256 * 1024 * 1024  # 256 MiB of zeros, about 250 KiB compressed


def _bomb() -> bytes:
    chunk = b"0" * (1024 * 1024)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as out:
        out.write(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "x": "')
        for _ in range(INFLATED // len(chunk)):
            out.write(chunk)
        out.write(b'"}')
    return buffer.getvalue()


def test_a_gzip_body_is_refused_at_once_and_a_normal_admission_does_not_wait(served):
    server = served()
    bomb = _bomb()
    started = time.monotonic()
    status, body = server.request("/mutate-pod", data=bomb, headers={"Content-Encoding": "gzip"}, timeout=30)
    refused_after = time.monotonic() - started
    assert status == 415 and b"Content-Encoding 'gzip' is not accepted" in body
    assert refused_after < 2.0, f"refused after {refused_after:.1f}s: the body was read"
    response = server.review("/mutate-pod", admission_review(make_pod("after")), timeout=5)
    assert response["allowed"]
    assert server.metric("controller_runtime_webhook_requests_total", code="415", webhook="/mutate-pod") == 1


def test_every_encoding_but_identity_is_refused(served):
    server = served()
    body = json.dumps(admission_review(make_pod("p"))).encode()
    for encoding in ("deflate", "br", "GZIP", "identity, gzip"):
        status, _ = server.request("/validate-pod", data=body, headers={"Content-Encoding": encoding})
        assert status == 415, encoding
    status, _ = server.request("/validate-pod", data=body, headers={"Content-Encoding": "identity"})
    assert status == 200


def test_an_oversized_chunked_body_is_answered_with_its_uid(served):
    server = served("--max-body", "4096")
    pod = make_pod("big", annotations={"filler": "x" * 20_000})
    body = json.dumps(admission_review(pod, uid="chunked-uid")).encode()
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.tls, timeout=5)
    chunks = (body[i : i + 1024] for i in range(0, len(body), 1024))  # no Content-Length: chunked
    connection.request("POST", "/mutate-pod", chunks, {"Content-Type": "application/json"}, encode_chunked=True)
    answer = connection.getresponse()
    response = json.loads(answer.read())["response"]
    assert answer.status == 200 and response["uid"] == "chunked-uid"
    assert response["status"]["code"] == 400 and "exceeds the 4096 byte limit" in response["status"]["message"]
    assert server.metric("colocate_webhook_refused_requests_total", reason="too_large") == 1
