"""`colocate serve --admission-plugins`: an installed admission plugin on the HTTPS port, in a server
process of its own that discovers the distribution as an installed one."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from colocate.testing.builders import make_pod
from tests.support.admission import admission_review
from tests.support.distributions import Site
from tests.support.served import Served


def test_serve_runs_an_enabled_admission_plugin_after_the_in_tree_ones(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.install_example("webhook-trafficclass")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(site.paths))
    server = Served(tmp_path, "--admission-plugins", "TrafficClass").wait_ready()
    try:
        response = server.review(
            "/mutate-pod", admission_review(make_pod("batch", qos="BE", priority_class="koord-batch"))
        )
        assert response["allowed"]
        patch = json.loads(base64.b64decode(response["patch"]))
        assert {"op": "add", "path": "/metadata/labels/example.colocate.io~1traffic-class", "value": "bulk"} in patch
    finally:
        server.kill()
