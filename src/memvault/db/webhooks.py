"""Webhook subscriptions and their deliveries (the outbox), and every statement on them.

An event is fanned out when it happens: one ``webhook_deliveries`` row per subscription of the
tenant that matches it (type, app, user), inserted by a statement of the transaction that makes
the change, so there is no event without its change and no change without its event. With no
subscription the fan-out inserts nothing: a memory's own statement carries it as one more CTE
(no round trip), the other events pay one small statement.

Deliveries are claimed like embedding jobs (``FOR UPDATE SKIP LOCKED`` and a lease: a worker
killed mid-delivery leaves its claim to the next worker once the lease runs out), one line at a
time per (subscription, user): a delivery is claimable only while no earlier one of its line is
still pending, so a user's events reach each endpoint in the order they happened.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import DeliveryRow, SubscriptionRow
from memvault.db.tables import (
    JOBS_CHANNEL,
    memories,
    webhook_deliveries,
    webhook_subscriptions,
)

_s = webhook_subscriptions.c
_d = webhook_deliveries.c
_FANOUT_COLUMNS = ("tenant_id", "subscription_id", "event_id", "event_type", "user_id", "data")


# --- fan-out --------------------------------------------------------------------------------


def fanout(events: sa.CTE) -> sa.Insert:
    """Deliveries for ``events`` (columns ``tenant_id``, ``event_id``, ``event_type``,
    ``user_id``, ``app_id``, ``data``), one per matching enabled subscription."""
    e = events.c
    matches = sa.and_(
        _s.tenant_id == e.tenant_id,
        _s.enabled,
        sa.or_(_s.event_types.is_(None), e.event_type == sa.any_(_s.event_types)),
        sa.or_(_s.app_id.is_(None), _s.app_id == e.app_id),
        sa.or_(_s.filter_user_id.is_(None), _s.filter_user_id == e.user_id),
    )
    rows = sa.select(
        e.tenant_id, _s.id, e.event_id, e.event_type, sa.func.coalesce(e.user_id, ""), e.data
    ).select_from(events.join(webhook_subscriptions, matches))
    return webhook_deliveries.insert().from_select(list(_FANOUT_COLUMNS), rows)


def memory_events(source: sa.CTE, event_type: str) -> sa.CTE:
    """The events of the memories rows ``source`` returned (inserted, updated, deleted):
    ``gen_random_uuid()`` makes the CTE materialise, so every subscription gets one id."""
    c = source.c
    data = sa.func.jsonb_build_object(
        "memory_id", c.id,
        "user_id", c.user_id,
        "app_id", c.app_id,
        "memory_type", c.memory_type,
        "source", c.source,
        "created_at", c.created_at,
        "updated_at", c.updated_at,
    )  # fmt: skip
    return sa.select(
        c.tenant_id,
        sa.func.gen_random_uuid().label("event_id"),
        sa.literal(event_type, sa.Text).label("event_type"),
        c.user_id,
        c.app_id,
        data.label("data"),
    ).cte(f"events_{event_type.replace('.', '_')}")


def job_events(jobs: sa.CTE, event_type: str) -> sa.CTE:
    """The events of the embedding jobs ``jobs`` returned (``tenant_id``, ``id``,
    ``memory_id``, ``kind``, ``status``), with their memories' owners."""
    j, m = jobs.c, memories.c
    data = sa.func.jsonb_build_object(
        "job_id", j.id,
        "memory_id", j.memory_id,
        "kind", j.kind,
        "status", j.status,
        "user_id", m.user_id,
        "app_id", m.app_id,
    )  # fmt: skip
    return (
        sa.select(
            j.tenant_id,
            sa.func.gen_random_uuid().label("event_id"),
            sa.literal(event_type, sa.Text).label("event_type"),
            m.user_id,
            m.app_id,
            data.label("data"),
        )
        .select_from(jobs.join(memories, sa.and_(m.tenant_id == j.tenant_id, m.id == j.memory_id)))
        .where(j.status.in_(("done", "failed")))
        .cte(f"events_{event_type.replace('.', '_')}")
    )


