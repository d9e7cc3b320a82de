"""Export and import of a user's whole memory as JSON lines (format 2, docs/export-format.md):
memories with their history and vectors, the knowledge graph (entities, facts and relations
with both time axes, their sources and mentions, open reviews), conversations with their
turns, tool invocations, strategies, goals with their blockers, and the profile.

Export opens every sealed text; import seals it again under the importing store's key and
tenant and rebuilds the keyword postings, so a file moves between stores and tenants.

Import is as strict as the routes it stands in for, and all or nothing:

* every line is checked first (the models of ``portable_format``, the content limit and PII
  policy of an add, vectors against the store's models); any problem answers 422 listing each
  line and field, and nothing is written;
* ids are kept, a row the user has already is left as it is (an import can run twice), and an
  id another user of the tenant holds is replaced by one derived from it (the same each time,
  so a second run finds the first's rows); every reference (a fact's entities, a turn's memory,
  a goal's blockers, …) must name a row of the file or one the user has already, so no line
  can reach another user's rows;
* history keeps what the file says happened, marked as imported: ``actor`` and ``created_at``
  are the import's, the file's are kept as ``claimed_actor`` and ``claimed_at``;
* everything is written in one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.cognitive.payloads import open_payload, seal_payload
from memvault.cognitive.strategies import scrub
from memvault.db import embedding_queue, keywords, vectors
from memvault.db import portable as db
from memvault.db.tables import (
    conversation_turns,
    conversations,
    goal_blockers,
    goals,
    memory_chunks,
    memory_history,
    strategies,
    tool_invocations,
    user_profiles,
)
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, PIIRejected
from memvault.keys.sealing import open_content, seal_content
from memvault.language import pii
from memvault.language.terms import blind_terms
from memvault.lifecycle import graph_portable
from memvault.lifecycle.portable_format import (
    FORMAT,
    MAX_ERRORS,
    ConversationLine,
    EntityLine,
    EntityMergeLine,
    ExportedTurn,
    ExportedVersion,
    FactLine,
    FactPromotionLine,
    FactReviewLine,
    GoalLine,
    Line,
    MemoryLine,
    Plan,
    ProfileLine,
    Read,
    RelationLine,
    StrategyLine,
    ToolInvocationLine,
    VectorSet,
    problem,
    read_line,
)
from memvault.models import PIIPolicy

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend

# Namespace of the ids an import mints for rows whose id another user holds.
_REMAP = uuid.UUID("6d656d76-6175-4c74-8000-696d706f7274")
# Kinds whose rows carry a UUID the tenant shares among its users (conversations are keyed
# per user, profiles by channel: neither can collide with another user's).
_SHARED_IDS = ("memory", "entity", "fact", "relation", "fact_review", "entity_merge",
               "tool_invocation", "strategy", "goal")  # fmt: skip
COUNTED = (
    "memories",
    "entities",
    "facts",
    "relations",
    "fact_reviews",
    "entity_merges",
    "fact_promotions",
    "conversations",
    "turns",
    "tool_invocations",
    "strategies",
    "goals",
    "profiles",
)
_PLURAL = {
    "memory": "memories",
    "entity": "entities",
    "fact": "facts",
    "relation": "relations",
    "fact_review": "fact_reviews",
    "entity_merge": "entity_merges",
    "fact_promotion": "fact_promotions",
    "conversation": "conversations",
    "tool_invocation": "tool_invocations",
    "strategy": "strategies",
    "goal": "goals",
    "profile": "profiles",
}


def empty_counts() -> dict[str, int]:
    return {"imported": 0, "skipped": 0, "remapped": 0, "queued_for_embedding": 0} | {
        name: 0 for name in COUNTED
    }


# --- export ------------------------------------------------------------------------------------


async def export_user(backend: Backend, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
    """Every line of the user's export, as JSON-ready dicts: memories first, then the graph,
    then conversations, tool use, strategies, goals and profiles."""
    async with reading(backend.engine) as conn:
        rows = {k: await db.owned(conn, t, tenant_id, user_id) for k, t in db.TABLES.items()}
        mids = [r["id"] for r in rows["memory"]]
        history = _grouped(await db.children(conn, memory_history, tenant_id, "memory_id", mids))
        chunks = _grouped(await db.children(conn, memory_chunks, tenant_id, "memory_id", mids))
        graph = await graph_portable.export_lines(backend, conn, tenant_id, rows)
        cids = [r["id"] for r in rows["conversation"]]
        turns = _grouped(
            await db.children(
                conn, conversation_turns, tenant_id, "conversation_id", cids, user_id=user_id
            ),
            "conversation_id",
        )
        gids = [r["id"] for r in rows["goal"]]
        blockers = _grouped(
            await db.children(conn, goal_blockers, tenant_id, "goal_id", gids), "goal_id"
        )
    keys = backend.keys
    lines: list[Line] = [_memory_line(backend, r, history, chunks) for r in rows["memory"]]
    lines.extend(graph)
    exported = {str(c) for c in cids}
    for r in rows["conversation"]:
        payload = open_payload(keys, conversations.name, (tenant_id, r["id"]), _Sealed(r))
        lines.append(
            ConversationLine(
                memvault_export=FORMAT,
                kind="conversation",
                id=str(r["id"]),
                title=payload.get("title"),
                turns=[
                    ExportedTurn(index=t["turn_index"], **_fields(ExportedTurn, t))
                    for t in turns.get(r["id"], [])
                ],
                **_fields(ConversationLine, r, skip={"id", "title", "turns"}),
            )
        )
    for r in rows["tool_invocation"]:
        payload = open_payload(keys, tool_invocations.name, (tenant_id, r["id"]), _Sealed(r))
        convo = r["conversation_id"]
        lines.append(
            ToolInvocationLine(
                memvault_export=FORMAT,
                kind="tool_invocation",
                input=payload.get("input"),
                output=payload.get("output"),
                error=payload.get("error"),
                **_fields(ToolInvocationLine, r, skip={"conversation_id"}),
                conversation_id=str(convo)
                if convo is not None and str(convo) in exported
                else None,
            )
        )
    for r in rows["strategy"]:
        payload = open_payload(keys, strategies.name, (tenant_id, r["id"]), _Sealed(r))
        source = r["source_conversation_id"]
        lines.append(
            StrategyLine(
                memvault_export=FORMAT,
                kind="strategy",
                description=payload["description"],
                context_pattern=payload.get("context_pattern"),
                embedding_model=r["model"],
                **_fields(StrategyLine, r, skip={"source_conversation_id"}),
                source_conversation_id=str(source)
                if source is not None and str(source) in exported
                else None,
            )
        )
    for r in rows["goal"]:
        payload = open_payload(keys, goals.name, (tenant_id, r["id"]), _Sealed(r))
        lines.append(
            GoalLine(
                memvault_export=FORMAT,
                kind="goal",
                description=payload["description"],
                result=payload.get("result"),
                blocked_by=[b["blocker_id"] for b in blockers.get(r["id"], [])],
                **_fields(GoalLine, r),
            )
        )
    for r in rows["profile"]:
        key = (tenant_id, r["user_id"], r["channel"])
        payload = open_payload(keys, user_profiles.name, key, _Sealed(r))
        lines.append(
            ProfileLine(
                memvault_export=FORMAT,
                kind="profile",
                preferences=payload.get("preferences") or {},
                expertise=payload.get("expertise") or [],
                communication_style=payload.get("communication_style"),
                **_fields(ProfileLine, r),
            )
        )
    return [line.model_dump(mode="json") for line in lines]


@dataclass(frozen=True)
class _Sealed:
    """A row's sealed payload columns, as ``open_payload`` reads them."""

    ciphertext: bytes
    nonce: bytes
    key_id: str

    def __init__(self, row: dict[str, Any]) -> None:
        object.__setattr__(self, "ciphertext", row["ciphertext"])
        object.__setattr__(self, "nonce", row["nonce"])
        object.__setattr__(self, "key_id", row["key_id"])


