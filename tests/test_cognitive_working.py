"""Working memory: the same behaviour on Redis and on PostgreSQL, sealed on both, every entry
expiring, no session (or tenant) seeing another's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from memvault import AsyncMemory, InvalidInput, NotFound, Settings, StoreUnavailable
from memvault.cognitive.working_store import PostgresWorkingStore, WorkingMemory, redis_key
from tests.conftest import REDIS_URL, backend_of
from tests.waiting import wait_for

REDIS = REDIS_URL  # this worker's own Redis database


@pytest.fixture(params=["postgres", "redis"])
async def memory(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings]
) -> AsyncIterator[AsyncMemory]:
    extra = {"redis_url": REDIS} if request.param == "redis" else {}
    opened = await AsyncMemory.open(make_settings(working_max_turns=3, **extra))
    yield opened.for_tenant(f"t-{uuid.uuid4().hex[:8]}")  # Redis outlives each test's database
    await opened.close()


async def test_values_are_kept_per_session(memory: AsyncMemory) -> None:
    await memory.set_context("c1", "city", {"name": "Lisbon"}, user_id="ann")
    await memory.set_context("c1", "city", {"name": "Porto"}, user_id="ann", channel="proj")
    await memory.set_context("c2", "city", "Faro", user_id="ann")
    assert await memory.get_context_value("c1", "city", user_id="ann") == {"name": "Lisbon"}
    assert await memory.get_context_value("c1", "city", user_id="ann", channel="proj") == {
        "name": "Porto"
    }
    for user, convo in (("bob", "c1"), ("ann", "c3")):
        with pytest.raises(NotFound):
            await memory.get_context_value(convo, "city", user_id=user)
    with pytest.raises(NotFound):
        await memory.for_tenant("someone-else").get_context_value("c1", "city", user_id="ann")
    await memory.delete_context_value("c1", "city", user_id="ann")
    with pytest.raises(NotFound):
        await memory.get_context_value("c1", "city", user_id="ann")
    with pytest.raises(NotFound):
        await memory.delete_context_value("c1", "city", user_id="ann")


async def test_context_holds_thoughts_goal_and_bounded_turns(memory: AsyncMemory) -> None:
    convo = await memory.start_conversation(user_id="ann")
    cid = str(convo.id)
    for n in range(5):
        await memory.add_turns(convo.id, [{"role": "user", "content": f"turn {n}"}], user_id="ann")
    await memory.push_thought(cid, "check the calendar", user_id="ann")
    assert await memory.push_thought(cid, "then book", user_id="ann") == [
        "check the calendar",
        "then book",
    ]
    assert await memory.pop_thought(cid, user_id="ann") == "then book"
    await memory.set_active_goal(cid, "book the trip", user_id="ann")
    await memory.set_context(cid, "budget", 900, user_id="ann")

    context = await memory.get_context(cid, user_id="ann")
    assert [t["content"] for t in context.turns] == ["turn 2", "turn 3", "turn 4"]
    assert context.thoughts == ["check the calendar"]
    assert context.active_goal == "book the trip"
    assert context.values == {"budget": 900}

    assert await memory.clear_session(cid, user_id="ann") == 4
    empty = await memory.get_context(cid, user_id="ann")
    assert (empty.turns, empty.values, empty.thoughts, empty.active_goal) == ([], {}, [], None)
    assert await memory.pop_thought(cid, user_id="ann") is None


async def test_entries_expire(memory: AsyncMemory) -> None:
    await memory.set_context("c1", "short", "soon gone", user_id="ann", ttl_seconds=0.2)
    await memory.set_context("c1", "long", "stays", user_id="ann")
    assert (await memory.get_context("c1", user_id="ann")).values == {
        "short": "soon gone",
        "long": "stays",
    }

    async def expired() -> bool:
        return (await memory.get_context("c1", user_id="ann")).values == {"long": "stays"}

    await wait_for(expired, 10, "the 0.2 s entry never expired")
    with pytest.raises(InvalidInput):
        await memory.set_context("c1", "k", 1, user_id="ann", ttl_seconds=0)


async def test_redis_keys_name_the_tenant_expire_and_hold_no_plaintext(
    make_settings: Callable[..., Settings],
) -> None:
    tenant = f"acme:{uuid.uuid4().hex[:6]}"  # a colon in a name cannot make keys collide
    opened = await AsyncMemory.open(make_settings(redis_url=REDIS))
    try:
        await opened.for_tenant(tenant).set_context("c1", "secret", "the vault code", user_id="ann")
    finally:
        await opened.close()
    client = redis.Redis.from_url(REDIS)
    key = redis_key(tenant, ("ann", "_global", "c1"), "kv", "secret")
    assert key.startswith("working:acme%3A") and ":ann:_global:c1:" in key
    blob = client.get(key)
    assert blob is not None and b"vault" not in blob
    assert 0 < client.pttl(key) <= 3_600_000
    index = [k for k in client.keys(f"working:acme%3A{tenant.split(':')[1]}:*")]
    assert all(client.pttl(k) > 0 for k in index) and len(index) == 2
    client.close()


async def test_postgres_store_expires_by_its_clock_and_seals(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    now = [1_000_000.0]
    store = PostgresWorkingStore(backend_of(memory).engine, clock=lambda: now[0])
    working = WorkingMemory(store, backend_of(memory).keys, ttl_s=3600, max_turns=5, max_thoughts=5)
    session = ("ann", "_global", "c9")
    from memvault.db.tenancy import tenant_scope

    with tenant_scope("t"):
        await working.put("t", session, "kv", "plan", "meet Carla at noon", ttl_s=60)
        assert await working.read("t", session) == {("kv", "plan"): "meet Carla at noon"}
        now[0] += 59
        assert await working.read("t", session) != {}
        now[0] += 2
        assert await working.read("t", session) == {}
        assert await store.purge_expired() == 1
    rows = raw.execute("SELECT ciphertext FROM working_memory").fetchall()
    assert all(b"Carla" not in r[0] for r in rows)
    (persistence,) = raw.execute(
        "SELECT relpersistence FROM pg_class WHERE relname = 'working_memory'"
    ).fetchone() or ("",)
    assert persistence == "u"


async def test_values_must_be_json(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        await memory.set_context("c1", "when", object(), user_id="ann")


async def test_without_redis_working_memory_fails_clearly_and_recall_degrades(
    make_settings: Callable[..., Settings],
) -> None:
    opened = await AsyncMemory.open(make_settings(redis_url="redis://127.0.0.1:1/0"))
    try:
        with pytest.raises(StoreUnavailable):
            await opened.set_context("c1", "k", "v", user_id="ann")
        await opened.add_goal("still recalled", user_id="ann")
        bundle = await opened.remember("what now?", user_id="ann", conversation_id="c1")
        assert bundle.diagnostics.degraded == ["working"] and bundle.working is None
        assert [g.description for g in bundle.goals] == ["still recalled"]
    finally:
        await opened.close()


names = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=6)


@given(a=st.tuples(names, names, names, names, names, names), b=st.tuples(*[names] * 6))
def test_distinct_sessions_never_share_a_redis_key(
    a: tuple[str, str, str, str, str, str], b: tuple[str, str, str, str, str, str]
) -> None:
    key_a = redis_key(a[0], (a[1], a[2], a[3]), a[4], a[5])
    key_b = redis_key(b[0], (b[1], b[2], b[3]), b[4], b[5])
    assert (key_a == key_b) == (a == b)


async def test_deleting_a_turn_or_its_conversation_leaves_the_session(
    memory: AsyncMemory,
) -> None:
    said = [{"role": "user", "content": "the door code is 8812"}, {"role": "user", "content": "hi"}]
    stored = await memory.add_messages(said, user_id="ann", conversation_id="door")
    await memory.set_context("door", "k", "v", user_id="ann")
    await memory.set_context("door-2", "k", "kept", user_id="ann")
    await memory.delete(stored[0].id, user_id="ann")
    context = await memory.get_context("door", user_id="ann")
    assert [t["content"] for t in context.turns] == ["hi"] and context.values == {"k": "v"}
    receipt = await memory.erase_conversation("door", user_id="ann")
    assert receipt.scope == "conversation" and receipt.memories == 1
    emptied = await memory.get_context("door", user_id="ann")
    assert emptied.turns == [] and emptied.values == {}
    assert await memory.get_context_value("door-2", "k", user_id="ann") == "kept"
