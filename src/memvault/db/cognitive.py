"""Every statement of cognitive memory: conversations and turns, working memory without Redis,
tool invocations, strategies, goals and profiles.

Rows go in and come out sealed; each function filters by the tenant it is given (and the row
policies of migration 0008 hold the line when one forgets).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import distinct_on, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import webhooks
from memvault.db.cognitive_records import (
    ConversationRow,
    ConversationToolCall,
    GoalRow,
    ProfileRow,
    RankedStrategy,
    StrategyRow,
    ToolInvocationRow,
    ToolStatRow,
    ToolStep,
    TurnRow,
    TurnWithContent,
    WorkingRow,
)
from memvault.db.records import field_names
from memvault.db.tables import (
    conversation_turns,
    conversations,
    goal_blockers,
    goals,
    memories,
    strategies,
    tool_invocations,
    user_profiles,
    working_memory,
)
from memvault.db.templates import param, template

_c = conversations.c
_t = conversation_turns.c
_w = working_memory.c
_i = tool_invocations.c
_s = strategies.c
_g = goals.c
_b = goal_blockers.c
_p = user_profiles.c
_m = memories.c


# --- conversations and turns ------------------------------------------------------------------


def _present_turns() -> sa.ScalarSelect[Any]:
    """How many of a conversation's turns are there now: a deleted turn's index is never
    reused, so ``turn_count`` (the next index) may be higher."""
    return (
        sa.select(sa.func.count())
        .where(_t.tenant_id == _c.tenant_id, _t.user_id == _c.user_id, _t.conversation_id == _c.id)
        .scalar_subquery()
    )


_NO_TURNS = sa.literal(0).label("turns_present")  # a row just written: not counted
# In an upsert's RETURNING: true when the row was inserted (PostgreSQL's xmax is 0 then).
_INSERTED: sa.Label[bool] = sa.literal_column("xmax = 0", sa.Boolean).label("inserted")


def _conversation_columns() -> list[Any]:
    return [*(col for col in conversations.c), _present_turns().label("turns_present")]


async def insert_conversation(
    conn: AsyncConnection, values: dict[str, Any]
) -> ConversationRow | None:
    """A new conversation; ``None`` when this user already has one by that id."""
    statement = (
        insert(conversations)
        .values(values)
        .on_conflict_do_nothing()
        .returning(*conversations.c, _NO_TURNS)
    )
    row = (await conn.execute(statement)).one_or_none()
    return None if row is None else ConversationRow.from_row(row)


# The largest value of an INTEGER column: a turn index or a count past it cannot be stored.
MAX_INTEGER = 2**31 - 1


async def claim_turns(
    conn: AsyncConnection, values: dict[str, Any], turns: int, at: datetime
) -> tuple[ConversationRow, bool] | None:
    """The conversation named in ``values`` (created from them on first use) with the next
    ``turns`` indices reserved for the caller: the row as it was before the reservation, so
    its ``turn_count`` is the first reserved index, and whether this call created it. One
    statement, so two writers to one conversation never take the same index. ``None``: the
    conversation has fewer than ``turns`` indices left (nothing reserved)."""
    new = insert(conversations).values({**values, "turn_count": turns, "last_turn_at": at})
    statement = new.on_conflict_do_update(
        constraint="pk_conversations",
        set_={"turn_count": _c.turn_count + turns, "last_turn_at": at},
        where=_c.turn_count <= MAX_INTEGER - turns,
    ).returning(*conversations.c, _NO_TURNS, _INSERTED)
    row = (await conn.execute(statement)).one_or_none()
    if row is None:
        return None
    after = ConversationRow.from_row(row)
    return dataclasses.replace(after, turn_count=after.turn_count - turns), bool(row.inserted)


async def fetch_conversation(
    conn: AsyncConnection, tenant_id: str, conversation_id: str, user_id: str, *, lock: bool
) -> ConversationRow | None:
    query = sa.select(*_conversation_columns()).where(
        _c.tenant_id == tenant_id, _c.id == conversation_id, _c.user_id == user_id
    )
    if lock:
        query = query.with_for_update(of=conversations)
    row = (await conn.execute(query)).one_or_none()
    return None if row is None else ConversationRow.from_row(row)


async def list_conversations(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str] | None,
    include_archived: bool,
    limit: int,
) -> list[ConversationRow]:
    where = [_c.tenant_id == tenant_id, _c.user_id == user_id]
    if channels is not None:
        where.append(_c.channel.in_(list(channels)))
    if not include_archived:
        where.append(_c.archived.is_(False))
    query = (
        sa.select(*_conversation_columns())
        .where(*where)
        .order_by(_c.started_at.desc(), _c.id)
        .limit(limit)
    )
    return [ConversationRow.from_row(row) for row in await conn.execute(query)]


async def set_conversation(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    conversation_id: str,
    values: dict[str, Any],
) -> None:
    await conn.execute(
        conversations.update()
        .where(_c.tenant_id == tenant_id, _c.user_id == user_id, _c.id == conversation_id)
        .values(values)
    )


async def advance_watermark(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    conversation_id: str,
    span: tuple[int, int],
    at: datetime,
) -> None:
    """Turns ``span`` = [first, end) count as consolidated, if every turn before them is."""
    first, end = span
    await conn.execute(
        conversations.update()
        .where(
            _c.tenant_id == tenant_id,
            _c.user_id == user_id,
            _c.id == conversation_id,
            _c.consolidated_turns == first,
        )
        .values(consolidated_turns=end, consolidated_at=at)
    )


async def forget_empty_conversation(
    conn: AsyncConnection, tenant_id: str, user_id: str, conversation_id: str
) -> None:
    """A conversation made for turns that were then refused (PII, limits) goes again, unless
    turns reached it meanwhile."""
    has_turns = (
        sa.select(sa.literal(1))
        .where(_t.tenant_id == _c.tenant_id, _t.user_id == _c.user_id, _t.conversation_id == _c.id)
        .exists()
    )
    await conn.execute(
        conversations.delete().where(
            _c.tenant_id == tenant_id, _c.user_id == user_id, _c.id == conversation_id, ~has_turns
        )
    )


_INSERT_TURNS = (
    insert(conversation_turns)
    .on_conflict_do_nothing()
    .returning(_t.tenant_id, _t.user_id, _t.conversation_id, _t.turn_index, _t.memory_id)
)


async def insert_turns(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert turns, each with its ``conversation.turn_added`` event."""
    if not rows:
        return
    # The same memory twice (a deduplicated repeat) keeps its first turn's row. The rows go
    # as parameter sets of one compiled statement (a VALUES list is compiled on every call).
    added = (await conn.execute(_INSERT_TURNS, list(rows))).all()
    events = [
        webhooks.Event(
            t.tenant_id,
            "conversation.turn_added",
            {
                "conversation_id": t.conversation_id,
                "turn_index": t.turn_index,
                "memory_id": str(t.memory_id),
                "user_id": t.user_id,
            },
            t.user_id,
        )
        for t in added
    ]
    await webhooks.emit(conn, events)


