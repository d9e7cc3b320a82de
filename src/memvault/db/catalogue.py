"""Where a tenant's and a user's data lives: every table (and every store outside PostgreSQL)
that holds it, what an erasure does with it and what an export does with it.

This is declared data, read by whoever needs it when they need it — deletion (a memory, a
conversation, a user, a tenant), export and import, and the schema test that fails when a
table with a ``tenant_id`` or ``user_id`` column is missing here. Nothing registers into it:
a table added without its line here is caught by that test, not silently left behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sqlalchemy as sa

from memvault.db.tables import metadata

# How an erasure takes the rows (lifecycle/deletion.py has one step per kind):
# ``memories``   the memory rows themselves, picked by the deletion's condition;
# ``by_memory``  rows keyed by a deleted memory's id (chunks, postings, jobs, decay records);
# ``graph``      the graph's rows: a memory's facts go by the graph's triggers, an owner's or a
#                tenant's rest in one step (one count for the whole graph);
# ``owned``      cognitive rows of a user: a whole user's or a tenant's erasure takes them (an
#                app's does not: they belong to the user); ``of_conversation`` ones also go
#                with their conversation;
# ``turns``      conversation turns: a deleted memory takes its turn, whatever the scope;
# ``history``    memory history: tombstoned or purged (``deletion_history``);
# ``audit``      the audit trail: what a user typed leaves it, a tenant's erasure takes it all;
# ``tenant``     rows only a tenant's erasure takes (its API keys, its data key);
# ``events``     webhook deliveries: a whole user's erasure takes theirs, a tenant's all (the
#                erasure's own event is written after);
# ``kept``       a tenant's settings its erasure keeps (its webhook endpoints, so the
#                ``tenant.erased`` event reaches them);
# ``outside``    stores outside the deleting transaction, cleared just before it opens.
Erase = Literal[
    "memories",
    "by_memory",
    "graph",
    "owned",
    "turns",
    "events",
    "history",
    "audit",
    "tenant",
    "kept",
    "outside",
]
# What an export does: ``line`` rows are lines of their own (``kind`` names them), ``inside``
# rows travel in their parent's line, ``rebuilt`` ones are made again on import, ``left_out``
# ones stay with the store (``why`` says why, and the export format's page repeats it).
Export = Literal["line", "inside", "rebuilt", "left_out"]


@dataclass(frozen=True)
class Place:
    name: str
    erase: Erase
    export: Export
    kind: str | None = None
    why: str = ""
    of_conversation: bool = False


# In the order an erasure takes them: rows pointing at others first, so no cascade removes a
# row before it is counted.
CATALOGUE: tuple[Place, ...] = (
    Place("memory_chunks", "by_memory", "inside"),
    Place(
        "memory_terms",
        "by_memory",
        "rebuilt",
        why="keyword postings: made again from the text on import",
    ),
    Place(
        "embedding_jobs",
        "by_memory",
        "left_out",
        why="queued embedding work: the import queues its own",
    ),
    Place(
        "decay_changes",
        "by_memory",
        "left_out",
        why="undo records of a decay run: the store's own bookkeeping",
    ),
    Place(
        "vector_index_outbox",
        "by_memory",
        "left_out",
        why="memories an external vector index has yet to sync: the store's own bookkeeping",
    ),
    Place("entities", "graph", "line", kind="entity"),
    Place("facts", "graph", "line", kind="fact"),
    Place("relations", "graph", "line", kind="relation"),
    Place("fact_reviews", "graph", "line", kind="fact_review"),
    Place("entity_merges", "graph", "line", kind="entity_merge"),
    Place("fact_promotions", "graph", "line", kind="fact_promotion"),
    Place("fact_sources", "graph", "inside"),
    Place("relation_sources", "graph", "inside"),
    Place("entity_mentions", "graph", "inside"),
    Place(
        "fact_terms",
        "graph",
        "rebuilt",
        why="keyword postings: made again from the claim on import",
    ),
    Place(
        "entity_terms",
        "graph",
        "rebuilt",
        why="keyword postings: made again from the names on import",
    ),
    Place("conversation_turns", "turns", "inside", of_conversation=True),
    Place("tool_invocations", "owned", "line", kind="tool_invocation", of_conversation=True),
    Place("strategies", "owned", "line", kind="strategy"),
    Place("conversations", "owned", "line", kind="conversation", of_conversation=True),
    Place("goal_blockers", "owned", "inside"),
    Place("goals", "owned", "line", kind="goal"),
    Place("user_profiles", "owned", "line", kind="profile"),
    Place(
        "idempotent_writes",
        "owned",
        "left_out",
        why="the kept answers of writes sent with an Idempotency-Key: a retry's, for a day",
    ),
    Place(
        "working_memory",
        "owned",
        "left_out",
        why="a live session's scratch space, expiring within hours: not kept memory",
        of_conversation=True,
    ),
    Place(
        "merge_undos",
        "owned",
        "left_out",
        why="what a health merge erased, kept for its undo (MEMVAULT_MERGE_UNDO_DAYS): the "
        "store's own bookkeeping, as the copies it holds left the export with the merge",
    ),
    Place(
        "webhook_deliveries",
        "events",
        "left_out",
        why="events on their way to (or handed to) the tenant's webhook endpoints: the "
        "store's own outbox",
    ),
    Place("memories", "memories", "line", kind="memory"),
    Place("memory_history", "history", "inside"),
    Place(
        "audit_log",
        "audit",
        "left_out",
        why="the store's own record of who did what: it stays with the store",
    ),
    Place("api_keys", "tenant", "left_out", why="a tenant's credentials: not a user's memory"),
    Place(
        "tenant_keys",
        "tenant",
        "left_out",
        why="a tenant's data key: the importing store seals under its own",
    ),
    Place(
        "webhook_subscriptions",
        "kept",
        "left_out",
        why="a tenant's webhook endpoints: settings, not memory; kept through the tenant's "
        "erasure so its erasure event reaches them",
    ),
    Place(
        "embedding_cache",
        "outside",
        "left_out",
        why="vectors cached by text hash: made again when needed",
    ),
    Place(
        "working_memory_redis",
        "outside",
        "left_out",
        why="working memory in Redis: as working_memory",
    ),
    Place(
        "working_memory_turns",
        "outside",
        "left_out",
        why="a deleted turn's words in its session's working memory",
    ),
    Place(
        "vector_index",
        "outside",
        "left_out",
        why="an external vector index's points (Qdrant): made again from the vectors",
    ),
)


def places(*, erase: Erase | None = None, export: Export | None = None) -> list[Place]:
    return [
        p
        for p in CATALOGUE
        if (erase is None or p.erase == erase) and (export is None or p.export == export)
    ]


def table(place: Place) -> sa.Table:
    return metadata.tables[place.name]


def tables(*, erase: Erase | None = None, export: Export | None = None) -> list[sa.Table]:
    return [table(p) for p in places(erase=erase, export=export)]
