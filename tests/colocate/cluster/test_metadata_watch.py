"""Metadata-only list/watch: a metadata-only kind is asked for PartialObjectMetadata, as client-go's
metadata informers ask, and the stand-in answers as kube-apiserver's response transform does."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from colocate.cluster.client import api_client
from colocate.cluster.kinds import WatchedKind
from colocate.cluster.reflector import JSON, METADATA_LIST, METADATA_WATCH, Reflector, ReflectorSettings
from tests.support.apiserver import ApiServer
from tests.support.builders import make_pod
from tests.support.wait import wait_for

PODS = WatchedKind.of("Pod", metadata_only=True)


def whole_pod(name: str) -> dict[str, Any]:
    pod = make_pod(name, "ns", labels={"app": "a"}, node="n1")
    pod["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
    pod["status"] = {"phase": "Running"}
    return pod


class Sink:
    def __init__(self) -> None:
        self.listed: list[dict[str, Any]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []

    def replaced(self, kind: WatchedKind, objects: list[dict[str, Any]]) -> None:
        self.listed = objects

    def changed(self, kind: WatchedKind, event: str, obj: dict[str, Any]) -> None:
        self.events.append((event, obj))

    def watching(self, kind: WatchedKind) -> None:
        pass

    def failed(self, kind: WatchedKind, reason: str, error: str) -> None:
        pass


def get(kubeconfig: Path, path: str, accept: str, watch: bool = False) -> tuple[int, Any]:
    api = api_client(kubeconfig)
    query: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", 1)] if watch else []
    request = api.param_serialize(
        "GET", path, query_params=query, header_params={"Accept": accept}, auth_settings=["BearerToken"]
    )
    response = api.call_api(*request, _request_timeout=(5, 5))
    body = response.read()
    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    return response.status, (lines if watch and response.status == 200 else json.loads(body))


async def test_the_stand_in_answers_partial_object_metadata_as_kube_apiserver_does(
    api: ApiServer, kubeconfig: Path
) -> None:
    api.apply(whole_pod("p"))
    loop = asyncio.get_running_loop()
    status, listed = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", METADATA_LIST)
    assert status == 200 and (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    (item,) = listed["items"]
    assert set(item) == {"kind", "apiVersion", "metadata"} and item["kind"] == "PartialObjectMetadata"
    assert item["metadata"]["managedFields"] and item["metadata"]["labels"] == {"app": "a"}  # all of ObjectMeta
    status, events = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", METADATA_WATCH, True)
    assert status == 200 and events[0]["type"] == "ADDED"
    assert set(events[0]["object"]) == {"kind", "apiVersion", "metadata"}
    status, whole = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", JSON)
    assert status == 200 and whole["kind"] == "PodList" and whole["items"][0]["status"] == {"phase": "Running"}
    status, refused = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", METADATA_WATCH)
    assert (status, refused["reason"]) == (406, "NotAcceptable")  # a list asked for one object's metadata
    status, refused = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", METADATA_LIST, True)
    assert (status, refused["reason"]) == (406, "NotAcceptable")  # a watch asked for a list
    protobuf_first = f"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,{JSON}"  # not served here
    status, skipped = await loop.run_in_executor(None, get, kubeconfig, "/api/v1/pods", protobuf_first)
    assert status == 200 and skipped["kind"] == "PodList"


async def test_a_metadata_only_reflector_receives_metadata_named_as_its_kind(api: ApiServer, kubeconfig: Path) -> None:
    api.apply(whole_pod("listed"))
    sink, stop = Sink(), threading.Event()
    reflector = Reflector(PODS, api_client(kubeconfig), sink, ReflectorSettings(watch_timeout=2), stop)
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    try:
        await wait_for(lambda: bool(sink.listed), message="the list")
        api.apply(whole_pod("watched"))
        await wait_for(lambda: bool(sink.events), message="the watch event")
    finally:
        stop.set()
        reflector.interrupt()
        await asyncio.get_running_loop().run_in_executor(None, thread.join, 5)
    for obj in (sink.listed[0], sink.events[0][1]):
        assert (obj["kind"], obj["apiVersion"]) == ("Pod", "v1")
        assert set(obj) == {"kind", "apiVersion", "metadata"} and "managedFields" not in obj["metadata"]
    assert sink.events[0][0] == "ADDED" and sink.events[0][1]["metadata"]["name"] == "watched"
