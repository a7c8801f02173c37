"""The API server as a source: one reflector thread per watched kind, all writing into one store.

The store does the rest (diffing relists, health, readiness); the views subscribed to it decide
how their changes reach the event loop. Nothing here touches a loop.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from kubernetes import client

from colocate.cluster.client import ClusterUnavailable, api_errors
from colocate.cluster.kinds import WatchedKind
from colocate.cluster.reflector import (
    NotServed,
    Reflector,
    ReflectorSettings,
    ServerReturn,
    run_threads,
    stop_all,
    without_retries,
)
from colocate.cluster.store import ClusterStore


class KubeSource:
    """Keeps `store` in step with the API server for `kinds` while `run()` is awaited."""

    def __init__(
        self,
        api: client.ApiClient,
        kinds: Sequence[WatchedKind],
        store: ClusterStore,
        settings: ReflectorSettings = ReflectorSettings(),
    ) -> None:
        self.api, self.kinds, self.store = api, tuple(kinds), store
        self._stop = threading.Event()
        watching = without_retries(api)  # the reflectors retry on their own terms
        server = ServerReturn(watching, self._stop, settings)  # one prober wakes them all after a restart
        self._reflectors = [Reflector(k, watching, store, settings, self._stop, server) for k in self.kinds]

    async def run(self, *extra: threading.Thread) -> None:
        """List and watch until cancelled; `extra` threads (a publisher) share the lifetime."""
        threads = [
            threading.Thread(target=r.run, name=f"reflector-{r.kind.plural}", daemon=True) for r in self._reflectors
        ]
        await run_threads([*threads, *extra], self.close)

    def list_once(self) -> None:
        """List every kind once into the store (the one-shot commands: `colocate apply --kubeconfig`,
        `colocate scheduler quota --kubeconfig`).
        An API server that cannot be reached or refuses a list is a `ClusterUnavailable`."""
        for reflector in self._reflectors:
            with api_errors(f"listing {reflector.kind.plural}"):
                try:
                    reflector.list_once()
                except NotServed as exc:  # no CRD: none of the kind, said once in the log
                    self.store.failed(reflector.kind, "absent", str(exc))
                except RuntimeError as exc:  # an HTTP error status, with the API server's reason
                    raise ClusterUnavailable(f"listing {reflector.kind.plural}: {exc}") from exc

    def close(self) -> None:
        stop_all(self._stop, self._reflectors)

    @property
    def stopping(self) -> threading.Event:
        return self._stop
