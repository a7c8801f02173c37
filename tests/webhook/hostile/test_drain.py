"""While draining, the response after which the server closes the connection says so."""

from __future__ import annotations

import http.client
import json
import signal

from tests.support.admission import admission_review
from tests.support.builders import make_pod
from tests.support.wait import wait_for_sync


def test_every_response_while_draining_says_connection_close(served):
    server = served("--drain-delay", "20")
    kept = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.tls, timeout=5)
    kept.request("GET", "/no-such-path")
    first = kept.getresponse()
    first.read()
    assert first.getheader("Connection") != "close", "before SIGTERM connections are kept alive"
    assert first.getheader("Server") == "colocate"
    server.process.send_signal(signal.SIGTERM)
    wait_for_sync(
        lambda: server.probe("/readyz", timeout=1)[0],
        until=lambda status: status == 503,
        timeout=10,
        message="the server to start draining",
    )
    body = json.dumps(admission_review(make_pod("p"))).encode()
    kept.request("POST", "/mutate-pod", body, {"Content-Type": "application/json"})
    answer = kept.getresponse()
    assert answer.status == 200 and json.loads(answer.read())["response"]["allowed"]
    assert answer.getheader("Connection") == "close"
    for path in ("/mutate-pod", "/no-such-path"):  # a 405 and a 404: the port's other answers
        other = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.tls, timeout=5)
        other.request("GET", path)
        response = other.getresponse()
        response.read()
        assert response.getheader("Connection") == "close", path
        other.close()
    server.process.send_signal(signal.SIGTERM)  # a second signal cuts the drain short
    assert server.process.wait(timeout=30) == 0
