"""DefaultPreBind (Koordinator's `pkg/scheduler/plugins/defaultprebind/plugin.go`): one patch for
all PreBind changes, retried on conflicts."""

import pytest

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.plugins.defaultprebind import MAX_ATTEMPTS, DefaultPreBind
from tests.support.builders import make_pod


class FakeClient:
    def __init__(self, failures=(), result_meta=None):
        self.failures = list(failures)
        self.calls = []
        self.result_meta = result_meta or {}

    def patch(self, kind, namespace, name, patch):
        self.calls.append((kind, namespace, name, patch))
        if self.failures:
            raise ClientError(self.failures.pop(0), "boom")
        return {"metadata": {"name": name, **self.result_meta}}

    def bind(self, *args):
        raise AssertionError("not used")


def apply(client, modify=True):
    plugin = DefaultPreBind(Handle(cluster=None, client=client))
    original = make_pod("p", "ns", annotations={})
    modified = make_pod("p", "ns", annotations={"scheduling.koordinator.sh/resource-status": "{}"} if modify else {})
    return plugin.apply_patch(CycleState(), original, modified)


def test_one_patch_with_the_difference():
    client = FakeClient()
    assert apply(client).is_success
    ((kind, ns, name, patch),) = client.calls
    assert (kind, ns, name) == ("Pod", "ns", "p")
    assert patch == [
        {"op": "add", "path": "/metadata/annotations/scheduling.koordinator.sh~1resource-status", "value": "{}"}
    ]


def test_no_difference_no_call():
    client = FakeClient()
    assert apply(client, modify=False).is_success and client.calls == []


@pytest.mark.parametrize(
    "failures, ok, calls",
    [
        ([409, 429, 0], True, 4),
        ([409] * MAX_ATTEMPTS, False, MAX_ATTEMPTS),
        ([403], False, 1),
    ],
)
def test_retries_on_conflict_throttling_and_closed_connections(failures, ok, calls):
    client = FakeClient(failures)
    assert apply(client).is_success is ok
    assert len(client.calls) == calls


def test_pod_being_deleted_is_an_error():
    status = apply(FakeClient(result_meta={"deletionTimestamp": "2024-05-01T10:00:00Z"}))
    assert (status.code.name, status.reasons) == ("Error", ("pod is being deleted",))
