"""The bytes of requests one server process holds at once, shared fairly between connections.

What is held is a request's body and, before it, its head while that is being received (up to
`MAX_HEAD_BYTES`: `webhook.port.PortConnection`); a head is given back once it is complete.

The connection cap bounds sockets, not what they send: a thousand connections each sending most of
`--max-body` would hold gigabytes, so bodies are held against a budget (`--body-budget-bytes`). A
first-come budget alone can be held by a few clients: eight connections each sending 8 MiB and
waiting held all of 64 MiB, and every other admission was refused as busy for as long as they
kept reconnecting. So the budget is split in two halves:

- one half is reserved in equal shares, one per connection the cap allows (`share`: 32 KiB with
  the defaults, 64 MiB over 1,000 connections): the first `share` bytes of any body come from its
  connection's own share, which no other connection can take. An AdmissionReview of an ordinary
  pod (a few KiB, twice that for an UPDATE) is therefore never refused as busy, whatever others hold;
- the other half (`pool`) is shared, first come, by the bytes of bodies beyond their share; a body
  that needs more than is left gets HTTP 503 (`busy`) and its connection is closed.

A connection receives one body at a time (aiohttp reads requests in order), so the reserved half
can never be oversubscribed, and what all bodies hold together stays within `limit`. A body that
stops arriving is refused after `--first-request-timeout` (408), which bounds how long a client can
hold the pool.
"""

from __future__ import annotations

from webhook.connections import DEFAULT_MAX_CONNECTIONS


class BodyBudget:
    def __init__(self, limit: int | None = None, connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self.limit = limit
        self.share = 0 if limit is None else limit // (2 * max(1, connections))
        self.pool = None if limit is None else limit - self.share * max(1, connections)
        self.used = 0  # bytes taken from the pool

    def take(self, held: int, size: int) -> bool:
        """Whether a body holding `held` bytes may hold `size` more (then they are taken)."""
        if self.pool is None:
            return True
        beyond = max(0, held + size - self.share) - max(0, held - self.share)
        if beyond == 0:
            return True
        if self.used + beyond > self.pool:
            return False
        self.used += beyond
        return True

    def give(self, held: int) -> None:
        """A body that held `held` bytes is done with them."""
        self.used -= max(0, held - self.share)
