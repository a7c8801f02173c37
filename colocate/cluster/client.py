"""The one way every component gets an API client: a kubeconfig file, or the pod's service account.

A cluster that cannot be used (no kubeconfig, a context it does not have, an API server that does
not answer or refuses us) is a `ClusterUnavailable` with one line saying so: `colocate` reports it
as a usage error (exit 2), never as a traceback. `api_errors()` turns the client library's errors
into it around a one-shot command's calls.

The client library costs about half a second to import, so it is imported here on first use, never
when this module is: every command imports this module (`colocate` reports `ClusterUnavailable`),
and `colocate --version` or `colocate certs inspect` must not pay for a client they never use
(tests/colocate/test_startup.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes import client


class ClusterUnavailable(Exception):
    """The API server cannot be used; the message says why, on one line."""


def api_client(kubeconfig: Path | None, context: str | None = None) -> client.ApiClient:
    """A client from a kubeconfig file, or from the pod's service account when none is given."""
    from kubernetes import client, config
    from kubernetes.config import ConfigException

    try:
        if kubeconfig is not None:
            if not kubeconfig.is_file():
                raise ClusterUnavailable(f"--kubeconfig {kubeconfig}: no such file")
            _check_kubeconfig(kubeconfig)
            loaded: client.ApiClient = config.new_client_from_config(
                str(kubeconfig), context=context, persist_config=False
            )
            return loaded
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return client.ApiClient(configuration)
    except ConfigException as exc:
        where = (
            f"kubeconfig {kubeconfig}"
            if kubeconfig is not None
            else "no --kubeconfig, and not running in a pod (no service account)"
        )
        raise ClusterUnavailable(f"{where}: {_bounded(str(exc))}") from exc


#: the largest kubeconfig read (kubectl's own are a few KiB; certificates inline stay far below)
MAX_KUBECONFIG_BYTES = 1024 * 1024
#: what of the client library's message about a kubeconfig is quoted (it may repeat the file)
MAX_MESSAGE_CHARS = 300


def _check_kubeconfig(path: Path) -> None:
    """Parse the kubeconfig (a regular file: the caller checked) with the bounds every manifest gets
    (size, nesting depth, alias expansion) before the client library reads it: a hostile file is
    one short line, not a RecursionError or a multi-megabyte message."""
    from policies.apis.manifests import ManifestError, parse_documents

    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_KUBECONFIG_BYTES + 1)
        if len(raw) > MAX_KUBECONFIG_BYTES:
            raise ManifestError(f"{path}: larger than {MAX_KUBECONFIG_BYTES} bytes")
        documents = parse_documents(raw.decode("utf-8"), str(path))
    except ManifestError as exc:  # its message starts with the path
        raise ClusterUnavailable(f"--kubeconfig {_bounded(str(exc))}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterUnavailable(f"--kubeconfig {path}: {_bounded(str(exc))}") from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ClusterUnavailable(f"--kubeconfig {path}: not a kubeconfig (one YAML mapping)")


def _bounded(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + "... (cut)"


def api_client_or_else(kubeconfig: Path | None, context: str | None, *, instead: str) -> client.ApiClient:
    """`api_client` for a command that can also read the cluster another way (`instead`, e.g.
    "--cluster DIR"): when no cluster can be had, the one-line error says how to give one."""
    if kubeconfig is not None and not kubeconfig.is_file():
        raise ClusterUnavailable(f"--kubeconfig {kubeconfig}: no such file")
    try:
        return api_client(kubeconfig, context)
    except ClusterUnavailable as exc:
        raise ClusterUnavailable(f"no cluster to read: {exc} (give {instead} or --kubeconfig FILE)") from exc


def describe_api_error(exc: BaseException) -> str | None:
    """One line for an error of the client library, or None when `exc` is not one."""
    if type(exc).__module__.partition(".")[0] not in ("kubernetes", "urllib3"):
        return None  # not the library's (and no need to import it to know)
    import urllib3
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config import ConfigException

    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        return f"cannot reach the API server at {exc.pool.host}:{exc.pool.port}: {str(exc.reason).rsplit(': ', 1)[-1]}"
    connection = getattr(exc, "conn", None)  # a connection that failed, not retried (the reflectors' client)
    if isinstance(exc, urllib3.exceptions.HTTPError) and connection is not None:
        return f"cannot reach the API server at {connection.host}:{connection.port}: {str(exc).rsplit(': ', 1)[-1]}"
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return f"cannot reach the API server: {exc}"
    if isinstance(exc, ApiException):
        return f"the API server answered {exc.status} {exc.reason}"
    if isinstance(exc, ConfigException):
        return str(exc)
    return None


@contextmanager
def api_errors(doing: str) -> Iterator[None]:
    """Turn the client library's errors inside the block into `ClusterUnavailable("<doing>: ...")`."""
    try:
        yield
    except Exception as exc:  # the library is imported only if something failed (see the module docstring)
        line = describe_api_error(exc)
        if line is None:
            raise
        raise ClusterUnavailable(f"{doing}: {line}") from exc


def read_object(call: Callable[..., Any], *args: Any) -> dict[str, Any] | None:
    """The object a typed-client read returns, as a dict; None when it does not exist."""
    from kubernetes.client.exceptions import ApiException

    try:
        found: dict[str, Any] = json.loads(call(*args, _preload_content=False).data)
        return found
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
