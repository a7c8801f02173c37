"""A real Kubernetes control plane for the tests marked `realapi` (docs/development.md).

Either local processes (etcd and kube-apiserver v1.20.2 from `KUBEBUILDER_ASSETS`, on loopback,
started once per pytest session; kube-controller-manager and kube-scheduler only when a test asks
for them), or the user's own cluster (`pytest --kubeconfig PATH`). Tests see one `RealApi` either
way: an admin kubeconfig, a `kubernetes` client, `apply`, `wait_crds_established`, namespaces, and
webhook registration by URL; `RealApi.local` is the `ControlPlane` a test needs to restart the API
server or start other components (`require_local` skips on a user's cluster, saying why).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from colocate.cluster.client import api_client
from colocate.cluster.rest import ApiError, call, request
from tests.support.paths import REPO
from tests.support.realapi_pki import ClientCert, Pki
from tests.support.realapi_process import Component, free_port, wait_listening
from tests.support.wait import wait_for_sync

HINT = (
    "realapi: no Kubernetes control plane: bash ../shared/k8s/unpack.sh .cache/k8s && "
    "export KUBEBUILDER_ASSETS=$PWD/.cache/k8s (or pytest --kubeconfig PATH for your own cluster)"
)
SHARED_K8S = REPO.parent / "shared" / "k8s"
CACHE_ASSETS = REPO / ".cache" / "k8s"
CRDS = REPO / "manifests" / "crds"
#: every CRD the default install applies, by file name without `.yaml`
ALL_CRDS = tuple(sorted(path.stem for path in CRDS.glob("*.yaml") if path.stem != "kustomization"))
FIELD_MANAGER = "colocate-tests"
RUN_LABEL = "colocate.test/run"
ADMISSION_PLUGINS = (
    "NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultTolerationSeconds,Priority,DefaultStorageClass,"
    "PersistentVolumeClaimResize,RuntimeClass,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota"
)
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


class AssetsMissing(Exception):
    """No control-plane binaries: the message is the one line that says how to get them."""


def find_assets() -> Path:
    """The folder with the binaries: `KUBEBUILDER_ASSETS`, else `.cache/k8s` (unpacked from
    `../shared/k8s` when that exists), else `AssetsMissing`."""
    named = os.environ.get("KUBEBUILDER_ASSETS")
    if named:
        assets = Path(named)
        missing = [name for name in BINARIES if not os.access(assets / name, os.X_OK)]
        if missing:
            raise AssetsMissing(f"KUBEBUILDER_ASSETS={assets} lacks {', '.join(missing)}; {HINT}")
        return assets
    if all(os.access(CACHE_ASSETS / name, os.X_OK) for name in BINARIES):
        return CACHE_ASSETS
    if (SHARED_K8S / "unpack.sh").is_file() and shutil.which("etcd"):
        subprocess.run(["bash", str(SHARED_K8S / "unpack.sh"), str(CACHE_ASSETS)], check=True, capture_output=True)
        return CACHE_ASSETS
    raise AssetsMissing(HINT)


def write_kubeconfig(path: Path, server: str, ca: Path, user: str, cert: ClientCert) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "realapi", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert.cert), "client-key": str(cert.key)}}],
        "contexts": [{"name": "realapi", "context": {"cluster": "realapi", "user": user}}],
        "current-context": "realapi",
    }
    path.write_text(yaml.safe_dump(config))
    return path


class ControlPlane:
    """etcd and kube-apiserver as child processes in `state` (certificates, data, logs)."""

    def __init__(self, assets: Path, state: Path) -> None:
        self.assets, self.state = assets, state
        self.logs = state / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pki = Pki(state / "pki")
        self.apiserver_port = free_port()
        self.server = f"https://127.0.0.1:{self.apiserver_port}"
        self.kubeconfig = self.user_kubeconfig("admin", ["system:masters"])
        self.etcd = self._etcd()
        self.apiserver = Component("kube-apiserver", self._apiserver_argv(), self.logs / "kube-apiserver.log")
        self._controller_manager: Component | None = None
        self._others: list[Component] = []

    def user_kubeconfig(self, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig that authenticates as `user` in `groups` (by client certificate)."""
        path = self.state / f"{user.replace(':', '-')}.kubeconfig"
        return write_kubeconfig(path, self.server, self.pki.ca, user, self.pki.client(user, groups))

    def start(self) -> float:
        """Start etcd and kube-apiserver; the `time.monotonic()` when `/readyz` first answered 200."""
        self.etcd.start()
        wait_listening(self.etcd, self._etcd_port)
        return self.start_apiserver()

    def start_apiserver(self, timeout: float = 90.0) -> float:
        self.apiserver.start()
        return self.wait_apiserver_ready(timeout)

    def stop_apiserver(self) -> None:
        self.apiserver.stop()

    def restart_apiserver(self) -> float:
        """Stop kube-apiserver and start it again on the same port with the same etcd; the
        `time.monotonic()` when `/readyz` answered 200 again."""
        self.stop_apiserver()
        return self.start_apiserver()

    def wait_apiserver_ready(self, timeout: float = 90.0) -> float:
        api = api_client(self.kubeconfig)
        try:

            def ready() -> bool:
                self.apiserver.assert_alive()
                return request(api, "GET", "/readyz", timeout=(1.0, 5.0))[0] == 200

            wait_for_sync(ready, ignore=(ApiError,), timeout=timeout, interval=0.1, message=self.apiserver.log_tail)
        finally:
            api.close()
        return time.monotonic()

    def controller_manager(self) -> Component:
        """kube-controller-manager, started on the first call and kept for the session: garbage
        collection, namespace deletion, service-account tokens, ReplicaSets, the disruption
        controller. Node lifecycle is off: no kubelet heartbeats the tests' Nodes."""
        if self._controller_manager is None:
            kubeconfig = self.user_kubeconfig("system:kube-controller-manager")
            port = free_port()
            argv = [
                str(self.assets / "kube-controller-manager"),
                *_delegated(kubeconfig, port),
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.pki.service_account_key}",
                f"--root-ca-file={self.pki.ca}",
                f"--cluster-signing-cert-file={self.pki.ca}",
                f"--cluster-signing-key-file={self.pki.ca_key}",
                "--controllers=*,-nodelifecycle,-nodeipam,-cloud-node-lifecycle,-route,-service",
            ]
            self._controller_manager = self._start_serving("kube-controller-manager", argv, port)
        return self._controller_manager

    def scheduler(self, configuration: Mapping[str, Any]) -> Component:
        """A kube-scheduler running `configuration` (kubescheduler.config.k8s.io/v1beta1 on 1.20),
        with its client connection and leader election filled in when the configuration omits them.
        The caller stops it (`Component.stop`)."""
        kubeconfig = self.user_kubeconfig("system:kube-scheduler")
        config = {
            "leaderElection": {"leaderElect": False},
            "healthzBindAddress": "",  # no insecure port (10251 by default): secure port only
            "metricsBindAddress": "",
            **configuration,
            "clientConnection": {"kubeconfig": str(kubeconfig), **configuration.get("clientConnection", {})},
        }
        name = f"kube-scheduler-{len(self._others)}"
        config_path = self.state / f"{name}.yaml"
        config_path.write_text(yaml.safe_dump(config))
        port = free_port()
        argv = [str(self.assets / "kube-scheduler"), *_delegated(kubeconfig, port), f"--config={config_path}"]
        component = self._start_serving(name, argv, port)
        self._others.append(component)
        return component

    def stop(self) -> None:
        for component in [*self._others, self._controller_manager, self.apiserver, self.etcd]:
            if component is not None:
                component.stop()

    def _start_serving(self, name: str, argv: list[str], port: int) -> Component:
        component = Component(name, [*argv, "--v=2"], self.logs / f"{name}.log")
        component.start()
        wait_listening(component, port, timeout=60)
        return component

    def _etcd(self) -> Component:
        self._etcd_port, peer = free_port(), free_port()
        data = self.state / "etcd-data"
        data.mkdir(mode=0o700)
        argv = [
            str(self.assets / "etcd"),
            "--name=realapi",
            f"--data-dir={data}",
            f"--listen-client-urls=http://127.0.0.1:{self._etcd_port}",
            f"--advertise-client-urls=http://127.0.0.1:{self._etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=realapi=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",  # a test cluster: speed over durability (etcd 3.4.23 has it)
            "--logger=zap",
            "--log-outputs=stderr",
        ]
        return Component("etcd", argv, self.logs / "etcd.log")

    def _apiserver_argv(self) -> list[str]:
        pki, issuer = self.pki, "https://kubernetes.default.svc.cluster.local"
        return [
            str(self.assets / "kube-apiserver"),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.apiserver_port}",
            "--insecure-port=0",
            f"--etcd-servers=http://127.0.0.1:{self._etcd_port}",
            f"--cert-dir={self.state / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving.cert}",
            f"--tls-private-key-file={pki.serving.key}",
            f"--client-ca-file={pki.ca}",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-account-issuer={issuer}",
            f"--api-audiences={issuer}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC",
            f"--enable-admission-plugins={ADMISSION_PLUGINS}",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=2",
        ]


