"""A worker that shares the port binds it only once its cluster state is loaded.

With `serve --workers N` the kernel hands each connection to any process bound to the port, and
the pod's readiness probe is answered by whichever worker gets it: a worker still listing the
cluster would admit pods from an empty state (no profile applied) while the pod counts as ready.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from certs.generate import ensure_serving_certs
from colocate.cluster.reflector import ReflectorSettings
from tests.support.apiserver import ApiServer
from tests.support.builders import make_namespace, make_priority_class, make_profile
from tests.support.cluster import free_port
from tests.support.wait import wait_for
from webhook.serve import ServeConfig, serve_forever
from webhook.snapshots import KubeSettings


def accepts(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_a_worker_listens_only_once_its_state_is_loaded(api: ApiServer, kubeconfig: Path, tmp_path: Path) -> None:
    api.apply(make_namespace("default"))
    api.apply(make_priority_class("koord-batch", 5000))
    api.apply(make_profile("be", qosClass="BE"))
    ensure_serving_certs(tmp_path / "certs")
    config = ServeConfig(
        cluster=None,
        cert_dir=tmp_path / "certs",
        port=free_port(),
        host="127.0.0.1",
        kubeconfig=kubeconfig,
        kube=KubeSettings(ReflectorSettings(backoff_initial=0.05, backoff_max=0.1)),
    )
    api.fail_requests(10_000, status=503)  # the API server is unreachable: nothing can be listed
    server = asyncio.create_task(serve_forever(config, reuse_port=True, listen_when_ready=True))
    try:
        await wait_for(lambda: api.requests["GET list Namespace"] >= 3, message="the worker retrying its lists")
        assert not accepts(config.port)  # still listing: not bound, so no connection reaches it
        api.fail_requests(0)
        await wait_for(lambda: accepts(config.port), timeout=10, message="the worker listening once loaded")
    finally:
        server.cancel()
        await asyncio.gather(server, return_exceptions=True)
    assert not accepts(config.port)
