"""Writes that run once however often they are sent: the ``Idempotency-Key`` header.

A client that loses its connection mid-write (the API host died, a proxy gave up) cannot tell
whether the write was stored. Sent with a key, the same request is safe to send again: the
first one claims the key in PostgreSQL, so every API host sees it; its answer is kept, sealed
like the memory content it may hold, for ``idempotency_keep_s`` and answered to each retry.
A retry that arrives while the first still runs is told to wait (409 ``request_in_progress``
with ``Retry-After``); a claim is held on a short lease its request renews while it runs, so
one whose server died before its request wrote frees itself within seconds and the retry then
does the work. The same key sent with another request (method, path or body) is refused (422
``idempotency_key_reused``).

The request's first transaction that writes (of its tenant; not a cache fill) marks the claim
as written in that same transaction (``db.units.keyed_request``): the write and the mark
commit together. A claim so marked never lapses into a second run. A retry of a request whose
answer was not kept (its server died between the commit and keeping the answer, or the
request failed after it wrote) is answered 409 ``request_done_answer_lost`` once the lease has
lapsed: the clients raise it and never resend it, and the caller reads what was written. The
first answer is not rebuilt (what a write answers differs per route). A request that fails
before it wrote frees its key: its retry runs it again.

What is not covered: a write of several transactions cut off between two of them has stored
part of its work, and its retry (``request_done_answer_lost``) does not finish the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memvault.context import TenantContext
from memvault.db import idempotency as db
from memvault.db.units import keyed_request, transaction
from memvault.errors import (
    IdempotencyKeyReused,
    RequestDoneAnswerLost,
    RequestInProgress,
    StoreUnavailable,
)
from memvault.idempotency_key import HEADER, checked

log = logging.getLogger(__name__)
# A running claim's lease, renewed while its request works: a dead server's claim lapses in
# about this long, which is how long a retry of its request may be told to wait.
LEASE_S = 10.0
RENEW_EVERY_S = 3.0
TABLE = "idempotent_writes"


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any


class Once:
    """One keyed request: the first answer when this is a retry (``replay``), else the slot the
    request keeps its answer in (``keep``)."""

    def __init__(self, replay: Answer | None) -> None:
        self.replay = replay
        self.kept: Answer | None = None

    def keep(self, status: int, body: Any) -> None:
        self.kept = Answer(status, body)


class WriteOnce:
    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id

    @contextlib.asynccontextmanager
    async def run(
        self, key: str, *, fingerprint: bytes, user_id: str | None
    ) -> AsyncIterator[Once]:
        """Run the block once for ``key``: a retry of a finished request gets ``replay``."""
        key = checked(key)
        await self._backend.load_tenant_keys((self.tenant_id,))
        async with transaction(self._backend.engine, self.tenant_id) as conn:
            held = await db.claim(
                conn,
                self.tenant_id,
                key,
                user_id=user_id or "",
                fingerprint=fingerprint,
                lease_s=LEASE_S,
                keep_s=self._backend.settings.idempotency_keep_s,
            )
        if held is not None:
            if held.fingerprint != fingerprint:
                raise IdempotencyKeyReused(
                    f"This {HEADER} was sent before with another request; "
                    "make a new key for a new request.",
                    details={"field": HEADER},
                )
            if held.status is None and held.committed_at is not None and held.lapsed:
                raise RequestDoneAnswerLost(
                    f"The request sent with this {HEADER} was run and wrote to the store, "
                    "but its answer was lost (its server stopped, or the request failed, after "
                    "the write). Do not send it again: read what it wrote instead (list or get).",
                    details={"field": HEADER},
                )
            if held.status is None:
                left = (held.lease_until - datetime.now(UTC)).total_seconds()
                raise RequestInProgress(
                    f"A request with this {HEADER} is still running; "
                    "send it again in a moment to get its answer.",
                    retry_after=min(max(left, 1.0), LEASE_S),
                )
            body = self._context.open_row(TABLE, (key,), held)
            yield Once(Answer(held.status, body))
            return
        once = Once(None)
        renewing = asyncio.create_task(self._renew(key))
        try:
            # Started after the renewing task, whose transactions are no work of the request.
            with keyed_request(self.tenant_id, key):
                yield once
        except BaseException:
            renewing.cancel()
            await asyncio.shield(self._settle(key, None))
            raise
        renewing.cancel()
        try:
            await asyncio.shield(self._settle(key, once.kept))
        except StoreUnavailable:
            # The write is done and its answer goes back; only a retry of it would miss the
            # kept answer (it is told the request was done, by the claim its write marked).
            # A 503 here would tell the caller nothing was done, which is not so.
            log.warning("a keyed write's answer could not be kept; the store did not answer")

    async def _renew(self, key: str) -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY_S)
            async with transaction(self._backend.engine, self.tenant_id) as conn:
                await db.renew(conn, self.tenant_id, key, LEASE_S)

    async def _settle(self, key: str, kept: Answer | None) -> None:
        async with transaction(self._backend.engine, self.tenant_id) as conn:
            if kept is None:
                await db.release(conn, self.tenant_id, key)
            else:
                sealed = self._context.seal_row(TABLE, (key,), kept.body)
                await db.keep(conn, self.tenant_id, key, kept.status, sealed)


__all__ = ["Answer", "Once", "WriteOnce"]
