"""Provable deletion: after deleting a memory, a user or a tenant, nothing of it is left in any
table of the database (read as the owner, partitions included) or in Redis — not its text, not
its ciphertext, not its blind keyword terms, not its cached vectors — and the deletion answered
a receipt that the audit log also holds."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import redis

from memvault.admin import AsyncAdmin
from memvault.config import Settings
from memvault.embedding.service import cache_key
from memvault.errors import NotFound
from memvault.retrieval.terms import blind_terms
from memvault.service import AsyncMemory

REDIS_URL = "redis://127.0.0.1:6379/0"


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
    for key in redis_client.scan_iter(match="memvault:*", count=1000):
        value = redis_client.get(key) or b""
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
    keyring = store._backend.keys.current()
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
                model = store._backend.embeddings.primary.model_id
                sigs[f"cache:{text}"] = cache_key(model, text).hex()
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
    shared, _ = blind_terms(store._backend.keys.current(), kept.content)
    signatures = await _signatures(store, raw, added.id, set(shared))
    before = _traces(raw, redis_client, signatures)
    # The search can fail: every kind of trace is there before the deletion.
    for kind in (
        "memories:ciphertext",
        "memory_history:ciphertext",
        "memory_terms:term",
        "redis:cache",
    ):
        assert any(t.startswith(kind) for t in before), (kind, sorted(before))

    receipt = await store.erase(added.id, user_id="ana")

    assert _traces(raw, redis_client, signatures) == set()
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
    admin = AsyncAdmin.of(store)
    await admin.create_api_key("acme")
    receipt = await admin.erase_tenant("acme")
    assert receipt.memories == 2 and receipt.counts["api_keys"] == 1
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
