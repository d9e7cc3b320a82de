"""``Webhooks``: one tenant's webhook subscriptions, their deliveries, and replay.

A subscription names a URL, which event types it wants (all by default), optionally one app's
or one user's events only, and whether memory and turn events carry their text. Its signing
secret is made here unless given, answered once by ``create_webhook`` (and
``rotate_webhook_secret``), and kept sealed under the master key, bound to the tenant and the
subscription: no other answer shows it. The URL is checked when it is set, as the workers
check it before each request (``outbound.Guard``): a target the operator does not allow is a
422 here rather than a dead letter later.
"""

from __future__ import annotations

import builtins
import uuid
from typing import Any
from uuid import UUID

from memvault.context import TenantContext
from memvault.db import webhooks as db
from memvault.db.records import DeliveryRow, SubscriptionRow
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.events import (
    Delivery,
    DeliveryParams,
    Replayed,
    ReplayRequest,
    Webhook,
    WebhookCreated,
    WebhookInput,
    WebhookUpdate,
)
from memvault.outbound import Guard, Refused, new_secret, secret_aad
from memvault.validation import parse_id, validated


class Webhooks:
    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id

    @scoped_to_tenant
    async def create_webhook(
        self,
        url: str,
        *,
        event_types: builtins.list[str] | None = None,
        app_id: str | None = None,
        user_id: str | None = None,
        include_content: bool = False,
        enabled: bool = True,
        description: str | None = None,
        secret: str | None = None,
    ) -> WebhookCreated:
        """Subscribe a URL to this tenant's events; the answer holds the signing secret, shown
        this once."""
        given = validated(
            WebhookInput,
            url=url,
            event_types=event_types,
            app_id=app_id,
            user_id=user_id,
            include_content=include_content,
            enabled=enabled,
            description=description,
            secret=secret,
        )
        await self._check(given.url)
        ident, secret = uuid.uuid4(), given.secret or new_secret()
        values = {
            "tenant_id": self.tenant_id,
            "id": ident,
            "url": given.url,
            "event_types": given.event_types,
            "app_id": given.app_id,
            "filter_user_id": given.user_id,
            "include_content": given.include_content,
            "enabled": given.enabled,
            "description": given.description,
            **self._sealed(ident, secret),
        }
        async with transaction(self._backend.engine) as conn:
            row = await db.insert_subscription(conn, values)
        return WebhookCreated(**_public(row).model_dump(), secret=secret)

    @scoped_to_tenant
    async def list_webhooks(self) -> builtins.list[Webhook]:
        """This tenant's subscriptions, oldest first (no secrets)."""
        async with reading(self._backend.engine) as conn:
            rows = await db.list_subscriptions(conn, self.tenant_id)
        return [_public(r) for r in rows]

    @scoped_to_tenant
    async def get_webhook(self, webhook_id: UUID | str) -> Webhook:
        async with reading(self._backend.engine) as conn:
            return _public(await self._fetch(conn, _id(webhook_id)))

    @scoped_to_tenant
    async def update_webhook(
        self,
        webhook_id: UUID | str,
        *,
        url: str | None = None,
        event_types: builtins.list[str] | None = None,
        app_id: str | None = None,
        user_id: str | None = None,
        include_content: bool | None = None,
        enabled: bool | None = None,
        description: str | None = None,
    ) -> Webhook:
        """Change the fields given (a filter, once set, is changed, not cleared: subscribe
        anew for another scope)."""
        ident = _id(webhook_id)
        change = validated(
            WebhookUpdate,
            url=url,
            event_types=event_types,
            app_id=app_id,
            user_id=user_id,
            include_content=include_content,
            enabled=enabled,
            description=description,
        )
        values: dict[str, Any] = change.model_dump(exclude_none=True)
        if "user_id" in values:
            values["filter_user_id"] = values.pop("user_id")
        if change.url is not None:
            await self._check(change.url)
        async with transaction(self._backend.engine) as conn:
            if not values:
                return _public(await self._fetch(conn, ident))
            row = await db.update_subscription(conn, self.tenant_id, ident, values)
        if row is None:
            raise _missing(ident)
        return _public(row)

    @scoped_to_tenant
    async def delete_webhook(self, webhook_id: UUID | str) -> None:
        """Unsubscribe: the subscription and its deliveries, sent or not, go."""
        ident = _id(webhook_id)
        async with transaction(self._backend.engine) as conn:
            if not await db.delete_subscription(conn, self.tenant_id, ident):
                raise _missing(ident)

    @scoped_to_tenant
    async def rotate_webhook_secret(self, webhook_id: UUID | str) -> WebhookCreated:
        """A new signing secret, answered this once; the old one signs nothing from now."""
        ident, secret = _id(webhook_id), new_secret()
        async with transaction(self._backend.engine) as conn:
            row = await db.update_subscription(
                conn, self.tenant_id, ident, self._sealed(ident, secret)
            )
        if row is None:
            raise _missing(ident)
        return WebhookCreated(**_public(row).model_dump(), secret=secret)

    @scoped_to_tenant
    async def webhook_deliveries(
        self, webhook_id: UUID | str, *, state: str | None = None, limit: int = 50
    ) -> builtins.list[Delivery]:
        """A subscription's deliveries, newest first, optionally in one state."""
        ident = _id(webhook_id)
        query = validated(DeliveryParams, state=state, limit=limit)
        async with reading(self._backend.engine) as conn:
            await self._fetch(conn, ident)
            rows = await db.list_deliveries(
                conn, self.tenant_id, ident, state=query.state, limit=query.limit
            )
        return [_delivery(r) for r in rows]

    @scoped_to_tenant
    async def replay_webhook(
        self, webhook_id: UUID | str, *, delivery_id: int | None = None
    ) -> Replayed:
        """Send again one delivery (whatever its state), or every dead-lettered one."""
        ident = _id(webhook_id)
        request = validated(ReplayRequest, delivery_id=delivery_id)
        async with transaction(self._backend.engine) as conn:
            await self._fetch(conn, ident)
            count = await db.replay(conn, self.tenant_id, ident, request.delivery_id)
        if request.delivery_id is not None and not count:
            raise NotFound(
                "No such delivery for this webhook.", details={"id": request.delivery_id}
            )
        return Replayed(replayed=count)

    # --- helpers --------------------------------------------------------------------------

    async def _check(self, url: str) -> None:
        try:
            await Guard.from_settings(self._backend.settings).resolve(url)
        except Refused as exc:
            raise InvalidInput(str(exc), details={"field": "url"}) from None

    def _sealed(self, ident: UUID, secret: str) -> dict[str, Any]:
        sealed = self._backend.keys.current().seal(secret, secret_aad(self.tenant_id, ident))
        return {
            "secret_ciphertext": sealed.ciphertext,
            "secret_nonce": sealed.nonce,
            "secret_key_id": sealed.key_id,
        }

    async def _fetch(self, conn: Any, ident: UUID) -> SubscriptionRow:
        row = await db.get_subscription(conn, self.tenant_id, ident)
        if row is None:
            raise _missing(ident)
        return row


def _id(webhook_id: UUID | str) -> UUID:
    return parse_id(webhook_id, field="webhook_id")


def _missing(ident: UUID) -> NotFound:
    return NotFound("No such webhook in this tenant.", details={"id": str(ident)})


def _public(row: SubscriptionRow) -> Webhook:
    return Webhook(
        id=row.id,
        url=row.url,
        event_types=row.event_types,
        app_id=row.app_id,
        user_id=row.filter_user_id,
        include_content=row.include_content,
        enabled=row.enabled,
        description=row.description,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _delivery(row: DeliveryRow) -> Delivery:
    return Delivery(
        id=row.id,
        event_id=row.event_id,
        event_type=row.event_type,
        user_id=row.user_id or None,
        state=row.state,
        attempts=row.attempts,
        last_status=row.last_status,
        last_error=row.last_error,
        occurred_at=row.occurred_at,
        available_at=row.available_at,
        delivered_at=row.delivered_at,
    )