def _grouped(rows: list[dict[str, Any]], column: str = "memory_id") -> dict[Any, list[Any]]:
    found: dict[Any, list[Any]] = {}
    for row in rows:
        found.setdefault(row[column], []).append(row)
    return found


def _fields(model: type[Any], row: dict[str, Any], skip: set[str] | None = None) -> dict[str, Any]:
    """The row's columns that are fields of the line (the owner and the kind are the line's)."""
    wanted = set(model.model_fields) - {"memvault_export", "kind"} - (skip or set())
    return {k: v for k, v in row.items() if k in wanted}


def _memory_line(
    backend: Backend,
    row: dict[str, Any],
    history: dict[Any, list[dict[str, Any]]],
    chunks: dict[Any, list[dict[str, Any]]],
) -> MemoryLine:
    tenant_id, ident = row["tenant_id"], row["id"]

    def opened(prefix: str, h: dict[str, Any]) -> str | None:
        if h[f"{prefix}ciphertext"] is None:
            return None
        return open_content(
            backend.keys,
            tenant_id,
            ident,
            h[f"{prefix}ciphertext"],
            h[f"{prefix}nonce"],
            h[f"{prefix}key_id"],
        )

    by_model: dict[str, list[list[float]]] = {}
    for c in chunks.get(ident, []):
        by_model.setdefault(c["model"], []).append(c["embedding"])
    return MemoryLine(
        memvault_export=FORMAT,
        kind="memory",
        content=opened("", row) or "",
        history=[
            ExportedVersion(
                old_content=opened("old_", h),
                new_content=opened("new_", h),
                **_fields(ExportedVersion, h, skip={"old_content", "new_content"}),
            )
            for h in history.get(ident, [])
        ],
        vectors=[VectorSet(model=m, chunks=c) for m, c in sorted(by_model.items())],
        **_fields(MemoryLine, row, skip={"content", "history", "vectors"}),
    )


