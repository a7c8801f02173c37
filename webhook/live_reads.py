"""Reads from the API server on the admission path, for the one question the watched snapshot
cannot answer yet: an ElasticQuota naming a parent the watch has not shown.

An ElasticQuota tree applied in one go (`kubectl apply -f`, a GitOps tool) sends a child about
20 ms after its parent, and Koordinator's check refuses a child whose parent is not in the tree
(`not find parentInfo in quotaInfoMap`). Before refusing, the quota webhooks read that parent from
the API server once, and judge against the snapshot with it added. Bounded: only CREATE and UPDATE
of an ElasticQuota whose parent is missing, one read per request, `LOOKUP_TIMEOUT`, counted in
`colocate_webhook_live_reads_total{result}` and logged; a read that fails leaves the snapshot as
it was (the request is then judged, and refused, as before).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from prometheus_client import Counter

from colocate.cluster.lookup import ObjectLookup
from policies.admission.elastic_quota import missing_parent
from policies.admission.plugin import CREATE, UPDATE
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.constants import ELASTIC_QUOTA_KIND
from webhook.review import MalformedReview, parse_review

log = logging.getLogger("colocate.lookup")

#: the label values of `colocate_webhook_live_reads_total`
RESULTS: Final = ("found", "missing", "error")


class LiveReads:
    """Adds to a request's snapshot the quota parent it names and the watch has not shown yet."""

    def __init__(self, lookup: ObjectLookup, reads: Counter) -> None:
        self.lookup, self.reads = lookup, reads

    @staticmethod
    def wanted(kind: str) -> bool:
        """Whether requests for `kind` may need a read (the others never pay for a parse)."""
        return kind == ELASTIC_QUOTA_KIND

    async def snapshot_for(self, body: bytes, snapshot: ClusterSnapshot) -> ClusterSnapshot:
        try:
            _, request = parse_review(body)
        except MalformedReview:
            return snapshot  # answered as malformed by the review itself
        if request.operation not in (CREATE, UPDATE) or not isinstance(request.object, dict):
            return snapshot
        parent = missing_parent(request.object, snapshot)
        if parent is None:
            return snapshot
        try:
            found = await asyncio.to_thread(self.lookup.find, ELASTIC_QUOTA_KIND, parent)
        except Exception as exc:  # noqa: BLE001 - no answer in time, refused: judge without it
            self.reads.labels("error").inc()
            log.warning("parent quota %s is not in the watched state and could not be read: %s", parent, exc)
            return snapshot
        self.reads.labels("found" if found is not None else "missing").inc()
        log.info(
            "parent quota %s is not in the watched state yet; read from the API server: %s",
            parent,
            "found" if found is not None else "not found",
        )
        return snapshot.with_objects(ELASTIC_QUOTA_KIND, [found]) if found is not None else snapshot
