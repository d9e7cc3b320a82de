"""The audit log's SQL: its daily partitions, batched inserts, and the admin's reads.

Partitions are made by the table owner (the ``ddl_engine``): the app role owns nothing and
makes nothing. Each new partition loses the app role's default grants, so the role reads and
writes audit rows only through ``audit_log`` and its row-level policy.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import AuditRow
from memvault.db.tables import audit_log, audit_settings
from memvault.db.tenancy import APP_ROLE

PARTITION_PREFIX = "audit_log_p"
_PARTITION = re.compile(rf"^{PARTITION_PREFIX}(\d{{8}})$")
_a = audit_log.c


@dataclass
class AuditEvent:
    """One audit row being built; ``Audit.timed`` fills in latency and outcome."""

    tenant_id: str
    operation: str
    actor: str
    user_id: str | None = None
    memory_kind: str | None = "memory"
    session_id: str | None = None
    conversation_id: str | None = None
    source_channel: str | None = None
    target_channel: str | None = None
    memory_ids: list[uuid.UUID] = field(default_factory=list)
    result_count: int | None = None
    latency_ms: float | None = None
    success: bool = True
    error_code: str | None = None
    promotion_rule: str | None = None
    promotion_score: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    query: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: uuid.UUID = field(default_factory=uuid.uuid4)


def partition_name(day: date) -> str:
    return f"{PARTITION_PREFIX}{day:%Y%m%d}"


def partition_day(name: str) -> date | None:
    found = _PARTITION.match(name)
    return datetime.strptime(found.group(1), "%Y%m%d").date() if found else None


async def partition_days(conn: AsyncConnection) -> list[date]:
    """The days that have a partition, oldest first."""
    names = await conn.execute(
        sa.text(
            "SELECT c.relname FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
            "WHERE p.relname = 'audit_log'"
        )
    )
    return sorted(d for (name,) in names if (d := partition_day(name)) is not None)


async def create_partition(conn: AsyncConnection, day: date) -> None:
    """The day's partition (owner connection); one that exists already is left alone."""
    name = partition_name(day)  # built from a date, never from caller text
    upper = day + timedelta(days=1)
    await conn.execute(
        sa.text(
            f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF audit_log "
            f"FOR VALUES FROM ('{day.isoformat()}T00:00:00+00:00') "
            f"TO ('{upper.isoformat()}T00:00:00+00:00')"
        )
    )
    await conn.execute(sa.text(f"REVOKE ALL ON {name} FROM {APP_ROLE}"))


async def drop_partition(conn: AsyncConnection, day: date) -> None:
    await conn.execute(sa.text(f"DROP TABLE IF EXISTS {partition_name(day)}"))


async def remember_settings(conn: AsyncConnection, settings_id: bytes, snapshot: Any) -> None:
    await conn.execute(
        insert(audit_settings)
        .values(id=settings_id, snapshot=snapshot)
        .on_conflict_do_nothing(index_elements=["id"])
    )


async def insert_rows(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(audit_log.insert(), list(rows))


async def read_rows(
    conn: AsyncConnection,
    tenant_id: str,
    *,
    user_id: str | None,
    operation: str | None,
    since: datetime | None,
    limit: int,
) -> list[AuditRow]:
    """A tenant's audit rows, newest first."""
    where = [_a.tenant_id == tenant_id]
    if user_id is not None:
        where.append(_a.user_id == user_id)
    if operation is not None:
        where.append(_a.operation == operation)
    if since is not None:
        where.append(_a.at >= since)
    query = sa.select(audit_log).where(*where).order_by(_a.at.desc(), _a.id).limit(limit)
    return [AuditRow.from_row(r) for r in await conn.execute(query)]


async def settings_snapshot(conn: AsyncConnection, settings_id: bytes) -> Any:
    query = sa.select(audit_settings.c.snapshot).where(audit_settings.c.id == settings_id)
    return (await conn.execute(query)).scalar_one_or_none()