async def memory_lines(
    backend: Backend, conn: AsyncConnection, tenant_id: str, ids: list[UUID]
) -> list[tuple[MemoryLine, list[int]]]:
    """These memories as export lines (history and vectors in), each with its history rows'
    ids in the line's order: what :func:`put_back` puts back as it was."""
    rows = await db.children(conn, db.TABLES["memory"], tenant_id, "id", ids)
    history = _grouped(await db.children(conn, memory_history, tenant_id, "memory_id", ids))
    chunks = _grouped(await db.children(conn, memory_chunks, tenant_id, "memory_id", ids))
    return [
        (_memory_line(backend, r, history, chunks), [h["id"] for h in history.get(r["id"], [])])
        for r in rows
    ]


async def put_back(
    backend: Backend,
    conn: AsyncConnection,
    owner: tuple[str, str],
    memories: list[tuple[MemoryLine, list[int]]],
    actor: str,
) -> int:
    """In the caller's transaction: memories :func:`memory_lines` read, back under their own
    ids as the import writes them (rows, vectors, keyword postings, an embedding job where no
    vector of the active model came), their history rows with their own ids, actors and
    times; a memory whose id is taken again is left out. How many came back."""
    counts = empty_counts()
    writer = _Writer(backend, conn, Plan(*owner), actor, counts)
    await writer.memories([(0, line.model_copy(update={"history": []})) for line, _ in memories])
    rows = [
        writer.version(line.id, v, row_id=n)
        for line, ids in memories
        for v, n in zip(line.history, ids, strict=True)
    ]
    await db.insert_new(conn, memory_history, rows)
    return counts["memories"]


# --- import: reading and checking --------------------------------------------------------------