_TURN_COLUMNS = (*conversation_turns.c, _m.ciphertext, _m.nonce, _m.key_id)


def _turns_with_content() -> sa.Select[Any]:
    return sa.select(*_TURN_COLUMNS).join(
        memories, sa.and_(_m.tenant_id == _t.tenant_id, _m.id == _t.memory_id)
    )


async def fetch_turns(
    conn: AsyncConnection, tenant_id: str, user_id: str, conversation_id: str
) -> list[TurnWithContent]:
    query = (
        _turns_with_content()
        .where(
            _t.tenant_id == tenant_id, _t.user_id == user_id, _t.conversation_id == conversation_id
        )
        .order_by(_t.turn_index)
    )
    return [TurnWithContent.from_row(row) for row in await conn.execute(query)]


async def recent_turns(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str],
    since: datetime,
    limit: int,
) -> list[TurnWithContent]:
    """Newest first; the (tenant, user, channel, occurred_at) index reads them in order."""
    query = (
        _turns_with_content()
        .where(
            _t.tenant_id == tenant_id,
            _t.user_id == user_id,
            _t.channel.in_(list(channels)),
            _t.occurred_at >= since,
        )
        .order_by(_t.occurred_at.desc(), _t.turn_index.desc())
        .limit(limit)
    )
    return [TurnWithContent.from_row(row) for row in await conn.execute(query)]


