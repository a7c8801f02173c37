"""The fixtures and hooks of the `realapi` tests (docs/development.md "Against a real API server"):
`tests/conftest.py` imports them, so every test tree has them. Using any `realapi*` fixture marks a
test `realapi`; a test marked `realapi` gets the control plane (or skips, saying how to get one).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.realapi import AssetsMissing, ControlPlane, RealApi, find_assets
from tests.support.realapi_process import Component


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="run the realapi tests against this cluster (a namespace per test, deleted after) "
        "instead of a local control plane from KUBEBUILDER_ASSETS",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a realapi fixture is a `realapi` test, so `-m "not realapi"` leaves it out."""
    for item in items:
        if any(name.startswith("realapi") for name in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realapi)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed realapi test shows where the control plane's logs are and the API server's last lines."""
    report = yield
    if report.failed and item.get_closest_marker("realapi"):
        plane = _LOCAL_PLANE.get("plane")
        if plane is not None:
            _LOCAL_PLANE["failed"] = plane  # keep its state folder and logs
            logs = "\n".join(str(log) for log in sorted(plane.logs.iterdir()))
            report.sections.append(("realapi logs (kept)", f"{logs}\n{plane.apiserver.log_tail(20)}"))
    return report


_LOCAL_PLANE: dict[str, ControlPlane] = {}


@pytest.fixture(scope="session")
def realapi(request: pytest.FixtureRequest) -> Iterator[RealApi]:
    """The real API server for the session: local processes, or the cluster of `--kubeconfig`. A local
    one's certificates, etcd data and logs are in a temporary folder, kept when a realapi test failed
    (the failure names its logs)."""
    external = request.config.getoption("--kubeconfig")
    if external:
        api = RealApi(Path(external), None)
        try:
            yield api
        finally:
            api.cleanup()
        return
    try:
        assets = find_assets()
    except AssetsMissing as exc:
        pytest.skip(str(exc))
    plane = ControlPlane(assets, Path(tempfile.mkdtemp(prefix="colocate-realapi-")))
    _LOCAL_PLANE["plane"] = plane
    try:
        plane.start()
        api = RealApi(plane.kubeconfig, plane)
        yield api
        api.client.close()
    finally:
        plane.stop()
        if "failed" not in _LOCAL_PLANE:
            shutil.rmtree(plane.state, ignore_errors=True)
        _LOCAL_PLANE.clear()


@pytest.fixture(autouse=True)
def _realapi_for_marked(request: pytest.FixtureRequest) -> None:
    """A test marked `realapi` gets the control plane started (or skips, saying how to get one)."""
    if request.node.get_closest_marker("realapi"):
        request.getfixturevalue("realapi")


@pytest.fixture
def realapi_namespace(realapi: RealApi, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own for the test (named after it), deleted after it."""
    name = realapi.create_namespace(request.node.name.split("[")[0].replace("_", "-"))
    yield name
    realapi.delete_namespace(name)


@pytest.fixture
def realapi_control_plane(realapi: RealApi) -> ControlPlane:
    """The local control plane (to restart the API server, make user kubeconfigs); skips on --kubeconfig."""
    return realapi.require_local("restart the API server or start control-plane processes")


@pytest.fixture
def realapi_controller_manager(realapi: RealApi) -> Component | None:
    """kube-controller-manager, started on first use and kept for the session (None on --kubeconfig:
    a cluster runs its own)."""
    return realapi.local.controller_manager() if realapi.local is not None else None


@pytest.fixture
def realapi_scheduler(realapi: RealApi) -> Iterator[Callable[[Mapping[str, Any]], Component]]:
    """`realapi_scheduler(configuration)` starts a kube-scheduler with that v1beta1 configuration;
    stopped after the test. Skips on --kubeconfig."""
    plane = realapi.require_local("start a kube-scheduler with the test's configuration")
    started: list[Component] = []

    def start(configuration: Mapping[str, Any]) -> Component:
        started.append(plane.scheduler(configuration))
        return started[-1]

    yield start
    for component in started:
        component.stop()