def read(items: Sequence[Any]) -> Read:
    """Every line checked against its kind's model, one user for the whole file."""
    found = Read()
    owner: str | None = None
    for number, item in enumerate(items, start=1):
        lines, problems = read_line(item, number)
        found.problems.extend(problems)
        for line in lines:
            owner = owner or line.user_id
            if line.user_id != owner:
                found.problems.append(
                    problem(number, "user_id", "an import holds one user's lines only")
                )
                continue
            found.add(number, line)
    return found


def _check_texts(backend: Backend, found: Read) -> None:
    """Contents and tool logs pass the store's PII policy and content limit, as an add does."""
    policy = backend.settings.pii_policy
    limit = backend.settings.max_content_chars
    for kind, entries in list(found.by_kind.items()):
        for key, (number, line) in list(entries.items()):
            try:
                if isinstance(line, MemoryLine):
                    line = _protected_memory(line, policy, limit, number, found)
                elif isinstance(line, ToolInvocationLine):
                    seen: dict[str, int] = {}
                    line = line.model_copy(
                        update={
                            "input": scrub(line.input, policy, seen),
                            "output": scrub(line.output, policy, seen),
                            "error": scrub(line.error, policy, seen),
                        }
                    )
            except PIIRejected:
                found.problems.append(
                    problem(number, "content", "holds personal data this store's policy rejects")
                )
                continue
            entries[key] = (number, line)
        found.by_kind[kind] = entries


def _protected_memory(
    line: MemoryLine, policy: PIIPolicy, limit: int, number: int, found: Read
) -> MemoryLine:
    def protect(text: str | None, where: str) -> str | None:
        if text is None:
            return None
        kept = pii.apply_policy(text, policy).text
        if len(kept) > limit:
            found.problems.append(
                problem(number, where, f"is longer than this store's limit of {limit} characters")
            )
        return kept

    content = protect(line.content, "content") or line.content
    history = [
        v.model_copy(
            update={
                "old_content": protect(v.old_content, f"history.{n}.old_content"),
                "new_content": protect(v.new_content, f"history.{n}.new_content"),
            }
        )
        for n, v in enumerate(line.history)
    ]
    update: dict[str, Any] = {"content": content, "history": history}
    if content != line.content:  # redacted: the vectors were of the text before
        update["vectors"] = []
    return line.model_copy(update=update)


def _check_vectors(backend: Backend, found: Read) -> None:
    """A vector that names one of this store's models must have that model's size; one of
    another model is dropped (the row is embedded again here)."""
    sizes = {f.model_id: f.dimensions for f in backend.embeddings.fallbacks}
    sizes[backend.embeddings.primary.model_id] = backend.embeddings.primary.dimensions

    def wrong(model: str | None, vector: list[float] | None) -> int | None:
        if model is None or vector is None or model not in sizes:
            return None
        return sizes[model] if len(vector) != sizes[model] else None

    for number, line in [*found.lines("memory")]:
        for n, given in enumerate(line.vectors):
            for c, chunk in enumerate(given.chunks):
                if (size := wrong(given.model, chunk)) is not None:
                    found.problems.append(
                        problem(number, f"vectors.{n}.chunks.{c}", f"must have {size} numbers")
                    )
    for kind in ("entity", "fact", "strategy"):
        for number, line in found.lines(kind):
            if (size := wrong(line.embedding_model, line.embedding)) is not None:
                found.problems.append(problem(number, "embedding", f"must have {size} numbers"))


def _refuse(problems: list[dict[str, Any]]) -> None:
    problems = sorted(problems, key=lambda p: (p["line"], p["field"]))
    raise InvalidInput(
        f"The import has {len(problems)} problem(s); nothing was imported.",
        details={"errors": problems[:MAX_ERRORS], "line": problems[0]["line"]},
    )


# --- import: ids and references ----------------------------------------------------------------