async def turns_of_memories(
    conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]
) -> dict[UUID, TurnRow]:
    """The turn each memory was stored as (the first, for a deduplicated repeat)."""
    if not memory_ids:
        return {}
    query = template(("turns of memories",), _turns_of_memories)
    rows = await conn.execute(query, {"tenant_id": tenant_id, "ids": list(memory_ids)})
    return {row.memory_id: TurnRow.from_row(row) for row in rows}


def _turns_of_memories() -> sa.Select[Any]:
    return (
        sa.select(conversation_turns)
        .where(_t.tenant_id == param("tenant_id"), _t.memory_id.in_(param("ids", expanding=True)))
        .order_by(_t.memory_id, _t.occurred_at)
        .ext(distinct_on(_t.memory_id))
    )


# --- working memory (no Redis) ----------------------------------------------------------------


def _session(tenant_id: str, session: tuple[str, str, str]) -> list[sa.ColumnElement[bool]]:
    user_id, channel, conversation_id = session
    return [
        _w.tenant_id == tenant_id,
        _w.user_id == user_id,
        _w.channel == channel,
        _w.conversation_id == conversation_id,
    ]


async def put_working(conn: AsyncConnection, values: dict[str, Any], now: datetime) -> None:
    """Upsert one entry, and drop the session's expired ones on the way (abandoned sessions
    are left to ``purge_expired_working``)."""
    session = (values["user_id"], values["channel"], values["conversation_id"])
    await conn.execute(
        working_memory.delete().where(*_session(values["tenant_id"], session), _w.expires_at <= now)
    )
    statement = insert(working_memory).values(values)
    await conn.execute(
        statement.on_conflict_do_update(
            constraint="pk_working_memory",
            set_={
                "ciphertext": statement.excluded.ciphertext,
                "nonce": statement.excluded.nonce,
                "key_id": statement.excluded.key_id,
                "expires_at": statement.excluded.expires_at,
            },
        )
    )


async def get_working(
    conn: AsyncConnection,
    tenant_id: str,
    session: tuple[str, str, str],
    slot: str | None,
    key: str | None,
    now: datetime,
) -> list[WorkingRow]:
    shape = (slot is not None, key is not None)
    query = template(("working", *shape), _working, *shape)
    user_id, channel, conversation_id = session
    values = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "channel": channel,
        "conversation_id": conversation_id,
        "now": now,
        **({"slot": slot} if slot is not None else {}),
        **({"key": key} if key is not None else {}),
    }
    return [WorkingRow.from_row(row) for row in await conn.execute(query, values)]


def _working(by_slot: bool, by_key: bool) -> sa.Select[Any]:
    where = [
        _w.tenant_id == param("tenant_id"),
        _w.user_id == param("user_id"),
        _w.channel == param("channel"),
        _w.conversation_id == param("conversation_id"),
        _w.expires_at > param("now"),
    ]
    if by_slot:
        where.append(_w.slot == param("slot"))
    if by_key:
        where.append(_w.key == param("key"))
    return sa.select(working_memory).where(*where)


async def delete_working(
    conn: AsyncConnection,
    tenant_id: str,
    session: tuple[str, str, str],
    slot: str | None,
    key: str | None,
) -> int:
    where = _session(tenant_id, session)
    if slot is not None:
        where.append(_w.slot == slot)
    if key is not None:
        where.append(_w.key == key)
    result = await conn.execute(working_memory.delete().where(*where))
    return int(result.rowcount)


async def purge_expired_working(conn: AsyncConnection, now: datetime) -> int:
    result = await conn.execute(working_memory.delete().where(_w.expires_at <= now))
    return int(result.rowcount)


# --- tool invocations and strategies ----------------------------------------------------------


async def insert_invocation(conn: AsyncConnection, values: dict[str, Any]) -> ToolInvocationRow:
    statement = tool_invocations.insert().values(values).returning(tool_invocations)
    return ToolInvocationRow.from_row((await conn.execute(statement)).one())


async def conversation_tools(
    conn: AsyncConnection, tenant_id: str, user_id: str, conversation_id: str
) -> list[ToolStep]:
    query = (
        sa.select(_i.tool_name, _i.success)
        .where(
            _i.tenant_id == tenant_id, _i.user_id == user_id, _i.conversation_id == conversation_id
        )
        .order_by(_i.created_at, _i.id)
    )
    return [ToolStep.from_row(row) for row in await conn.execute(query)]


