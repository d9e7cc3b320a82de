"""Tenant and user isolation: no read or write path ever reaches another owner's memory."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import DBAPIError

from memvault import AsyncMemory, NotFound, Settings
from memvault.db.tenancy import all_tenants, tenant_scope
from tests.conftest import backend_of

tenants = st.sampled_from(["acme", "globex", "initech"])
users = st.sampled_from(["alice", "bob", "carol"])
content = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), min_size=1, max_size=40
)
writes = st.lists(st.tuples(tenants, users, content.filter(str.strip)), min_size=1, max_size=8)


@pytest.fixture
async def hashed(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    """A store with hash embeddings: who sees a memory does not depend on what it means, and
    the bundled model would embed every write."""
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(writes=writes)
async def test_memories_are_visible_only_to_their_owner(
    hashed: AsyncMemory, writes: list[tuple[str, str, str]]
) -> None:
    memory = hashed
    run = uuid.uuid4().hex[:8]  # examples share one database; keep each example's owners apart
    owners = [
        (f"{t}-{run}", f"{u}-{run}")
        for t in ("acme", "globex", "initech")
        for u in ("alice", "bob", "carol")
    ]
    stored = []
    for tenant, user, content in writes:
        owner = (f"{tenant}-{run}", f"{user}-{run}")
        record = await memory.for_tenant(owner[0]).add(
            content, user_id=owner[1], infer=False, pii_policy="allow"
        )
        stored.append((owner, record.id, content))

    for number, (tenant, user) in enumerate(owners):
        view = memory.for_tenant(tenant)
        mine = {rid for (o, rid, _) in stored if o == (tenant, user)}
        listed = {m.id for m in (await view.list(user_id=user, limit=100)).results}
        assert listed == mine
        for owner, rid, content in stored:
            if owner == (tenant, user):
                assert (await view.get(rid, user_id=user)).content == content
                continue
            with pytest.raises(NotFound):
                await view.get(rid, user_id=user)
            with pytest.raises(NotFound):
                await view.history(rid, user_id=user)
            with pytest.raises(NotFound):
                await view.update(rid, user_id=user, content="overwritten")
            with pytest.raises(NotFound):
                await view.delete(rid, user_id=user)
        if number % 3 == 2:
            # Erasing a user who owns nothing, once per tenant (after its last user's checks):
            # an erase is 29 statements, and the nine owners' names differ in nothing it reads;
            # the owners checked next, and the last loop, see anything it took.
            await view.delete_all(user_id=f"{user}-nobody")

    for (tenant, user), rid, content in stored:
        assert (await memory.for_tenant(tenant).get(rid, user_id=user)).content == content


async def test_delete_all_of_one_tenant_leaves_another_untouched(memory: AsyncMemory) -> None:
    a, b = memory.for_tenant("a"), memory.for_tenant("b")
    kept = await b.add("b's memory", user_id="same-user")
    await a.add("a's memory", user_id="same-user")
    assert await a.delete_all(user_id="same-user") == 1
    assert (await b.get(kept.id, user_id="same-user")).content == "b's memory"


TENANT_TABLES = (
    "memories",
    "memory_history",
    "memory_chunks",
    "memory_terms",
    "embedding_jobs",
    "decay_changes",
    "audit_log",
)


async def _tenants_seen(memory: AsyncMemory, table: str) -> set[str]:
    async with backend_of(memory).engine.connect() as conn:
        rows = await conn.execute(sa.text(f"SELECT DISTINCT tenant_id FROM {table}"))
        return set(rows.scalars().all())


async def test_the_database_hides_other_tenants_from_a_query_without_a_filter(
    memory: AsyncMemory,
) -> None:
    await memory.for_tenant("acme").add("acme plans", user_id="u", infer=False)
    await memory.for_tenant("globex").add("globex plans", user_id="u", infer=False)
    await memory.for_tenant("globex").add("long " * 400, user_id="u", infer=False)  # a job
    for tenant in ("acme", "globex"):
        with tenant_scope(tenant):
            for table in TENANT_TABLES:
                assert await _tenants_seen(memory, table) <= {tenant}, table
            assert await _tenants_seen(memory, "memories") == {tenant}
    # Code that names no tenant sees no tenant's rows.
    for table in TENANT_TABLES:
        assert await _tenants_seen(memory, table) == set(), table
    with all_tenants():
        assert await _tenants_seen(memory, "memories") == {"acme", "globex"}

    async with backend_of(memory).engine.connect() as conn:
        owner = await conn.scalar(
            sa.text("SELECT tableowner FROM pg_tables WHERE tablename = 'memories'")
        )
        assert await conn.scalar(sa.text("SELECT current_user")) != owner


async def test_the_database_refuses_writes_into_another_tenant(memory: AsyncMemory) -> None:
    theirs = await memory.for_tenant("globex").add("globex plans", user_id="u", infer=False)
    with tenant_scope("acme"):
        async with backend_of(memory).engine.begin() as conn:
            changed = await conn.execute(
                sa.text("UPDATE memories SET importance = 1 WHERE id = :i"), {"i": theirs.id}
            )
            assert changed.rowcount == 0
            deleted = await conn.execute(sa.text("DELETE FROM memories"))
            assert deleted.rowcount == 0
            moved = await conn.execute(
                sa.text("UPDATE memories SET tenant_id = 'acme' WHERE tenant_id = 'globex'")
            )
            assert moved.rowcount == 0
        with pytest.raises(DBAPIError, match="row-level security"):
            async with backend_of(memory).engine.begin() as conn:
                await conn.execute(
                    sa.text(
                        "INSERT INTO memory_history (tenant_id, memory_id, user_id, action, actor) "
                        "VALUES ('globex', :i, 'u', 'update', 'intruder')"
                    ),
                    {"i": theirs.id},
                )
    assert (await memory.for_tenant("globex").get(theirs.id, user_id="u")).content == (
        "globex plans"
    )
