"""Resolving a contradiction the ``flag_review`` policy kept side by side.

A person decides which fact stays true; the other is replaced the way the contradiction
policies replace a value (``graph.supersede``), so nothing is deleted and the as-of views still
answer what was believed before the decision:

- ``fact``: the newer fact wins, as under ``prefer_new``: the older one's valid time ends where
  the newer one's starts, and it is superseded by it.
- ``conflicts_with``: the older fact stands, as under ``prefer_old``: the newer one never held
  (an empty valid interval) and is superseded by the older one.
- ``both``: they do not contradict each other; both stay current.

The review closes, and with it every other review that named the replaced fact: a fact no
longer current has nothing left to contradict.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import graph as graph_db
from memvault.errors import Conflict, NotFound
from memvault.graph.views import Keep

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.db.graph import FactRow, ReviewRow


@dataclass(frozen=True)
class Settled:
    review: ReviewRow
    closed: list[UUID]


async def resolve(
    conn: AsyncConnection, tenant_id: str, user_id: str, review_id: UUID, keep: Keep, now: datetime
) -> Settled:
    """Decide one review in the caller's transaction."""
    review = await graph_db.fetch_review(conn, tenant_id, user_id, review_id)
    if review is None:
        raise NotFound("No such review for this user.", details={"review_id": str(review_id)})
    rows = await graph_db.fetch_facts(conn, tenant_id, (review.fact_id, review.conflicts_with))
    newer, older = rows[review.fact_id], rows[review.conflicts_with]
    # Writers of the same subject and predicate wait: the decision sees the current values.
    await graph_db.lock_subject(conn, tenant_id, newer.subject_id, newer.predicate)
    replaced: list[UUID] = []
    if keep != "both":
        kept, loser = (newer, older) if keep == "fact" else (older, newer)
        if kept.superseded_at is not None:
            raise Conflict(
                "The fact to keep was replaced since the review was opened; list the reviews "
                "again.",
                details={"fact_id": str(kept.id), "superseded_by": str(kept.superseded_by)},
            )
        if loser.superseded_at is None:
            changes = (
                _replaced_by_newer(older, newer, now) if keep == "fact" else _never(newer, now)
            )
            await graph_db.update_fact(
                conn, tenant_id, loser.id, {**changes, "superseded_by": kept.id}
            )
        replaced.append(loser.id)
    closed = await graph_db.close_reviews(conn, tenant_id, review.id, replaced)
    return Settled(review, closed)


def _replaced_by_newer(older: FactRow, newer: FactRow, now: datetime) -> dict[str, Any]:
    until = newer.valid_from or now
    if older.valid_until is not None:
        until = min(until, older.valid_until)
    return {"superseded_at": now, "valid_until": until}


def _never(newer: FactRow, now: datetime) -> dict[str, Any]:
    at = newer.valid_from or newer.recorded_at
    return {"superseded_at": now, "valid_from": at, "valid_until": at}