def _references(line: Any) -> list[tuple[str, str, Any]]:
    """(field, kind, id) for every row of the user a line points at."""
    refs: list[tuple[str, str, Any]] = []

    def each(name: str, kind: str, values: Sequence[Any]) -> None:
        refs.extend((f"{name}.{n}", kind, v) for n, v in enumerate(values))

    if isinstance(line, EntityLine):
        refs.append(("merged_into", "entity", line.merged_into))
        each("memory_ids", "memory", line.memory_ids)
    elif isinstance(line, FactLine):
        refs += [("subject_id", "entity", line.subject_id), ("object_id", "entity", line.object_id)]
        refs.append(("superseded_by", "fact", line.superseded_by))
        each("memory_ids", "memory", line.memory_ids)
    elif isinstance(line, RelationLine):
        refs += [("source_id", "entity", line.source_id), ("target_id", "entity", line.target_id)]
        each("memory_ids", "memory", line.memory_ids)
    elif isinstance(line, FactReviewLine):
        refs += [("fact_id", "fact", line.fact_id), ("conflicts_with", "fact", line.conflicts_with)]
    elif isinstance(line, FactPromotionLine):
        refs += [("fact_id", "fact", line.fact_id), ("promoted_from", "fact", line.promoted_from)]
    elif isinstance(line, EntityMergeLine):
        refs += [("merged_id", "entity", line.merged_id), ("into_id", "entity", line.into_id)]
        each("subject_facts", "fact", line.subject_facts)
        each("object_facts", "fact", line.object_facts)
        each("source_relations", "relation", line.source_relations)
        each("target_relations", "relation", line.target_relations)
    elif isinstance(line, ConversationLine):
        refs.extend(
            (f"turns.{n}.memory_id", "memory", t.memory_id) for n, t in enumerate(line.turns)
        )
    elif isinstance(line, ToolInvocationLine):
        refs.append(("conversation_id", "conversation", line.conversation_id))
    elif isinstance(line, StrategyLine):
        refs.append(("source_conversation_id", "conversation", line.source_conversation_id))
    elif isinstance(line, GoalLine):
        refs.append(("parent_id", "goal", line.parent_id))
        each("blocked_by", "goal", line.blocked_by)
    return [r for r in refs if r[2] is not None]


async def plan(conn: AsyncConnection, tenant_id: str, found: Read) -> Plan:
    """Each line's id here, and each reference resolved to a row of the file or of the user;
    a reference to anything else is a problem of its line."""
    user = next(line.user_id for e in found.by_kind.values() for _, line in e.values())
    result = Plan(tenant_id, user)
    for kind in _SHARED_IDS:
        ids = list(found.by_kind.get(kind, {}))
        table = db.TABLES[kind]
        held = await db.owners(conn, table, tenant_id, ids)
        mapping: dict[Any, Any] = {}
        present: set[Any] = set()
        for ident in ids:
            if user in held.get(ident, set()):
                present.add(ident)
            elif held.get(ident):
                mapping[ident] = uuid.uuid5(_REMAP, f"{tenant_id}\x00{user}\x00{kind}\x00{ident}")
        again = await db.owners(conn, table, tenant_id, list(mapping.values()))
        for ident, derived in mapping.items():
            if user in again.get(derived, set()):
                present.add(ident)
        result.ids[kind], result.present[kind] = mapping, present
        result.remapped += len(mapping)
    cids = list(found.by_kind.get("conversation", {}))
    result.present["conversation"] = await db.conversation_ids(conn, tenant_id, user, cids)
    await _check_turns_held(conn, result, found)
    channels = list(found.by_kind.get("profile", {}))
    result.present["profile"] = await db.profile_channels(conn, tenant_id, user, channels)

    outside: dict[str, set[Any]] = {}
    for entries in found.by_kind.values():
        for _, line in entries.values():
            for _, kind, ident in _references(line):
                if ident not in found.by_kind.get(kind, {}):
                    outside.setdefault(kind, set()).add(ident)
    for kind, idents in outside.items():
        if kind == "conversation":
            result.theirs[kind] = await db.conversation_ids(conn, tenant_id, user, sorted(idents))
        else:
            held = await db.owners(conn, db.TABLES[kind], tenant_id, sorted(idents, key=str))
            result.theirs[kind] = {i for i, users in held.items() if user in users}
    for entries in found.by_kind.values():
        for number, line in entries.values():
            for name, kind, ident in _references(line):
                if ident not in found.by_kind.get(kind, {}) and ident not in result.theirs.get(
                    kind, set()
                ):
                    found.problems.append(
                        problem(number, name, f"names no {kind} of this user, in the file or here")
                    )
    return result


