"""Provable deletion: after deleting a memory, a user or a tenant, nothing of it is left in any
table of the database (read as the owner, partitions included) or in Redis — not its text, not
its ciphertext, not its blind keyword terms, not its cached vectors — and the deletion answered
a receipt that the audit log also holds."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import redis

from memvault.admin import AsyncAdmin
from memvault.config import Settings
from memvault.errors import NotFound
from memvault.language.terms import blind_terms
from memvault.service import AsyncMemory
from tests.conftest import REDIS_URL, backend_of


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    settings = make_settings(embedding_provider="hash", redis_url=REDIS_URL)
    opened = await AsyncMemory.open(settings)
    yield opened
    await opened.close()


def _every_table(raw: psycopg.Connection[Any]) -> list[str]:
    """Every table in the schema, not only those declared today: graph and cognitive tables,
    and each audit partition, are searched too once they exist."""
    rows = raw.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def _traces(
    raw: psycopg.Connection[Any], redis_client: Any, signatures: dict[str, str]
) -> set[str]:
    """Which signatures (plaintext, ciphertext hex, blind terms, cache keys) appear anywhere."""
    found = set()
    for table in _every_table(raw):
        for (text,) in raw.execute(f'SELECT t::text FROM "{table}" t'):
            found |= {f"{table}:{name}" for name, sig in signatures.items() if sig in text}
    keys = [*redis_client.scan_iter(match="memvault:*", count=1000)]
    for key in [*keys, *redis_client.scan_iter(match="working:*", count=1000)]:
        value = (redis_client.get(key) if redis_client.type(key) == b"string" else None) or b""
        blob = key.decode() + value.hex()
        found |= {f"redis:{name}" for name, sig in signatures.items() if sig in blob}
        found |= {
            f"redis:{name}"
            for name, sig in signatures.items()
            if name.startswith("text") and sig.encode() in value
        }
    return found


async def _signatures(
    store: AsyncMemory, raw: psycopg.Connection[Any], memory_id: Any, shared: set[int]
) -> dict[str, str]:
    """``shared``: blind terms another, kept memory also has (its owner's name, say)."""
    keyring = backend_of(store).keys.current()
    sigs: dict[str, str] = {}
    contents = raw.execute(
        "SELECT ciphertext FROM memories WHERE id = %(i)s UNION ALL "
        "SELECT old_ciphertext FROM memory_history WHERE memory_id = %(i)s "
        "AND old_ciphertext IS NOT NULL UNION ALL "
        "SELECT new_ciphertext FROM memory_history WHERE memory_id = %(i)s "
        "AND new_ciphertext IS NOT NULL",
        {"i": memory_id},
    ).fetchall()
    for n, (ciphertext,) in enumerate(contents):
        sigs[f"ciphertext{n}"] = ciphertext.hex()
    for version in await store.history(memory_id, user_id="ana"):
        for n, text in enumerate((version.old_content, version.new_content)):
            if text:
                sigs[f"text:{text}"] = text
                terms, _ = blind_terms(keyring, text)
                sigs.update({f"term{n}:{t}": str(t) for t in terms if t not in shared})
                service = backend_of(store).embeddings
                model = service.primary.model_id
                for owner in (None, ("default", "ana")):
                    (key,) = service.cache_keys(model, [text], owner)
                    sigs[f"cache:{owner}:{text}"] = key.hex()
    return sigs


async def test_a_deleted_memory_leaves_no_trace_in_any_table_or_in_redis(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    redis_client = redis.Redis.from_url(REDIS_URL)
    marker = uuid.uuid4().hex[:10]
    added = await store.add(
        f"Ana keeps the spare key under zqx{marker} stone", user_id="ana", infer=False
    )
    await store.update(added.id, user_id="ana", content=f"Ana moved the key to vrb{marker} pot")
    kept = await store.add(f"Ana likes green tea {marker}", user_id="ana", infer=False)
    await store.search(f"Ana moved the key to vrb{marker} pot", user_id="ana")  # caches it
    raw.execute(  # the worker's part, done here: vectors for the edited text
        "INSERT INTO memory_chunks (tenant_id, memory_id, model, chunk_index, user_id, embedding) "
        "SELECT tenant_id, memory_id, model, 1, user_id, embedding FROM memory_chunks "
        "WHERE memory_id = %s",
        (added.id,),
    )
    shared, _ = blind_terms(backend_of(store).keys.current(), kept.content)
    signatures = await _signatures(store, raw, added.id, set(shared))
    # In a thread: a background transaction of the store (an audit partition being made, say)
    # may hold a lock the scan waits for, and it can only finish while the loop runs.
    before = await asyncio.to_thread(_traces, raw, redis_client, signatures)
    # The search can fail: every kind of trace is there before the deletion.
    for kind in (
        "memories:ciphertext",
        "memory_history:ciphertext",
        "memory_terms:term",
        "redis:cache",
    ):
        assert any(t.startswith(kind) for t in before), (kind, sorted(before))

    receipt = await store.erase(added.id, user_id="ana")

    assert await asyncio.to_thread(_traces, raw, redis_client, signatures) == set()
    assert receipt.scope == "memory" and receipt.memories == 1
    assert receipt.counts["memories"] == 1
    assert receipt.counts["memory_chunks"] == 2
    assert receipt.counts["memory_terms"] > 0
    assert receipt.counts["embedding_cache"] >= 1
    assert (await store.get(kept.id, user_id="ana")).content == f"Ana likes green tea {marker}"
    history = await store.history(added.id, user_id="ana")
    assert receipt.counts["memory_history"] == len(history) - 1, (receipt.counts, history)
    assert [(h.action, h.old_content, h.new_content) for h in history] == [
        ("ADD", None, None),
        ("UPDATE", None, None),
        ("DELETE", None, None),
    ]
    audited = (await store.audit_log(operation="delete")).results
    assert [a.details["receipt"]["request_id"] for a in audited] == [receipt.request_id]
    assert audited[0].details["receipt"]["counts"] == receipt.counts
    with pytest.raises(NotFound):
        await store.erase(added.id, user_id="ana")


async def test_erasing_a_user_purges_their_history_when_set_to(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(embedding_provider="hash", deletion_history="purge")
    async with await AsyncMemory.open(settings) as store:
        first = await store.add("Bo plays the oboe", user_id="bo", infer=False)
        await store.delete(first.id, user_id="bo")
        with pytest.raises(NotFound):  # purged: not even a tombstone
            await store.history(first.id, user_id="bo")
        await store.add("Bo lives in Oslo", user_id="bo", infer=False)
        other = await store.add("Cy plays the cello", user_id="cy", infer=False)
        receipt = await store.erase_user(user_id="bo")
        assert (receipt.scope, receipt.memories, receipt.history) == ("user", 1, "purge")
        assert receipt.counts["memory_history"] == 1
        assert (await store.get(other.id, user_id="cy")).content == "Cy plays the cello"
    assert raw.execute("SELECT count(*) FROM memory_history WHERE user_id = 'bo'").fetchone() == (
        0,
    )
    assert raw.execute("SELECT count(*) FROM memories WHERE user_id = 'bo'").fetchone() == (0,)


async def test_audit_rows_still_queued_do_not_outlive_the_erasure(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    # A flush interval no test waits out: the writes' audit rows are queued when erasing.
    settings = make_settings(embedding_provider="hash", redis_url=REDIS_URL, audit_flush_ms=600_000)
    async with await AsyncMemory.open(settings) as store:
        acme = store.for_tenant("acme")
        await acme.add("acme roadmap", user_id="u", infer=False)
        await AsyncAdmin.of(store).erase_tenant("acme")
        await store.flush_audit()
    operations = raw.execute("SELECT operation FROM audit_log WHERE tenant_id = 'acme'").fetchall()
    assert operations == [("delete",)]


async def test_erasing_a_tenant_leaves_none_of_its_rows_but_the_receipt(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    acme, globex = store.for_tenant("acme"), store.for_tenant("globex")
    await acme.add("acme roadmap", user_id="u", infer=False)
    await acme.add("acme budget " * 200, user_id="u", infer=False)  # a queued job too
    kept = await globex.add("globex roadmap", user_id="u", infer=False)
    await _cognitive_life(acme, "u", "acme")  # every cognitive table, and Redis, hold some
    redis_client = redis.Redis.from_url(REDIS_URL)
    assert _working_keys(redis_client, "acme")
    admin = AsyncAdmin.of(store)
    await admin.create_api_key("acme")
    receipt = await admin.erase_tenant("acme")
    assert _working_keys(redis_client, "acme") == []
    assert receipt.memories == 3 and receipt.counts["api_keys"] == 1  # a turn is a memory
    for table in _every_table(raw):
        columns = {
            r[0]
            for r in raw.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
                (table,),
            )
        }
        if "tenant_id" not in columns or table.startswith("audit_log"):
            continue
        left = raw.execute(f'SELECT count(*) FROM "{table}" WHERE tenant_id = %s', ("acme",))
        assert left.fetchone() == (0,), table
    operations = raw.execute(
        "SELECT operation, details->'receipt'->>'scope' FROM audit_log WHERE tenant_id = 'acme'"
    ).fetchall()
    assert operations == [("delete", "tenant")]
    assert (await globex.get(kept.id, user_id="u")).content == "globex roadmap"


async def test_another_users_memory_cannot_be_erased(store: AsyncMemory) -> None:
    theirs = await store.for_tenant("globex").add("globex plans", user_id="u", infer=False)
    with pytest.raises(NotFound):
        await store.for_tenant("acme").erase(theirs.id, user_id="u")
    with pytest.raises(NotFound):
        await store.for_tenant("globex").erase(theirs.id, user_id="someone-else")
    assert (await store.for_tenant("globex").get(theirs.id, user_id="u")).content == "globex plans"


# --- cognitive memory ---------------------------------------------------------------------------

COGNITIVE_OWNED = (
    "conversations",
    "conversation_turns",
    "tool_invocations",
    "strategies",
    "goals",
    "user_profiles",
    "working_memory",
)


async def _cognitive_life(memory: AsyncMemory, user_id: str, marker: str) -> None:
    """Something in every cognitive table for ``user_id``: a conversation with turns, a tool
    call, a strategy, a goal blocked by another, a profile, a working-memory value."""
    convo = await memory.start_conversation(user_id=user_id, title=f"trip {marker}")
    await memory.add_turns(
        convo.id, [{"role": "user", "content": f"plan the zqx{marker} trip"}], user_id=user_id
    )
    await memory.record_tool_use(
        "search", user_id=user_id, conversation_id=convo.id, tool_input=marker, success=True
    )
    await memory.learn_strategy(f"search first {marker}", user_id=user_id, tool_sequence=["a"])
    first = await memory.add_goal(f"book {marker}", user_id=user_id)
    await memory.add_goal(f"pack {marker}", user_id=user_id, blocked_by=[first.id])
    await memory.update_profile(user_id=user_id, communication_style=f"brief {marker}")
    await memory.set_context(str(convo.id), "city", f"Lisbon {marker}", user_id=user_id)


def _cognitive_left(raw: psycopg.Connection[Any], tenant_id: str, user_id: str) -> dict[str, int]:
    left = {
        table: raw.execute(
            f'SELECT count(*) FROM "{table}" WHERE tenant_id = %s AND user_id = %s',
            (tenant_id, user_id),
        ).fetchone()[0]  # type: ignore[index]
        for table in COGNITIVE_OWNED
    }
    left["goal_blockers"] = raw.execute(
        "SELECT count(*) FROM goal_blockers b WHERE b.tenant_id = %s AND NOT EXISTS "
        "(SELECT 1 FROM goals g WHERE g.tenant_id = b.tenant_id AND g.id = b.goal_id "
        "AND g.user_id <> %s)",
        (tenant_id, user_id),
    ).fetchone()[0]  # type: ignore[index]
    return left


def _working_keys(redis_client: Any, tenant_id: str, user_id: str | None = None) -> list[bytes]:
    pattern = f"working:{tenant_id}:" + (f"{user_id}:*" if user_id else "*")
    return sorted(redis_client.scan_iter(match=pattern, count=1000))


@pytest.mark.parametrize("how", ["erase_user", "delete_all"])
async def test_erasing_a_user_takes_their_cognitive_memory_from_every_table_and_redis(
    store: AsyncMemory,
    make_settings: Callable[..., Settings],
    raw: psycopg.Connection[Any],
    how: str,
) -> None:
    redis_client = redis.Redis.from_url(REDIS_URL)
    marker = uuid.uuid4().hex[:10]
    ana, bo = f"ana-{marker}", f"bo-{marker}"
    await _cognitive_life(store, ana, marker)
    await _cognitive_life(store, bo, marker)
    # The same store without Redis keeps working memory in the UNLOGGED table.
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as no_redis:
        await no_redis.set_context("s1", "k", marker, user_id=ana)
        await no_redis.set_context("s1", "k", marker, user_id=bo)
    before, kept = _cognitive_left(raw, "default", ana), _cognitive_left(raw, "default", bo)
    assert all(before.values()), before  # the search can fail: every table holds some
    assert _working_keys(redis_client, "default", ana)

    if how == "erase_user":
        counts = (await store.erase_user(user_id=ana)).counts
    else:
        await store.delete_all(user_id=ana)
        (audited,) = [
            a for a in (await store.audit_log(operation="delete")).results if a.user_id == ana
        ]
        counts = audited.details["receipt"]["counts"]

    assert _cognitive_left(raw, "default", ana) == dict.fromkeys(before, 0)
    assert _working_keys(redis_client, "default", ana) == []
    for table, n in before.items():
        assert counts[table] == n, (table, counts)
    assert counts["working_memory_redis"] >= 2  # the value and its session's index
    assert _cognitive_left(raw, "default", bo) == kept
    assert _working_keys(redis_client, "default", bo)


async def test_erasing_a_turns_memory_takes_the_turn_and_counts_it(store: AsyncMemory) -> None:
    convo = await store.start_conversation(user_id="dee")
    await store.add_turns(convo.id, [{"role": "user", "content": "hello"}], user_id="dee")
    (turn,) = (await store.get_conversation(convo.id, user_id="dee", turns=True)).turns or []
    receipt = await store.erase(turn.memory_id, user_id="dee")
    assert receipt.counts["conversation_turns"] == 1
    assert receipt.counts["conversations"] == 0  # the conversation stays, one turn shorter
    assert (await store.get_conversation(convo.id, user_id="dee", turns=True)).turns == []


async def test_erasing_one_apps_memories_keeps_the_users_cognitive_memory(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    marker = uuid.uuid4().hex[:10]
    cy = f"cy-{marker}"
    await _cognitive_life(store, cy, marker)
    before = _cognitive_left(raw, "default", cy)
    receipt = await store.erase_user(user_id=cy, app_id="another-app")
    assert receipt.memories == 0
    assert _cognitive_left(raw, "default", cy) == before


async def test_erasing_a_tenant_takes_its_cognitive_memory_and_redis_keys(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    redis_client = redis.Redis.from_url(REDIS_URL)
    marker = uuid.uuid4().hex[:10]
    initech, umbrella = store.for_tenant("initech"), store.for_tenant("umbrella")
    await _cognitive_life(initech, "u1", marker)
    await _cognitive_life(initech, "u2", marker)
    await _cognitive_life(umbrella, "u1", marker)
    assert _working_keys(redis_client, "initech")
    receipt = await AsyncAdmin.of(store).erase_tenant("initech")
    for table in (*COGNITIVE_OWNED, "goal_blockers"):
        left = raw.execute(f'SELECT count(*) FROM "{table}" WHERE tenant_id = %s', ("initech",))
        assert left.fetchone() == (0,), table
        assert receipt.counts[table] >= (1 if table != "working_memory" else 0), table
    assert receipt.counts["goals"] == 4 and receipt.counts["goal_blockers"] == 2
    assert _working_keys(redis_client, "initech") == []
    assert all(
        _cognitive_left(raw, "umbrella", "u1")[t] for t in COGNITIVE_OWNED if t != "working_memory"
    )
    assert _working_keys(redis_client, "umbrella", "u1")
