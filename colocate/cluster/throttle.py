"""A client-side request rate limit, as client-go's `flowcontrol.NewTokenBucketRateLimiter` under
a component's `clientConnection.qps`/`burst`: every request waits for a token (`qps` a second, at
most `burst` saved up), so a busy controller cannot flood the API server.

`throttle(api, qps, burst)` makes every call of that `kubernetes` ApiClient — the typed clients',
`colocate.cluster.rest`'s, the Eviction client's, a watch's start — take a token first. Calls block (they
already run off the event loop); the wait is the token's, never longer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient


class TokenBucket:
    """Reserve-then-sleep, as `rate.Limiter.Wait`: concurrent callers queue in arrival order."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1, got {qps} and {burst}")
        self.qps, self.burst, self.clock, self.sleep = qps, burst, clock, sleep
        self._tokens, self._at = float(burst), clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token (possibly one not yet earned); how long to wait before using it."""
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps) - 1.0
            self._at = now
            return -self._tokens / self.qps if self._tokens < 0 else 0.0

    def wait(self) -> float:
        delay = self.reserve()
        if delay > 0:
            self.sleep(delay)
        return delay


def throttle(api: ApiClient, qps: float, burst: int, bucket: TokenBucket | None = None) -> ApiClient:
    """`api`, each of whose requests first waits for a token of a `qps`/`burst` bucket."""
    limiter = bucket or TokenBucket(qps, burst)
    call_api = api.call_api

    def throttled(*args: Any, **kwargs: Any) -> Any:
        limiter.wait()
        return call_api(*args, **kwargs)

    api.call_api = throttled
    setattr(api, BUCKET_ATTRIBUTE, limiter)  # a copy of the client (`reflector.without_retries`) shares it
    return api


#: where a throttled client keeps its bucket
BUCKET_ATTRIBUTE = "colocate_throttle_bucket"


def bucket_of(api: ApiClient) -> TokenBucket | None:
    """The bucket `api` was throttled with, if any."""
    bucket = getattr(api, BUCKET_ATTRIBUTE, None)
    return bucket if isinstance(bucket, TokenBucket) else None
