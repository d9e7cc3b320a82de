"""Gauges that need the database (queue depth, worker heartbeat age), refreshed in the
background so ``/metrics`` answers from memory at once, even while the store hangs."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from memvault.admin import AsyncAdmin
from memvault.errors import MemvaultError
from memvault.metrics import QUEUE_DEPTH, WORKER_HEARTBEAT_AGE

log = logging.getLogger(__name__)
REFRESH_S = 5.0


async def refresh(admin: AsyncAdmin) -> None:
    counts = await admin.queue_counts()
    age = await admin.worker_heartbeat_age()
    for status in ("queued", "processing", "done", "failed"):
        QUEUE_DEPTH.labels(status).set(counts.get(status, 0))
    WORKER_HEARTBEAT_AGE.set(-1 if age is None else age)


async def keep_fresh(admin: AsyncAdmin, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            async with asyncio.timeout(REFRESH_S):
                await refresh(admin)
        except (TimeoutError, MemvaultError) as exc:
            # The gauges keep their last values; the outage shows in the store counters.
            log.debug("gauge refresh skipped: %s", type(exc).__name__)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=REFRESH_S)