async def _check_turns_held(conn: AsyncConnection, where: Plan, found: Read) -> None:
    """A conversation the user already has keeps its row (its turn count included), so a
    file's turn of it may only be one it holds, at the same index: a turn written beside
    them would be one the conversation does not count, and the next append would take its
    index. Anything else refuses the import as a whole."""
    present = sorted(where.present["conversation"])
    held = await db.held_turns(conn, where.tenant_id, where.user_id, present)
    for ident, turns in held.items():
        number, line = found.by_kind["conversation"][ident]
        for n, turn in enumerate(line.turns):
            if turns.get(turn.index) != where.ref("memory", turn.memory_id):
                found.problems.append(
                    problem(
                        number,
                        f"turns.{n}",
                        "this conversation is here already without this turn: import its "
                        "new turns with POST /v1/messages, or erase it first",
                    )
                )


# --- import: writing ---------------------------------------------------------------------------


async def import_lines(
    backend: Backend, tenant_id: str, items: Sequence[Any], actor: str
) -> dict[str, int]:
    """Check every line, then write them all in one transaction (see the module's notes)."""
    found = read(items)
    if found.problems:
        _refuse(found.problems)
    _check_texts(backend, found)
    _check_vectors(backend, found)
    if found.problems:
        _refuse(found.problems)
    counts = empty_counts()
    if not found.by_kind:
        return counts
    vectors_for = await graph_portable.missing_vectors(backend, found)
    async with transaction(backend.engine) as conn:
        where = await plan(conn, tenant_id, found)
        if found.problems:
            _refuse(found.problems)
        counts["remapped"] = where.remapped
        writer = _Writer(backend, conn, where, actor, counts)
        await writer.memories(found.lines("memory"))
        await graph_portable.import_lines(backend, conn, where, found, vectors_for, counts)
        await writer.conversations(found.lines("conversation"))
        await writer.tool_invocations(found.lines("tool_invocation"))
        await writer.strategies(found.lines("strategy"), vectors_for)
        await writer.goals(found.lines("goal"))
        await writer.profiles(found.lines("profile"))
    backend.analyzer.wrote(counts["memories"])
    for kind, plural in _PLURAL.items():
        counts["skipped"] += len(found.by_kind.get(kind, {})) - counts[plural]
    counts["imported"] = sum(counts[p] for p in _PLURAL.values())
    return counts


