"""A person's corrections to the graph: retiring a fact and correcting one.

Nothing is deleted, as with every other change of a fact (``graph.supersede``): a retired fact
stops holding (its valid time ends now, or never began when it was never true) and leaves the
current view (``superseded_at``); a corrected one never held and is superseded by the fact
that replaces it, which inherits its start. The as-of views still answer what was believed
before.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import graph as graph_db
from memvault.errors import Conflict, NotFound
from memvault.graph import sealed
from memvault.graph.claims import SELF, Extraction, FactClaim
from memvault.graph.writer import GraphWriter, Owner, Prepared

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend
    from memvault.db.graph import FactRow


async def current_fact(
    conn: AsyncConnection, tenant_id: str, user_id: str, fact_id: UUID
) -> FactRow:
    """The user's fact, still current, with writers of its subject and predicate held off."""
    row = (await graph_db.fetch_facts(conn, tenant_id, (fact_id,))).get(fact_id)
    if row is None or row.user_id != user_id:
        raise NotFound("No such fact for this user.", details={"id": str(fact_id)})
    await graph_db.lock_subject(conn, tenant_id, row.subject_id, row.predicate)
    if row.superseded_at is not None:
        raise Conflict(
            "This fact was already replaced or retired; correct the fact that replaced it.",
            details={"id": str(fact_id), "superseded_by": str(row.superseded_by)},
        )
    return row


def retired(row: FactRow, now: datetime, *, never_held: bool) -> dict[str, Any]:
    """The columns of a retired fact: it holds until now, or (never held) not at all."""
    if never_held:
        start = row.valid_from or row.recorded_at
        return {"superseded_at": now, "valid_from": start, "valid_until": start}
    until = now if row.valid_until is None else min(row.valid_until, now)
    return {"superseded_at": now, "valid_until": until}


async def subject_name(backend: Backend, conn: AsyncConnection, row: FactRow) -> str:
    """How a new claim names the fact's subject: ``@user`` for the user's own entity."""
    entity = await graph_db.fetch_entity(conn, row.tenant_id, row.user_id, row.subject_id)
    if entity is None:
        raise NotFound("The fact's subject is gone.", details={"id": str(row.id)})
    if entity.properties.get("self"):
        return SELF
    return sealed.open_entity(backend.keys.current(row.tenant_id), entity).name


def correction(subject: str, row: FactRow, *, object: str | None, value: str | None) -> Extraction:
    said = "The user" if subject == SELF else subject
    claim = FactClaim(
        subject=subject,
        predicate=row.predicate,
        claim=f"{said} {row.predicate.replace('_', ' ')} {object or value}",
        object=object,
        value=value,
        valid_from=row.valid_from or row.recorded_at,
    )
    return Extraction(facts=(claim,), extractor="correction")


async def write_correction(
    backend: Backend,
    conn: AsyncConnection,
    row: FactRow,
    prepared: Prepared,
    now: datetime,
) -> UUID:
    """In the caller's transaction: the old fact never held, the new one replaces it."""
    await graph_db.update_fact(conn, row.tenant_id, row.id, retired(row, now, never_held=True))
    owner = Owner(row.tenant_id, row.user_id, row.app_id, row.channel)
    applied = await GraphWriter(backend, owner).apply(
        conn, prepared, memory_id=None, reference_time=now, source="correction"
    )
    (new_id,) = applied.fact_ids
    await graph_db.update_fact(conn, row.tenant_id, row.id, {"superseded_by": new_id})
    return new_id


__all__ = ["correction", "current_fact", "retired", "subject_name", "write_correction"]
