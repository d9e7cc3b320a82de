"""Reads that take turns on one connection (db/units.shared_reads), as remember()'s kinds do:
each task still sees its own tenant's rows only, a failed read does not spoil the next, and a
read for another tenant never borrows the shared connection."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from memvault import AsyncMemory
from memvault.backend import Backend
from memvault.db.tenancy import tenant_scope
from memvault.db.units import reading, shared_reads

BACKEND_PID = sa.text("SELECT pg_backend_pid()")
COUNT = sa.text("SELECT count(*) FROM memories")


async def _seen(engine: sa.ext.asyncio.AsyncEngine) -> tuple[int, int]:
    async with reading(engine) as conn:
        pid = (await conn.execute(BACKEND_PID)).scalar_one()
        await asyncio.sleep(0)  # let the other readers queue up behind this one
        count = (await conn.execute(COUNT)).scalar_one()
    return pid, count


@pytest.fixture
async def two_tenants(memory: AsyncMemory) -> AsyncMemory:
    await memory.add("Ada's first memory", user_id="ada", infer=False)
    await memory.add("Ada's second memory", user_id="ada", infer=False)
    await memory.for_tenant("other").add("someone else's", user_id="bo", infer=False)
    return memory


async def test_concurrent_reads_share_one_connection_and_see_their_tenant_only(
    two_tenants: AsyncMemory, backend: Backend
) -> None:
    with tenant_scope("default"):
        async with shared_reads(backend.engine):
            seen = await asyncio.gather(*(_seen(backend.engine) for _ in range(8)))
    assert {count for _, count in seen} == {2}
    assert len({pid for pid, _ in seen}) == 1


async def test_without_sharing_each_read_may_use_its_own_connection(
    two_tenants: AsyncMemory, backend: Backend
) -> None:
    with tenant_scope("default"):
        seen = await asyncio.gather(*(_seen(backend.engine) for _ in range(4)))
    assert {count for _, count in seen} == {2}
    assert len({pid for pid, _ in seen}) > 1


async def test_a_read_for_another_tenant_does_not_borrow_the_shared_connection(
    two_tenants: AsyncMemory, backend: Backend
) -> None:
    with tenant_scope("default"):
        async with shared_reads(backend.engine):
            mine = await _seen(backend.engine)
            async with reading(backend.engine, "other") as conn:
                theirs = (await conn.execute(COUNT)).scalar_one()
                their_pid = (await conn.execute(BACKEND_PID)).scalar_one()
            with tenant_scope("other"):
                scoped = await _seen(backend.engine)
    assert (mine[1], theirs, scoped[1]) == (2, 1, 1)
    assert their_pid != mine[0] and scoped[0] != mine[0]


async def test_a_failed_read_does_not_spoil_the_next(
    two_tenants: AsyncMemory, backend: Backend
) -> None:
    with tenant_scope("default"):
        async with shared_reads(backend.engine):
            with pytest.raises(sa.exc.ProgrammingError):
                async with reading(backend.engine) as conn:
                    await conn.execute(sa.text("SELECT * FROM no_such_table"))
            _, count = await _seen(backend.engine)
    assert count == 2


async def test_remember_recalls_alike_with_its_reads_shared(memory: AsyncMemory) -> None:
    """remember() runs its kinds' small reads on the shared connection: every kind still
    answers (a goal, the profile, the session's tool call, an earlier conversation's turn)."""
    conversation = "trip-planning"
    await memory.add_messages(
        [{"role": "user", "content": "I want to book a hotel in Lisbon near Alfama."}],
        user_id="ada",
        conversation_id="last-week",
    )
    await memory.add_messages(
        [{"role": "user", "content": "Let's plan the trip."}],
        user_id="ada",
        conversation_id=conversation,
    )
    await memory.add_goal("Book a hotel in Lisbon", user_id="ada")
    await memory.update_profile(user_id="ada", communication_style="brief")
    await memory.record_tool_use(
        "hotel_search",
        user_id="ada",
        tool_input={"city": "Lisbon"},
        tool_output={"found": 3},
        success=True,
        conversation_id=conversation,
    )
    bundle = await memory.remember("hotel in Lisbon", user_id="ada", conversation_id=conversation)
    assert [g.description for g in bundle.goals] == ["Book a hotel in Lisbon"]
    assert bundle.profile is not None and bundle.profile.communication_style == "brief"
    assert [o.tool_name for o in bundle.tool_outcomes] == ["hotel_search"]
    assert "Alfama" in bundle.as_prompt()