async def tool_stats(
    conn: AsyncConnection, tenant_id: str, user_id: str, channels: Sequence[str] | None
) -> list[ToolStatRow]:
    where = [_i.tenant_id == tenant_id, _i.user_id == user_id]
    if channels is not None:
        where.append(_i.channel.in_(list(channels)))
    query = (
        sa.select(
            _i.tool_name,
            _i.channel,
            sa.func.count().label("uses"),
            sa.func.avg(sa.case((_i.success, 1.0), else_=0.0)).label("success_rate"),
            sa.func.avg(_i.latency_ms).label("avg_latency_ms"),
        )
        .where(*where)
        .group_by(_i.tool_name, _i.channel)
        .order_by(_i.channel, _i.tool_name)
    )
    return [ToolStatRow.from_row(row) for row in await conn.execute(query)]


# A strategy's columns but its vector, which only the database compares.
_STRATEGY_COLUMNS = [strategies.c[name] for name in field_names(StrategyRow)]


async def insert_strategy(conn: AsyncConnection, values: dict[str, Any]) -> StrategyRow:
    statement = strategies.insert().values(values).returning(*_STRATEGY_COLUMNS)
    return StrategyRow.from_row((await conn.execute(statement)).one())


async def nearest_strategies(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str],
    model: str,
    vector: Sequence[float],
    limit: int,
) -> list[RankedStrategy]:
    """Strategies by cosine similarity to ``vector``, exact: a user has hundreds, not millions."""
    query = template(("nearest strategies",), _nearest_strategies)
    values = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "channels": list(channels),
        "model": model,
        "vector": list(vector),
        "limit": limit,
    }
    return [RankedStrategy.from_row(row) for row in await conn.execute(query, values)]


def _nearest_strategies() -> sa.Select[Any]:
    probe = param("vector", type_=_s.embedding.type)
    similarity = (1 - _s.embedding.cosine_distance(probe)).label("similarity")
    return (
        sa.select(*_STRATEGY_COLUMNS, similarity)
        .where(
            _s.tenant_id == param("tenant_id"),
            _s.user_id == param("user_id"),
            _s.channel.in_(param("channels", expanding=True)),
            _s.model == param("model"),
        )
        .order_by(similarity.desc(), _s.id)
        .limit(param("limit"))
    )


async def reinforce_strategy(
    conn: AsyncConnection,
    tenant_id: str,
    strategy_id: UUID,
    user_id: str,
    success: bool,
    at: datetime,
) -> StrategyRow | None:
    counter = _s.success_count if success else _s.failure_count
    # A count at the column's limit stays there (an imported one may start there): the
    # ratio it feeds barely moves, and the outcome is still recorded by last_used.
    counted = sa.func.least(sa.cast(counter, sa.BigInteger) + 1, MAX_INTEGER)
    statement = (
        strategies.update()
        .where(_s.tenant_id == tenant_id, _s.id == strategy_id, _s.user_id == user_id)
        .values({counter: counted, _s.last_used: at})
        .returning(*_STRATEGY_COLUMNS)
    )
    row = (await conn.execute(statement)).one_or_none()
    return None if row is None else StrategyRow.from_row(row)


# --- goals --------------------------------------------------------------------------------------


async def insert_goal(
    conn: AsyncConnection, values: dict[str, Any], blocked_by: Sequence[UUID]
) -> None:
    await conn.execute(goals.insert().values(values))
    if blocked_by:
        await conn.execute(
            goal_blockers.insert(),
            [
                {"tenant_id": values["tenant_id"], "goal_id": values["id"], "blocker_id": b}
                for b in blocked_by
            ],
        )


def _goal_query(tenant_id: str | sa.BindParameter[Any]) -> sa.Select[Any]:
    """Goals with the blockers still open: a goal waiting on an unfinished goal reads as
    blocked, and completing the blocker unblocks it with no write to the goal itself."""
    blocker = goals.alias("blocker")
    open_blockers = (
        sa.select(sa.func.coalesce(sa.func.array_agg(_b.blocker_id), sa.text("'{}'::uuid[]")))
        .join(blocker, sa.and_(blocker.c.tenant_id == _b.tenant_id, blocker.c.id == _b.blocker_id))
        .where(
            _b.tenant_id == _g.tenant_id,
            _b.goal_id == _g.id,
            blocker.c.status.in_(("active", "blocked")),
        )
        .scalar_subquery()
        .label("open_blockers")
    )
    all_blockers = (
        sa.select(sa.func.coalesce(sa.func.array_agg(_b.blocker_id), sa.text("'{}'::uuid[]")))
        .where(_b.tenant_id == _g.tenant_id, _b.goal_id == _g.id)
        .scalar_subquery()
        .label("blocked_by")
    )
    return sa.select(goals, open_blockers, all_blockers).where(_g.tenant_id == tenant_id)