class _Writer:
    def __init__(
        self,
        backend: Backend,
        conn: AsyncConnection,
        where: Plan,
        actor: str,
        counts: dict[str, int],
    ) -> None:
        self.backend, self.conn, self.where, self.actor = backend, conn, where, actor
        self.counts = counts
        self.tenant_id, self.user_id = where.tenant_id, where.user_id
        self.now = datetime.now(UTC)

    def _seal(self, table: str, key: tuple[Any, ...], payload: Any) -> dict[str, Any]:
        return seal_payload(self.backend.keys, table, (self.tenant_id, *key), payload)

    async def memories(self, lines: list[tuple[int, MemoryLine]]) -> None:
        """The memories, their history, vectors and postings: a statement per table for the
        whole file, not per memory."""
        active = self.backend.embeddings.active_model
        keyring = self.backend.keys.current(self.tenant_id)
        rows: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        embedded: dict[UUID, tuple[str, list[list[float]]]] = {}
        postings: dict[UUID, tuple[str, dict[int, int], int]] = {}
        for _, line in lines:
            if not self.where.new("memory", line.id):
                continue
            ident = self.where.id("memory", line.id)
            chunks = next((v.chunks for v in line.vectors if v.model == active), None)
            values = line.model_dump(
                exclude={"memvault_export", "kind", "content", "history", "vectors"}
            )
            terms, length = blind_terms(keyring, line.content)
            values.update(
                tenant_id=self.tenant_id,
                id=ident,
                embedded=chunks is not None,
                embedding_model=active if chunks is not None else None,
                term_count=length,
                **seal_content(self.backend.keys, self.tenant_id, ident, line.content),
            )
            rows.append(values)
            history.extend(self.version(ident, v) for v in line.history)
            if chunks is not None:
                embedded[ident] = (self.user_id, chunks)
            postings[ident] = (self.user_id, terms, length)
        self.counts["memories"] += await db.insert_new(self.conn, db.TABLES["memory"], rows)
        await db.insert_new(self.conn, memory_history, history)
        await vectors.replace_chunks(self.conn, self.tenant_id, embedded, active)
        waiting = [ident for ident in postings if ident not in embedded]
        if waiting:
            await embedding_queue.enqueue(self.conn, self.tenant_id, waiting)
            self.counts["queued_for_embedding"] += len(waiting)
        await keywords.replace_terms(self.conn, self.tenant_id, postings)

    def version(
        self, ident: UUID, version: ExportedVersion, row_id: int | None = None
    ) -> dict[str, Any]:
        """A history row; with ``row_id``, the store's own row put back as it was (an undo),
        else one a file claims, marked as imported."""
        row: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "memory_id": ident,
            "user_id": self.user_id,
            "action": version.action,
            "old_metadata": version.old_metadata,
            "new_metadata": version.new_metadata,
            # Who imported it and when; what the file says is kept as its claim.
            "actor": self.actor,
            "created_at": self.now,
            "claimed_actor": version.claimed_actor or version.actor,
            "claimed_at": version.claimed_at or version.created_at,
        }
        if row_id is not None:
            row.update(
                id=row_id,
                actor=version.actor,
                created_at=version.created_at,
                claimed_actor=version.claimed_actor,
                claimed_at=version.claimed_at,
            )
        for side in ("old", "new"):
            text = getattr(version, f"{side}_content")
            sealed = (
                seal_content(self.backend.keys, self.tenant_id, ident, text)
                if text is not None
                else {}
            )
            row[f"{side}_ciphertext"] = sealed.get("ciphertext")
            row[f"{side}_nonce"] = sealed.get("nonce")
            row[f"{side}_key_id"] = sealed.get("key_id")
        return row

    async def conversations(self, lines: list[tuple[int, ConversationLine]]) -> None:
        rows, turns = [], []
        for _, line in lines:
            if self.where.new("conversation", line.id):
                values = line.model_dump(exclude={"memvault_export", "kind", "title", "turns"})
                if "consolidated_turns" not in conversations.c:
                    values.pop("consolidated_turns")
                rows.append(
                    {
                        **values,
                        "tenant_id": self.tenant_id,
                        **self._seal(conversations.name, (line.id,), {"title": line.title}),
                    }
                )
            for turn in line.turns:
                memory_id = self.where.ref("memory", turn.memory_id)
                turns.append(
                    {
                        "tenant_id": self.tenant_id,
                        "conversation_id": line.id,
                        "turn_index": turn.index,
                        "user_id": self.user_id,
                        "channel": line.channel,
                        "memory_id": memory_id,
                        "role": turn.role,
                        "model": turn.model,
                        "token_count": turn.token_count,
                        "occurred_at": turn.occurred_at,
                    }
                )
        self.counts["conversations"] += await db.insert_new(self.conn, conversations, rows)
        self.counts["turns"] += await db.insert_new(self.conn, conversation_turns, turns)

    async def tool_invocations(self, lines: list[tuple[int, ToolInvocationLine]]) -> None:
        rows = []
        for _, line in lines:
            if not self.where.new("tool_invocation", line.id):
                continue
            ident = self.where.id("tool_invocation", line.id)
            payload = {"input": line.input, "output": line.output, "error": line.error}
            values = line.model_dump(
                exclude={"memvault_export", "kind", "input", "output", "error"}
            )
            rows.append(
                {
                    **values,
                    "tenant_id": self.tenant_id,
                    "id": ident,
                    **self._seal(tool_invocations.name, (ident,), payload),
                }
            )
        self.counts["tool_invocations"] += await db.insert_new(self.conn, tool_invocations, rows)

    async def strategies(
        self, lines: list[tuple[int, StrategyLine]], vectors_for: graph_portable.Vectors
    ) -> None:
        rows = []
        for _, line in lines:
            if not self.where.new("strategy", line.id):
                continue
            ident = self.where.id("strategy", line.id)
            model, vector = vectors_for[("strategy", line.id)]
            payload = {"description": line.description, "context_pattern": line.context_pattern}
            values = line.model_dump(
                exclude={
                    "memvault_export",
                    "kind",
                    "description",
                    "context_pattern",
                    "embedding",
                    "embedding_model",
                }
            )
            rows.append(
                {
                    **values,
                    "tenant_id": self.tenant_id,
                    "id": ident,
                    "model": model,
                    "embedding": vector,
                    **self._seal(strategies.name, (ident,), payload),
                }
            )
        self.counts["strategies"] += await db.insert_new(self.conn, strategies, rows)

    async def goals(self, lines: list[tuple[int, GoalLine]]) -> None:
        rows: list[dict[str, Any]] = []
        blockers: list[dict[str, Any]] = []
        for _, line in lines:
            ident = self.where.id("goal", line.id)
            blockers.extend(
                {
                    "tenant_id": self.tenant_id,
                    "goal_id": ident,
                    "blocker_id": self.where.ref("goal", b),
                }
                for b in line.blocked_by
            )
            if not self.where.new("goal", line.id):
                continue
            payload = {"description": line.description, "result": line.result}
            values = line.model_dump(
                exclude={"memvault_export", "kind", "description", "result", "blocked_by"}
            )
            rows.append(
                {
                    **values,
                    "tenant_id": self.tenant_id,
                    "id": ident,
                    "parent_id": self.where.ref("goal", line.parent_id),
                    **self._seal(goals.name, (ident,), payload),
                }
            )
        # Parents before their subgoals (a batch of rows may end between them).
        self.counts["goals"] += await db.insert_new(self.conn, goals, _parents_first(rows))
        await db.insert_new(self.conn, goal_blockers, blockers)

    async def profiles(self, lines: list[tuple[int, ProfileLine]]) -> None:
        rows = []
        for _, line in lines:
            if not self.where.new("profile", line.channel):
                continue
            payload = {
                "preferences": line.preferences,
                "expertise": line.expertise,
                "communication_style": line.communication_style,
            }
            key = (self.user_id, line.channel)
            rows.append(
                {
                    "tenant_id": self.tenant_id,
                    "user_id": self.user_id,
                    "channel": line.channel,
                    "updated_at": line.updated_at,
                    **self._seal(user_profiles.name, key, payload),
                }
            )
        self.counts["profiles"] += await db.insert_new(self.conn, user_profiles, rows)


def _parents_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = {r["id"] for r in rows}
    placed: set[Any] = set()
    ordered: list[dict[str, Any]] = []
    pending = rows
    while pending:
        ready = [r for r in pending if r["parent_id"] not in ids or r["parent_id"] in placed]
        if not ready:  # a cycle: the foreign key refuses it as it would any other way
            ordered.extend(pending)
            break
        ordered.extend(ready)
        placed.update(r["id"] for r in ready)
        pending = [r for r in pending if r["id"] not in placed]
    return ordered