def _delegated(kubeconfig: Path, port: int) -> list[str]:
    """The flags kube-controller-manager and kube-scheduler share: who they are, where they serve."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--port=0",
    ]


class RealApi:
    """What a `realapi` test talks to: a local `ControlPlane` or the cluster of `--kubeconfig`."""

    def __init__(self, kubeconfig: Path, local: ControlPlane | None) -> None:
        self.kubeconfig, self.local = kubeconfig, local
        self.run_id = secrets.token_hex(3)
        self.client = api_client(kubeconfig)
        self.core = client.CoreV1Api(self.client)
        self._kinds: dict[str, dict[str, tuple[str, bool]]] = {}
        self._created: list[tuple[str, str]] = []  # (path, what) of cluster-scoped objects a run made

    def require_local(self, why: str) -> ControlPlane:
        """The local control plane, or a skip saying why the test cannot run on a user's cluster."""
        if self.local is None:
            import pytest

            pytest.skip(f"runs against your cluster (--kubeconfig): cannot {why} there")
        return self.local

    def apply(
        self, objects: Iterable[Mapping[str, Any]], namespace: str | None = None, *, dry_run: bool = False
    ) -> list[dict[str, Any]]:
        """Server-side apply each object (forced, as field manager `colocate-tests`); a namespaced
        object without a namespace goes to `namespace`. The objects as the server stored them, or with
        `dry_run` as it would store them (admission, validation and defaulting run; nothing is kept)."""
        return [self._apply_one(obj, namespace, dry_run) for obj in objects if obj]

    def apply_file(self, path: Path, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.apply(yaml.safe_load_all(path.read_text()), namespace)

    def path_of(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> str:
        """The REST path of one object (discovered, so custom resources too)."""
        plural, namespaced = self._resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced:
            if not namespace:
                raise ValueError(f"{kind} {name} is namespaced: give a namespace")
            base += f"/namespaces/{namespace}"
        return f"{base}/{plural}/{name}"

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        status, data = request(self.client, "GET", self.path_of(api_version, kind, name, namespace))
        if status == 404:
            return None
        if status != 200:
            raise ApiError(status, f"GET {kind} {name}: HTTP {status}: {data}")
        return data if isinstance(data, dict) else None

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete one object; one already gone is no error."""
        status, data = request(self.client, "DELETE", self.path_of(api_version, kind, name, namespace))
        if status not in (200, 202, 404):
            raise ApiError(status, f"DELETE {kind} {name}: HTTP {status}: {data}")

    def install_crds(self, *names: str) -> None:
        """Apply these CRDs of manifests/crds (`nodemetrics`, ...) as the default install does, and
        wait until each is Established and served."""
        crds = [crd for name in names for crd in self.apply_file(CRDS / f"{name}.yaml")]
        self.wait_crds_established(crd["metadata"]["name"] for crd in crds)

    def write_status(self, obj: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """Write `obj`'s status through its status subresource (a merge patch), as a controller or the
        koordlet does: create and apply drop the status of a kind that has the subresource."""
        meta = obj.get("metadata") or {}
        path = self.path_of(str(obj["apiVersion"]), str(obj["kind"]), str(meta["name"]), namespace) + "/status"
        return call(self.client, "PATCH", path, {"status": obj["status"]}, "application/merge-patch+json")

    def wait_crds_established(self, names: Iterable[str], timeout: float = 30.0) -> None:
        """Until each CustomResourceDefinition is Established and its kind is served (discovery)."""
        for name in names:
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            crd = wait_for_sync(
                lambda path=path: call(self.client, "GET", path),  # type: ignore[misc]
                until=_established,
                ignore=(ApiError,),
                timeout=timeout,
                message=f"CustomResourceDefinition {name} to be Established",
            )
            spec = crd["spec"]
            for version in spec["versions"]:
                if version.get("served"):
                    self._wait_served(f"{spec['group']}/{version['name']}", spec["names"]["kind"], timeout)

    def _wait_served(self, group_version: str, kind: str, timeout: float) -> None:
        wait_for_sync(
            lambda: self._discover(group_version, refresh=True).get(kind),
            ignore=(ApiError,),
            timeout=timeout,
            message=f"{kind} to be served at {group_version}",
        )

    def create_namespace(self, prefix: str = "t") -> str:
        """A new namespace labelled with this run, named `<prefix>-<random>`."""
        name = f"{prefix[:40].strip('-').lower()}-{secrets.token_hex(3)}"
        body = {"metadata": {"name": name, "labels": {RUN_LABEL: self.run_id}}}
        self.core.create_namespace(body)
        self.default_service_account(name)
        return name

    def default_service_account(self, namespace: str) -> None:
        """The `default` ServiceAccount, which admission requires of every Pod: kube-controller-manager
        makes it, but most tests run without one. Without its token controller no token Secret
        exists, which 1.20's admission also requires unless the account does not mount one: so it
        does not (no kubelet would mount it anyway). When kube-controller-manager made it first
        (409), its token Secret may not exist yet when the test's first Pod arrives: the account is
        patched not to mount one either."""
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts"
        account = {"metadata": {"name": "default"}, "automountServiceAccountToken": False}
        status, data = request(self.client, "POST", path, account)
        if status == 409:  # kube-controller-manager, when running, made it first: its token may lag
            mounts = {"automountServiceAccountToken": False}
            call(self.client, "PATCH", f"{path}/default", mounts, "application/merge-patch+json")
        elif status != 201:
            raise ApiError(status, f"POST {path}: HTTP {status}: {data}")

    def delete_namespace(self, name: str) -> None:
        """Delete it (the namespace controller, when running, removes what it holds)."""
        request(self.client, "DELETE", f"/api/v1/namespaces/{name}")

    def register_webhook(
        self,
        name: str,
        *,
        url: str,
        ca_bundle: bytes,
        rules: Sequence[Mapping[str, Any]],
        mutating: bool = True,
        **fields: Any,
    ) -> dict[str, Any]:
        """A one-webhook (Mutating|Validating)WebhookConfiguration calling `url` (https, e.g. a
        webhook served on 127.0.0.1) trusted by `ca_bundle` (PEM). `fields` set the webhook's other
        fields (failurePolicy, namespaceSelector, timeoutSeconds, ...); defaults: Fail, no side
        effects, admissionReviewVersions v1 and v1beta1."""
        import base64

        webhook = {
            "name": name,
            "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_bundle).decode()},
            "rules": list(rules),
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1", "v1beta1"],
            **fields,
        }
        kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
        config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}}
        return self.apply([{**config, "webhooks": [webhook]}])[0]

    def register_colocate_webhooks(self, base_url: str, ca_bundle: bytes) -> list[tuple[str, str]]:
        """colocate's two webhook configurations as `colocate manifests webhooks` renders them (their
        shipped names, which `certs rotate` patches), calling `base_url` (a `colocate serve` on
        127.0.0.1) instead of the Service and trusting `ca_bundle` (PEM). A namespaced webhook also
        selects only this run's namespaces, so that no other pod of a user's cluster meets it; the
        ConfigMap webhook keeps its own selectors (the slo-controller-config lives in
        koordinator-system). Returns (kind, name) of each, for `delete`."""
        import base64

        from webhook.configurations import configurations
        from webhook.registry import default_routes

        bundle = base64.b64encode(ca_bundle).decode()
        this_run = {"key": RUN_LABEL, "operator": "In", "values": [self.run_id]}
        rendered = configurations(default_routes())
        for config in rendered:
            for webhook in config["webhooks"]:
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {"url": f"{base_url}{path}", "caBundle": bundle}
                if all("configmaps" not in rule["resources"] for rule in webhook["rules"]):
                    webhook["namespaceSelector"]["matchExpressions"].append(this_run)
        self.apply(rendered)
        return [(config["kind"], config["metadata"]["name"]) for config in rendered]

    def add_node(
        self, name: str, capacity: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """A Node no kubelet runs: Ready, with `capacity` allocatable, and without the `not-ready`
        taint that admission puts on every new Node (node lifecycle, which lifts it, is off here).
        Only on the local control plane: on a user's cluster its scheduler would place pods on it."""
        self.require_local("add a Node that no kubelet runs")
        resources = dict(capacity or {"cpu": "4", "memory": "8Gi", "pods": "110"})
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "a test's node"}
        node = {
            "metadata": {"name": name, "labels": {RUN_LABEL: self.run_id, **(labels or {})}},
            "status": {"capacity": resources, "allocatable": resources, "conditions": [ready]},
        }
        self.core.create_node(node)
        path = f"/api/v1/nodes/{name}"
        return call(self.client, "PATCH", path, {"spec": {"taints": None}}, "application/merge-patch+json")

    def cleanup(self) -> None:
        """What a run leaves on a user's cluster: its namespaces and the cluster-scoped objects it
        created (never those that were there before)."""
        for path, _ in reversed(self._created):
            request(self.client, "DELETE", path)
        for namespace in self.core.list_namespace(label_selector=f"{RUN_LABEL}={self.run_id}").items:
            self.delete_namespace(namespace.metadata.name)
        self.client.close()

    def _apply_one(self, obj: Mapping[str, Any], namespace: str | None, dry_run: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        api_version, kind, name = str(obj["apiVersion"]), str(obj["kind"]), str(meta["name"])
        _, namespaced = self._resource(api_version, kind)
        target = str(meta.get("namespace") or namespace or "") if namespaced else None
        path = self.path_of(api_version, kind, name, target)
        existed = namespaced or dry_run or request(self.client, "GET", path)[0] == 200
        body = {**obj, "metadata": {**meta, "namespace": target}} if namespaced else dict(obj)
        stored = call(
            self.client,
            "PATCH",
            f"{path}?fieldManager={FIELD_MANAGER}&force=true{'&dryRun=All' if dry_run else ''}",
            body,
            "application/apply-patch+yaml",
        )
        if not existed:
            self._created.append((path, f"{kind} {name}"))
        return stored

    def _resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        found = self._discover(api_version).get(kind) or self._discover(api_version, refresh=True).get(kind)
        if found is None:
            raise ApiError(404, f"the server does not serve {kind} in {api_version}")
        return found

    def _discover(self, api_version: str, *, refresh: bool = False) -> dict[str, tuple[str, bool]]:
        """kind -> (plural, namespaced) that the server serves in `api_version`."""
        if refresh or api_version not in self._kinds:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            status, data = request(self.client, "GET", path)
            resources = data.get("resources", []) if status == 200 and isinstance(data, dict) else []
            self._kinds[api_version] = {
                item["kind"]: (item["name"], bool(item["namespaced"])) for item in resources if "/" not in item["name"]
            }
        return self._kinds[api_version]


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
