"""Webhook events and subscriptions as callers see them: the event types, a subscription's
input and answer, a delivery's state. The outbox and its fan-out are ``db/webhooks.py``; the
subscriptions' resource is ``webhooks.py``; the workers' sending is ``worker/delivery.py``.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Literal, get_args
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memvault.models import Identifier, Title

EventType = Literal[
    "memory.created",
    "memory.updated",
    "memory.deleted",
    "conversation.turn_added",
    "fact.recorded",
    "fact.superseded",
    "goal.completed",
    "user.erased",
    "tenant.erased",
    "job.finished",
    "job.failed",
    "review.opened",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
# Events whose data names a memory whose text a subscription with ``include_content`` gets,
# opened when the event is sent (the outbox never holds it).
WITH_CONTENT = frozenset({"memory.created", "memory.updated", "conversation.turn_added"})
DeliveryState = Literal["pending", "delivered", "dead"]
SECRET_PREFIX = "whsec_"


def _url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value


def _secret(value: str) -> str:
    try:
        key = base64.b64decode(value.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be whsec_ followed by base64") from None
    if not 24 <= len(key) <= 64:
        raise ValueError("must hold 24 to 64 bytes")
    return value


Url = Annotated[str, Field(min_length=8, max_length=2_000), AfterValidator(_url)]
Secret = Annotated[str, Field(max_length=200), AfterValidator(_secret)]
EventTypes = Annotated[list[EventType], Field(min_length=1, max_length=len(EVENT_TYPES))]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookInput(_Input):
    """Body of POST /v1/webhooks."""

    url: Url
    event_types: EventTypes | None = Field(default=None, description="unset: every type")
    app_id: Identifier | None = Field(default=None, description="only this app's events")
    user_id: Identifier | None = Field(default=None, description="only this user's events")
    include_content: bool = Field(
        default=False,
        description="memory and turn events carry the text, opened when sent (never stored in "
        "the outbox)",
    )
    enabled: bool = True
    description: Title | None = None
    secret: Secret | None = Field(
        default=None, description="whsec_ + base64 of 24-64 bytes; unset: one is made"
    )


class WebhookUpdate(_Input):
    """Body of PATCH /v1/webhooks/{webhook_id}: the fields given change."""

    url: Url | None = None
    event_types: EventTypes | None = None
    app_id: Identifier | None = None
    user_id: Identifier | None = None
    include_content: bool | None = None
    enabled: bool | None = None
    description: Title | None = None


class Webhook(BaseModel):
    id: UUID
    url: str
    event_types: list[str] | None
    app_id: str | None
    user_id: str | None
    include_content: bool
    enabled: bool
    description: str | None
    created_at: datetime
    updated_at: datetime


class WebhookCreated(Webhook):
    secret: str = Field(description="the signing secret: shown here once, never again")


class WebhookList(BaseModel):
    results: list[Webhook]


class Delivery(BaseModel):
    id: int
    event_id: UUID
    event_type: str
    user_id: str | None
    state: DeliveryState
    attempts: int
    last_status: int | None = Field(description="the endpoint's last HTTP status, if it answered")
    last_error: str | None
    occurred_at: datetime
    available_at: datetime
    delivered_at: datetime | None


class DeliveryParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: DeliveryState | None = None
    limit: int = Field(default=50, ge=1, le=500)


class DeliveryPage(BaseModel):
    results: list[Delivery]


class ReplayRequest(_Input):
    """Body of POST /v1/webhooks/{webhook_id}/replay."""

    # The largest integer JSON readers (JavaScript's included) hold exactly; ids are far below.
    delivery_id: int | None = Field(
        default=None,
        ge=1,
        le=9_007_199_254_740_991,
        description="one delivery; unset: every dead-lettered one",
    )


class Replayed(BaseModel):
    replayed: int