async def fetch_goals(
    conn: AsyncConnection, tenant_id: str, user_id: str, goal_ids: Sequence[UUID]
) -> list[GoalRow]:
    query = _goal_query(tenant_id).where(_g.user_id == user_id, _g.id.in_(list(goal_ids)))
    return [GoalRow.from_row(row) for row in await conn.execute(query)]


# Goals that are still open (a stored "active" goal may read as blocked), and how many of a
# user's are listed before the read status cuts them to the caller's limit.
OPEN = ("active", "blocked")
LISTED_GOALS = 1_000


async def list_goals(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    statuses: Sequence[str] | None,
    channels: Sequence[str] | None,
    limit: int,
) -> list[GoalRow]:
    shape = (statuses is not None, channels is not None)
    query = template(("list goals", *shape), list_goals_query, *shape)
    values: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id, "limit": limit}
    if statuses is not None:
        values["statuses"] = list(statuses)
    if channels is not None:
        values["channels"] = list(channels)
    return [GoalRow.from_row(row) for row in await conn.execute(query, values)]


def list_goals_query(by_status: bool, by_channel: bool) -> sa.Select[Any]:
    """A template: the owner's goals by priority, then deadline (``statuses``, ``channels``
    when asked), at most ``limit``."""
    where = [_g.user_id == param("user_id")]
    if by_status:
        where.append(_g.status.in_(param("statuses", expanding=True)))
    if by_channel:
        where.append(_g.channel.in_(param("channels", expanding=True)))
    return (
        _goal_query(param("tenant_id"))
        .where(*where)
        .order_by(_g.priority.desc(), _g.deadline.asc().nulls_last(), _g.created_at, _g.id)
        .limit(param("limit"))
    )


async def finish_goal(
    conn: AsyncConnection,
    tenant_id: str,
    goal_id: UUID,
    user_id: str,
    values: dict[str, Any],
) -> bool:
    result = await conn.execute(
        goals.update()
        .where(_g.tenant_id == tenant_id, _g.id == goal_id, _g.user_id == user_id)
        .values(values)
    )
    return bool(result.rowcount)


async def count_owned_goals(
    conn: AsyncConnection, tenant_id: str, user_id: str, goal_ids: Sequence[UUID]
) -> int:
    query = sa.select(sa.func.count()).where(
        _g.tenant_id == tenant_id, _g.user_id == user_id, _g.id.in_(list(goal_ids))
    )
    return int((await conn.execute(query)).scalar_one())


# --- profiles -----------------------------------------------------------------------------------


async def fetch_profiles(
    conn: AsyncConnection, tenant_id: str, user_id: str, channels: Sequence[str], *, lock: bool
) -> list[ProfileRow]:
    query = template(("profiles", lock), _profiles, lock)
    values = {"tenant_id": tenant_id, "user_id": user_id, "channels": list(channels)}
    return [ProfileRow.from_row(row) for row in await conn.execute(query, values)]


def _profiles(lock: bool) -> sa.Select[Any]:
    query = sa.select(user_profiles).where(
        _p.tenant_id == param("tenant_id"),
        _p.user_id == param("user_id"),
        _p.channel.in_(param("channels", expanding=True)),
    )
    return query.with_for_update() if lock else query


async def put_profile(conn: AsyncConnection, values: dict[str, Any]) -> None:
    statement = insert(user_profiles).values(values)
    await conn.execute(
        statement.on_conflict_do_update(
            constraint="pk_user_profiles",
            set_={
                "ciphertext": statement.excluded.ciphertext,
                "nonce": statement.excluded.nonce,
                "key_id": statement.excluded.key_id,
                "updated_at": sa.func.now(),
            },
        )
    )


# --- deletion and upkeep (lifecycle/deletion_steps.py and cognitive/upkeep.py call these) -----