def memory_data(row: Any) -> dict[str, Any]:
    """A memory row's event data, as ``memory_events`` builds it in SQL."""
    return {
        "memory_id": str(row.id),
        "user_id": row.user_id,
        "app_id": row.app_id,
        "memory_type": row.memory_type,
        "source": row.source,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """An event to fan out: its type, the tenant, whose it is, and its data (no content)."""

    tenant_id: str
    event_type: str
    data: Mapping[str, Any]
    user_id: str | None = None
    app_id: str | None = None


_EVENT_COLUMNS = (
    sa.column("tenant_id", sa.Text),
    sa.column("event_id", sa.Uuid),
    sa.column("event_type", sa.Text),
    sa.column("user_id", sa.Text),
    sa.column("app_id", sa.Text),
    sa.column("data", JSONB),
)


def _emit() -> sa.Select[Any]:
    # The events travel as one JSON array, so the statement has one shape whatever their
    # number (a VALUES list is compiled again on every call; a batch's graph writes emit).
    given = (
        sa.func.jsonb_to_recordset(sa.bindparam("events", type_=JSONB))
        .table_valued(*_EVENT_COLUMNS)
        .render_derived(name="given", with_types=True)
    )
    fanned = fanout(sa.select(given).cte("event")).returning(_d.id).cte("fanned")
    return sa.select(sa.func.pg_notify(JOBS_CHANNEL, "")).select_from(fanned).limit(1)


_EMIT = _emit()


async def emit(conn: AsyncConnection, events: Sequence[Event]) -> None:
    """Fan events out in ``conn``'s transaction (one statement), waking the workers when any
    matched a subscription."""
    if not events:
        return
    rows = [
        {
            "tenant_id": e.tenant_id,
            "event_id": str(uuid.uuid4()),
            "event_type": e.event_type,
            "user_id": e.user_id,
            "app_id": e.app_id,
            "data": dict(e.data),
        }
        for e in events
    ]
    await conn.execute(_EMIT, {"events": rows})


# --- subscriptions --------------------------------------------------------------------------


async def insert_subscription(conn: AsyncConnection, values: Mapping[str, Any]) -> SubscriptionRow:
    statement = webhook_subscriptions.insert().values(**values).returning(webhook_subscriptions)
    return SubscriptionRow.from_row((await conn.execute(statement)).one())


async def list_subscriptions(conn: AsyncConnection, tenant_id: str) -> list[SubscriptionRow]:
    query = (
        sa.select(webhook_subscriptions)
        .where(_s.tenant_id == tenant_id)
        .order_by(_s.created_at, _s.id)
    )
    return [SubscriptionRow.from_row(r) for r in await conn.execute(query)]


async def get_subscription(
    conn: AsyncConnection, tenant_id: str, subscription_id: uuid.UUID
) -> SubscriptionRow | None:
    query = sa.select(webhook_subscriptions).where(
        _s.tenant_id == tenant_id, _s.id == subscription_id
    )
    row = (await conn.execute(query)).one_or_none()
    return None if row is None else SubscriptionRow.from_row(row)


async def update_subscription(
    conn: AsyncConnection, tenant_id: str, subscription_id: uuid.UUID, values: Mapping[str, Any]
) -> SubscriptionRow | None:
    statement = (
        webhook_subscriptions.update()
        .where(_s.tenant_id == tenant_id, _s.id == subscription_id)
        .values(**values, updated_at=sa.func.now())
        .returning(webhook_subscriptions)
    )
    row = (await conn.execute(statement)).one_or_none()
    return None if row is None else SubscriptionRow.from_row(row)


async def delete_subscription(
    conn: AsyncConnection, tenant_id: str, subscription_id: uuid.UUID
) -> bool:
    statement = (
        webhook_subscriptions.delete()
        .where(_s.tenant_id == tenant_id, _s.id == subscription_id)
        .returning(_s.id)
    )
    return (await conn.execute(statement)).one_or_none() is not None


async def subscriptions_by_id(
    conn: AsyncConnection, keys: Sequence[tuple[str, uuid.UUID]]
) -> dict[tuple[str, uuid.UUID], SubscriptionRow]:
    if not keys:
        return {}
    query = sa.select(webhook_subscriptions).where(sa.tuple_(_s.tenant_id, _s.id).in_(keys))
    rows = [SubscriptionRow.from_row(r) for r in await conn.execute(query)]
    return {(r.tenant_id, r.id): r for r in rows}


# --- deliveries as a tenant sees them -------------------------------------------------------


async def list_deliveries(
    conn: AsyncConnection,
    tenant_id: str,
    subscription_id: uuid.UUID,
    *,
    state: str | None,
    limit: int,
) -> list[DeliveryRow]:
    query = (
        sa.select(webhook_deliveries)
        .where(_d.tenant_id == tenant_id, _d.subscription_id == subscription_id)
        .order_by(_d.id.desc())
        .limit(limit)
    )
    if state is not None:
        query = query.where(_d.state == state)
    return [DeliveryRow.from_row(r) for r in await conn.execute(query)]


async def replay(
    conn: AsyncConnection,
    tenant_id: str,
    subscription_id: uuid.UUID,
    delivery_id: int | None,
) -> int:
    """Queue a delivery again (one, whatever its state, or every dead one of the
    subscription): attempts start over; answers how many."""
    which = _d.id == delivery_id if delivery_id is not None else _d.state == "dead"
    statement = (
        webhook_deliveries.update()
        .where(_d.tenant_id == tenant_id, _d.subscription_id == subscription_id, which)
        .values(
            state="pending",
            attempts=0,
            available_at=sa.func.now(),
            locked_until=None,
            delivered_at=None,
        )
        .returning(_d.id)
    )
    count = len((await conn.execute(statement)).all())
    if count:
        await conn.execute(sa.select(sa.func.pg_notify(JOBS_CHANNEL, "")))
    return count


async def delete_deliveries(conn: AsyncConnection, tenant_id: str, user_id: str | None) -> int:
    """An erasure's step: the user's deliveries (every one of the tenant's, ``user_id`` None)."""
    statement = webhook_deliveries.delete().where(_d.tenant_id == tenant_id)
    if user_id is not None:
        statement = statement.where(_d.user_id == user_id)
    return len((await conn.execute(statement.returning(_d.id))).all())


async def purge_delivered(conn: AsyncConnection, before: datetime) -> int:
    """Delivered rows older than ``before`` (their event ids were handed over)."""
    statement = webhook_deliveries.delete().where(_d.state == "delivered", _d.delivered_at < before)
    return len((await conn.execute(statement.returning(_d.id))).all())


# --- the workers' side ----------------------------------------------------------------------


async def claim(conn: AsyncConnection, limit: int, lease_s: float) -> list[DeliveryRow]:
    """Up to ``limit`` due deliveries, each the head of its (subscription, user) line, leased
    for ``lease_s`` (each claim counts as an attempt)."""
    earlier = webhook_deliveries.alias("earlier")
    blocked = sa.exists().where(
        earlier.c.tenant_id == _d.tenant_id,
        earlier.c.subscription_id == _d.subscription_id,
        earlier.c.user_id == _d.user_id,
        earlier.c.state == "pending",
        earlier.c.id < _d.id,
    )
    free = sa.or_(_d.locked_until.is_(None), _d.locked_until < sa.func.now())
    # A disabled subscription's deliveries wait for it to be enabled again.
    enabled = sa.exists().where(
        _s.tenant_id == _d.tenant_id, _s.id == _d.subscription_id, _s.enabled
    )
    picked = (
        sa.select(_d.tenant_id, _d.id)
        .where(_d.state == "pending", _d.available_at <= sa.func.now(), free, ~blocked, enabled)
        .order_by(_d.available_at, _d.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("picked")
    )
    lease = sa.func.make_interval(0, 0, 0, 0, 0, 0, lease_s)
    statement = (
        webhook_deliveries.update()
        .where(sa.tuple_(_d.tenant_id, _d.id).in_(sa.select(picked.c.tenant_id, picked.c.id)))
        .values(locked_until=sa.func.now() + lease, attempts=_d.attempts + 1)
        .returning(webhook_deliveries)
    )
    return [DeliveryRow.from_row(r) for r in await conn.execute(statement)]


def _mine(delivery: DeliveryRow) -> sa.ColumnElement[bool]:
    # A lease that ran out may have been claimed again: touch only our own claim.
    return sa.and_(
        _d.tenant_id == delivery.tenant_id,
        _d.id == delivery.id,
        _d.state == "pending",
        _d.locked_until == delivery.locked_until,
    )


async def delivered(conn: AsyncConnection, delivery: DeliveryRow, status: int) -> None:
    await conn.execute(
        webhook_deliveries.update()
        .where(_mine(delivery))
        .values(
            state="delivered",
            last_status=status,
            last_error=None,
            locked_until=None,
            delivered_at=sa.func.now(),
        )
    )


async def failed(
    conn: AsyncConnection,
    delivery: DeliveryRow,
    *,
    status: int | None,
    error: str,
    retry_in_s: float | None,
) -> None:
    """Record a failed attempt: due again in ``retry_in_s``, or dead (None)."""
    values: dict[str, Any] = {
        "last_status": status,
        "last_error": error[:500],
        "locked_until": None,
    }
    if retry_in_s is None:
        values["state"] = "dead"
    else:
        values["available_at"] = sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, retry_in_s)
    await conn.execute(webhook_deliveries.update().where(_mine(delivery)).values(**values))
