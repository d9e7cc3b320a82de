"""Sends webhook deliveries from the outbox: a worker calls ``tick`` in its loop.

A tick claims a batch (each the head of its subscription-and-user line, with a lease: a worker
killed mid-request leaves its claims to the next worker once the lease runs out, so an event
may arrive twice, never zero times; receivers de-duplicate by ``webhook-id``), sends them at
once, and records each outcome: a 2xx is delivered; anything else (another status, a refused
address, a timeout, a connection error) is retried after an exponential backoff with jitter,
until ``webhook_max_attempts`` tries or ``webhook_max_age_s`` after the event, when it is dead
(replayable from the API and the dashboard). Content, for a subscription that asks for it, is
opened here, just before sending; the outbox never holds it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import httpx

from memvault import tracing
from memvault.crypto.envelope import Sealed
from memvault.db import store
from memvault.db import webhooks as db
from memvault.db.records import DeliveryRow, SubscriptionRow
from memvault.db.units import reading, transaction
from memvault.errors import KeyMismatch
from memvault.events import WITH_CONTENT
from memvault.keys.sealing import open_content
from memvault.metrics import WEBHOOK_DELIVERIES
from memvault.outbound import Guard, Refused, client, post, secret_aad, signed_headers

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)
# Delivered rows past their retention are purged this often.
_PURGE_EVERY_S = 300.0


@dataclass(frozen=True)
class Outcome:
    status: int | None
    error: str | None  # None: delivered
    refused: bool = False


class Dispatcher:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._settings = backend.settings
        self._guard = Guard.from_settings(backend.settings)
        self._http: httpx.AsyncClient | None = None
        self._next_purge = time.monotonic()
        # When the soonest retry this worker scheduled falls due (monotonic clock).
        self._retry_at = float("inf")

    def next_retry_in(self) -> float:
        """Seconds until the soonest retry this worker scheduled (at least 10 ms)."""
        return max(0.01, self._retry_at - time.monotonic())

    @property
    def lease_s(self) -> float:
        # A claim must outlive its request, or a slow endpoint would get it twice at once.
        return max(self._settings.worker_lease_s, 2 * self._settings.webhook_timeout_s)

    async def tick(self) -> int:
        """Send one batch of due deliveries; how many were attempted (0: idle)."""
        engine = self._backend.engine
        async with transaction(engine, every_tenant=True) as conn:
            claimed = await db.claim(conn, self._settings.webhook_batch, self.lease_s)
            owners = {(d.tenant_id, d.subscription_id) for d in claimed}
            subscriptions = await db.subscriptions_by_id(conn, sorted(owners, key=str))
        if not claimed:
            await self._purge()
            if self._retry_at <= time.monotonic():
                self._retry_at = float("inf")
            return 0
        outcomes = await asyncio.gather(
            *(self._send(d, subscriptions[(d.tenant_id, d.subscription_id)]) for d in claimed)
        )
        async with transaction(engine, every_tenant=True) as conn:
            for delivery, outcome in zip(claimed, outcomes, strict=True):
                await self._record(conn, delivery, outcome)
        return len(claimed)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- one delivery ---------------------------------------------------------------------

    async def _send(self, delivery: DeliveryRow, subscription: SubscriptionRow) -> Outcome:
        # The event type and attempt say what was tried; the URL, ids and body stay out.
        with tracing.span(
            "memvault.webhook.deliver",
            event_type=delivery.event_type,
            attempt=delivery.attempts,
        ) as traced:
            outcome = await self._attempt(delivery, subscription)
            traced.set(
                delivered=outcome.error is None,
                refused=outcome.refused,
                **({"status_code": outcome.status} if outcome.status is not None else {}),
            )
        return outcome

    async def _attempt(self, delivery: DeliveryRow, subscription: SubscriptionRow) -> Outcome:
        try:
            target = await self._guard.resolve(subscription.url)
            body = await self.body(delivery, subscription)
            secret = self._secret(subscription)
        except Refused as exc:
            return Outcome(None, str(exc), refused=True)
        except KeyMismatch:
            return Outcome(None, "the subscription's secret cannot be opened")
        message_id = str(delivery.event_id)
        headers = signed_headers(secret, message_id, int(time.time()), body)
        if self._http is None:
            self._http = client(self._settings)
        try:
            status = await post(self._http, target, body, headers)
        except httpx.HTTPError as exc:
            return Outcome(None, type(exc).__name__)
        if 200 <= status < 300:
            return Outcome(status, None)
        return Outcome(status, f"HTTP {status}")

    def _secret(self, subscription: SubscriptionRow) -> str:
        sealed = Sealed(
            subscription.secret_ciphertext, subscription.secret_nonce, subscription.secret_key_id
        )
        return self._backend.keys.current().open(
            sealed, secret_aad(subscription.tenant_id, subscription.id)
        )

    async def body(self, delivery: DeliveryRow, subscription: SubscriptionRow) -> bytes:
        """The request body: the event's envelope, its data with the text where asked for."""
        data: dict[str, Any] = dict(delivery.data)
        if subscription.include_content and delivery.event_type in WITH_CONTENT:
            data["content"] = await self._content(delivery)
        envelope = {
            "id": str(delivery.event_id),
            "type": delivery.event_type,
            "timestamp": delivery.occurred_at.astimezone(UTC).isoformat(),
            "data": data,
        }
        return json.dumps(envelope, separators=(",", ":"), sort_keys=True).encode()

    async def _content(self, delivery: DeliveryRow) -> str | None:
        """The memory's text as it is now (None once it is gone)."""
        memory_id, tenant_id = delivery.data.get("memory_id"), delivery.tenant_id
        if not memory_id:
            return None
        async with reading(self._backend.engine, tenant_id) as conn:
            row = await store.fetch_memory(conn, tenant_id, UUID(memory_id), delivery.user_id)
        if row is None:
            return None
        keys = self._backend.keys
        await self._backend.load_tenant_keys((tenant_id,))
        return open_content(keys, tenant_id, row.id, row.ciphertext, row.nonce, row.key_id)

    async def _record(self, conn: Any, delivery: DeliveryRow, outcome: Outcome) -> None:
        if outcome.error is None:
            assert outcome.status is not None
            await db.delivered(conn, delivery, outcome.status)
            WEBHOOK_DELIVERIES.labels("delivered").inc()
            return
        retry_in = self.retry_in(delivery)
        if retry_in is not None:
            self._retry_at = min(self._retry_at, time.monotonic() + retry_in)
        await db.failed(
            conn, delivery, status=outcome.status, error=outcome.error, retry_in_s=retry_in
        )
        label = "refused" if outcome.refused else ("dead" if retry_in is None else "retry")
        WEBHOOK_DELIVERIES.labels(label).inc()
        log.warning(
            "webhook delivery failed (%s): subscription %s, event %s, attempt %d%s",
            outcome.error,
            delivery.subscription_id,
            delivery.event_id,
            delivery.attempts,
            "; dead-lettered" if retry_in is None else f"; next try in {retry_in:.1f} s",
        )

    def retry_in(self, delivery: DeliveryRow) -> float | None:
        """Seconds to the next try (exponential, capped, with jitter: endpoints coming back
        are not hit by every worker at once), or None when it is dead."""
        settings = self._settings
        age = (datetime.now(UTC) - delivery.occurred_at).total_seconds()
        if delivery.attempts >= settings.webhook_max_attempts or age >= settings.webhook_max_age_s:
            return None
        ceiling = min(
            settings.webhook_backoff_cap_s,
            settings.webhook_backoff_base_s * 2 ** (delivery.attempts - 1),
        )
        return float(ceiling * random.uniform(0.5, 1.0))

    async def _purge(self) -> None:
        if time.monotonic() < self._next_purge:
            return
        self._next_purge = time.monotonic() + _PURGE_EVERY_S
        before = datetime.fromtimestamp(time.time() - self._settings.webhook_retention_s, UTC)
        async with transaction(self._backend.engine, every_tenant=True) as conn:
            await db.purge_delivered(conn, before)