async def delete_owned(
    conn: AsyncConnection, table: sa.Table, tenant_id: str, user_id: str | None
) -> int:
    """A user's rows of one cognitive table; with ``user_id`` None, the whole tenant's."""
    where: list[sa.ColumnElement[bool]] = [table.c.tenant_id == tenant_id]
    if user_id is not None:
        if table is goal_blockers:
            owned = sa.select(_g.id).where(_g.tenant_id == tenant_id, _g.user_id == user_id)
            where.append(_b.goal_id.in_(owned.scalar_subquery()))
        else:
            where.append(table.c.user_id == user_id)
    result = await conn.execute(table.delete().where(*where))
    return int(result.rowcount)


async def conversation_exists(
    conn: AsyncConnection, tenant_id: str, user_id: str, conversation_id: str
) -> bool:
    query = sa.select(sa.literal(1)).where(
        _c.tenant_id == tenant_id, _c.user_id == user_id, _c.id == conversation_id
    )
    return (await conn.execute(query)).first() is not None


async def delete_conversation_rows(
    conn: AsyncConnection, table: sa.Table, tenant_id: str, user_id: str, conversation_id: str
) -> int:
    """One conversation's rows of a cognitive table that names conversations."""
    column = table.c.id if table is conversations else table.c.conversation_id
    result = await conn.execute(
        table.delete().where(
            table.c.tenant_id == tenant_id,
            table.c.user_id == user_id,
            column == conversation_id,
        )
    )
    return int(result.rowcount)


async def delete_turns_of(conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]) -> int:
    """The turns stored as these memories (the memories' cascade would take them uncounted)."""
    if not memory_ids:
        return 0
    result = await conn.execute(
        conversation_turns.delete().where(
            _t.tenant_id == tenant_id, _t.memory_id.in_(list(memory_ids))
        )
    )
    return int(result.rowcount)


def _idle_since(before: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        _c.archived.is_(False), sa.func.coalesce(_c.last_turn_at, _c.started_at) < before
    )


async def archive_idle_conversations(
    conn: AsyncConnection, before: datetime, *, dry_run: bool
) -> int:
    """Every tenant's conversations with no turn since ``before`` (started before it, if none)."""
    if dry_run:
        query = sa.select(sa.func.count()).select_from(conversations).where(_idle_since(before))
        return int((await conn.execute(query)).scalar_one())
    result = await conn.execute(
        conversations.update().where(_idle_since(before)).values(archived=True)
    )
    return int(result.rowcount)


async def count_expired_working(conn: AsyncConnection, now: datetime) -> int:
    query = sa.select(sa.func.count()).select_from(working_memory).where(_w.expires_at <= now)
    return int((await conn.execute(query)).scalar_one())


async def tool_calls_of_recent_conversations(
    conn: AsyncConnection, since: datetime
) -> list[ConversationToolCall]:
    """Every tool call, in order, of the conversations (every tenant's) with one since
    ``since``: what the patterns job learns strategies from."""
    recent = (
        sa.select(_i.tenant_id, _i.user_id, _i.conversation_id)
        .where(_i.conversation_id.is_not(None), _i.created_at >= since)
        .distinct()
        .subquery()
    )
    query = (
        sa.select(
            _i.tenant_id, _i.user_id, _i.channel, _i.conversation_id, _i.tool_name, _i.success
        )
        .join(
            recent,
            sa.and_(
                recent.c.tenant_id == _i.tenant_id,
                recent.c.user_id == _i.user_id,
                recent.c.conversation_id == _i.conversation_id,
            ),
        )
        .order_by(_i.tenant_id, _i.user_id, _i.conversation_id, _i.created_at, _i.id)
    )
    return [ConversationToolCall.from_row(row) for row in await conn.execute(query)]


async def learned_sequences(
    conn: AsyncConnection, conversations: Sequence[tuple[str, str, str]]
) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """(tenant, user, conversation, tool sequence) of the strategies already learned from
    these (tenant, user, conversation)."""
    if not conversations:
        return set()
    key = sa.tuple_(_s.tenant_id, _s.user_id, _s.source_conversation_id)
    query = sa.select(_s.tenant_id, _s.user_id, _s.source_conversation_id, _s.tool_sequence).where(
        key.in_(list(conversations))
    )
    return {
        (row.tenant_id, row.user_id, row.source_conversation_id, tuple(row.tool_sequence))
        for row in await conn.execute(query)
    }
