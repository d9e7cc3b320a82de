"""A person's corrections to the graph: retiring a fact and correcting one.

Nothing is deleted, as with every other change of a fact (``graph.supersede``): a retired fact
stops holding (its valid time ends now, or never began when it was never true) and leaves the
current view (``superseded_at``); a corrected one never held and is superseded by the fact
that replaces it, which inherits its start. The as-of views still answer what was believed
before.

Either change can be undone (:func:`restore`): the fact keeps the interval it had before in
``undo``, and a restore puts it back and makes it current again (a corrected fact's
replacement then never held, superseded by it). A restore is refused when something changed
in between: the replacement was itself retired, replaced or corrected, or a newer fact of the
same subject and predicate came in after the change. Restoring clears ``superseded_at``, so
the as-of views read the fact as current throughout; the audit log keeps both changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
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


Change = Literal["retire", "correct"]


def retired(
    row: FactRow, now: datetime, *, never_held: bool, undo: Change | None = "retire"
) -> dict[str, Any]:
    """The columns of a retired fact: it holds until now, or (never held) not at all; with
    ``undo``, the interval it had, for :func:`restore`."""
    kept = {"undo": None if undo is None else _before(row, undo)}
    if never_held:
        start = row.valid_from or row.recorded_at
        return {"superseded_at": now, "valid_from": start, "valid_until": start, **kept}
    until = now if row.valid_until is None else min(row.valid_until, now)
    return {"superseded_at": now, "valid_until": until, **kept}


def _before(row: FactRow, change: Change) -> dict[str, Any]:
    def moment(at: datetime | None) -> str | None:
        return None if at is None else at.isoformat()

    return {
        "change": change,
        "valid_from": moment(row.valid_from),
        "valid_until": moment(row.valid_until),
    }


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
    changes = retired(row, now, never_held=True, undo="correct")
    await graph_db.update_fact(conn, row.tenant_id, row.id, changes)
    owner = Owner(row.tenant_id, row.user_id, row.app_id, row.channel)
    applied = await GraphWriter(backend, owner).apply(
        conn, prepared, memory_id=None, reference_time=now, source="correction"
    )
    (new_id,) = applied.fact_ids
    await graph_db.update_fact(conn, row.tenant_id, row.id, {"superseded_by": new_id})
    return new_id


@dataclass(frozen=True)
class Restored:
    """An undone change: which it was, and the fact a correction had put in its place (now
    never held), if any."""

    change: Change
    replacement: UUID | None


async def restore(
    conn: AsyncConnection, tenant_id: str, user_id: str, fact_id: UUID, now: datetime
) -> Restored:
    """In the caller's transaction: undo the retire or correction of the fact (see the
    module's docstring for what is refused)."""
    row = (await graph_db.fetch_facts(conn, tenant_id, (fact_id,))).get(fact_id)
    if row is None or row.user_id != user_id:
        raise NotFound("No such fact for this user.", details={"id": str(fact_id)})
    await graph_db.lock_subject(conn, tenant_id, row.subject_id, row.predicate)
    before = await graph_db.fact_undo(conn, tenant_id, fact_id)
    if before is None or row.superseded_at is None:
        raise Conflict(
            "Nothing to undo: this fact was not retired or corrected by a person, or that "
            "change was already undone.",
            details={"id": str(fact_id)},
        )
    replacement = (
        await _replacement(conn, tenant_id, row) if before["change"] == "correct" else None
    )
    newer = [
        f.id
        for f in await graph_db.current_facts_of(
            conn, tenant_id, user_id, row.subject_id, row.predicate
        )
        if f.recorded_at > row.superseded_at and (replacement is None or f.id != replacement.id)
    ]
    if newer:
        raise Conflict(
            "A newer fact of the same subject and predicate came in after this change; "
            "retire or correct it first, then undo.",
            details={"id": str(fact_id), "newer": [str(i) for i in newer]},
        )
    await graph_db.update_fact(
        conn,
        tenant_id,
        fact_id,
        {
            "superseded_at": None,
            "superseded_by": None,
            "valid_from": _moment(before["valid_from"]),
            "valid_until": _moment(before["valid_until"]),
            "undo": None,
        },
    )
    if replacement is None:
        return Restored(before["change"], None)
    gone = retired(replacement, now, never_held=True, undo=None) | {"superseded_by": fact_id}
    await graph_db.update_fact(conn, tenant_id, replacement.id, gone)
    return Restored(before["change"], replacement.id)


async def _replacement(conn: AsyncConnection, tenant_id: str, row: FactRow) -> FactRow:
    """The fact that corrected ``row``, still current: else the undo would bring back a
    value over a later decision."""
    found = None
    if row.superseded_by is not None:
        found = (await graph_db.fetch_facts(conn, tenant_id, (row.superseded_by,))).get(
            row.superseded_by
        )
    if found is None or found.superseded_at is not None:
        raise Conflict(
            "The fact that corrected this one has changed since (retired, replaced or "
            "corrected again); undo that change first.",
            details={"id": str(row.id), "replaced_by": str(row.superseded_by)},
        )
    return found


def _moment(raw: str | None) -> datetime | None:
    return None if raw is None else datetime.fromisoformat(raw)


__all__ = [
    "Restored",
    "correction",
    "current_fact",
    "restore",
    "retired",
    "subject_name",
    "write_correction",
]
