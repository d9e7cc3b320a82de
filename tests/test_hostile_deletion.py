"""Deletion that leaves nothing: a user with something in every kind of memory (memories and
what the graph derived from them, conversation turns, tool calls, goals, a strategy, a profile,
working memory, a promotion with its reason, searches and recalls that fill the embedding
cache); one memory erased, then the user. Every table and every Redis key is scanned for the
user's texts, derived texts, ids, blind keyword terms and cache keys.

Two stores keep ids by design and are left out of the id scan: the audit log (who did what to
which ids, and when: the deletion receipts are the proof asked for) and history tombstones
(``deletion_history=tombstone``: an id and an action, no content)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import redis

from memvault.config import Settings
from memvault.language.terms import blind_terms
from memvault.service import AsyncMemory
from tests.conftest import REDIS_URL, backend_of

KEEPS_IDS = ("audit_log", "memory_history")


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    settings = make_settings(embedding_provider="hash", redis_url=REDIS_URL, audit_level="verbose")
    opened = await AsyncMemory.open(settings)
    yield opened
    await opened.close()


def _tables(raw: psycopg.Connection[Any]) -> list[str]:
    rows = raw.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
    return [r[0] for r in rows.fetchall()]


def _scan(
    raw: psycopg.Connection[Any], signatures: dict[str, str], ids: dict[str, str]
) -> set[str]:
    """Where each signature (texts, ciphertexts, terms, cache keys) or id is found."""
    found: set[str] = set()
    for table in _tables(raw):
        for (row,) in raw.execute(f'SELECT t::text FROM "{table}" t'):
            found |= {f"{table}:{name}" for name, sig in signatures.items() if sig in row}
            if not table.startswith(KEEPS_IDS):
                found |= {f"{table}:{name}" for name, ident in ids.items() if ident in row}
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match="*", count=1000):
        value = client.get(key) if client.type(key) == b"string" else b""
        blob = key.decode(errors="replace") + (value or b"").decode(errors="replace")
        blob += key.hex() + (value or b"").hex()
        found |= {f"redis:{name}" for name, sig in signatures.items() if sig in blob}
        found |= {f"redis:{name}" for name, ident in ids.items() if ident in blob}
    return found


async def _fill(store: AsyncMemory, user: str, marker: str) -> dict[str, str]:
    """Something of ``user`` in every kind; answers the ids made, by kind."""
    ids: dict[str, str] = {}
    said = await store.add(
        f"Erin lives in Zqx{marker}ville and works at Vrb{marker} Corp", user_id=user, wait=True
    )
    ids["memory"] = str(said.id)
    other = await store.add(f"Erin likes kumquat{marker} jam", user_id=user, infer=False)
    ids["memory2"] = str(other.id)
    convo = await store.start_conversation(user_id=user, title=f"trip {marker}")
    ids["conversation"] = str(convo.id)
    await store.add_turns(
        convo.id, [{"role": "user", "content": f"plan the qwt{marker} trip"}], user_id=user
    )
    use = await store.record_tool_use(
        "search", user_id=user, conversation_id=convo.id, tool_input=marker, success=True
    )
    ids["tool"] = str(use.id)
    strategy = await store.learn_strategy(
        f"search first {marker}", user_id=user, tool_sequence=["search"]
    )
    ids["strategy"] = str(strategy.id)
    first = await store.add_goal(f"book {marker}", user_id=user)
    second = await store.add_goal(f"pack {marker}", user_id=user, blocked_by=[first.id])
    ids["goal"], ids["goal2"] = str(first.id), str(second.id)
    await store.update_profile(user_id=user, communication_style=f"brief {marker}")
    await store.set_context(str(convo.id), "city", f"Lisbon {marker}", user_id=user)
    fact = await store.add_fact(
        "@user", "favourite_colour", value=f"teal{marker}", user_id=user, channel="proj"
    )
    ids["fact"] = str(fact.id)
    promoted = await store.promote(fact.id, user_id=user, reason=f"pinned by nyx{marker}")
    ids["promoted"] = str(promoted.id)
    for entity in await store.entities(user_id=user):
        ids[f"entity:{entity.name}"] = str(entity.id)
    for found in await store.facts(user_id=user):
        ids[f"fact:{found.claim}"] = str(found.id)
    await store.search(f"where does Erin live jxq{marker}", user_id=user)
    await store.remember(f"what should Erin pack pwz{marker}", user_id=user)
    await store.flush_audit()
    return ids


def _signatures(store: AsyncMemory, user: str, marker: str, texts: list[str]) -> dict[str, str]:
    keyring = backend_of(store).keys.current()
    sigs = {"marker": marker}
    for text in texts:
        terms, _ = blind_terms(keyring, text)
        sigs.update({f"term:{text}:{t}": str(t) for t in terms if str(t).lstrip("-")[:1]})
    for tag in backend_of(store).embeddings.owner_tags(("default", user)):
        sigs["cache-owner-tag"] = f"memvault:emb:{tag.hex()}"
    return {k: v for k, v in sigs.items() if not k.startswith("term:") or marker in k}


async def test_erasing_a_memory_then_the_user_leaves_nothing_anywhere(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    marker = uuid.uuid4().hex[:10]
    user = f"erin-{uuid.uuid4().hex[:6]}"  # kept by the receipts: not the marker
    kept = await store.add(f"Frank keeps his own note {marker}", user_id="frank", infer=False)
    ids = await _fill(store, user, marker)
    claims = [k.removeprefix("fact:") for k in ids if k.startswith("fact:")]
    assert any(f"Zqx{marker}ville" in c for c in claims), claims  # derived, so checked below

    # One memory first: its text, what was derived from it, its cache entries.
    service = backend_of(store).embeddings
    names = [k.removeprefix("entity:") for k in ids if k.startswith("entity:")]
    derived = [t for t in claims + names if f"Zqx{marker}ville" in t or f"Vrb{marker}" in t]
    assert any(t in names for t in derived), (names, derived)
    cache = {
        f"cache:{owner}:{text}": f"memvault:emb:{key.hex()}"
        for text in [f"Erin lives in Zqx{marker}ville and works at Vrb{marker} Corp", *derived]
        for owner in (None, ("default", user))
        for key in service.cache_keys(service.primary.model_id, [text], owner)
    }
    before = await asyncio.to_thread(_scan, raw, cache, {})
    cached = {t.split(":", 3)[3] for t in before if t.startswith("redis:cache")}
    assert set(derived) <= cached, (derived, before)  # the scan can fail
    await store.erase(uuid.UUID(ids["memory"]), user_id=user)
    assert await asyncio.to_thread(_scan, raw, cache, {}) == set()

    # Then the user.
    texts = [f"Zqx{marker}ville", f"kumquat{marker}", f"qwt{marker}", f"nyx{marker}"]
    signatures = _signatures(store, user, marker, texts)
    before = await asyncio.to_thread(_scan, raw, signatures, ids)
    for kind in ("audit_log:marker", "memory_terms:term", "redis:cache-owner-tag", "redis:"):
        assert any(t.startswith(kind) for t in before), (kind, sorted(before))
    await store.erase_user(user_id=user)
    await store.flush_audit()
    left = await asyncio.to_thread(_scan, raw, signatures, ids)
    assert left == set(), sorted(left)
    assert (await store.get(kept.id, user_id="frank")).content.startswith("Frank keeps")


def _tagged(tags: list[bytes]) -> list[bytes]:
    client = redis.Redis.from_url(REDIS_URL)
    return [k for tag in tags for k in client.scan_iter(match=f"memvault:emb:{tag.hex()}*")]


async def test_erasing_a_tenant_takes_the_cache_entries_of_all_its_users(
    store: AsyncMemory,
) -> None:
    """Users with nothing but questions asked leave cached query vectors: they go too."""
    from memvault.admin import AsyncAdmin

    marker = uuid.uuid4().hex[:10]
    acme, globex = store.for_tenant(f"acme-{marker}"), store.for_tenant(f"globex-{marker}")
    await acme.search(f"who asked about qvz{marker}", user_id="asker")
    await acme.remember(f"what about qvz{marker}", user_id="another")
    await globex.search(f"who asked about qvz{marker}", user_id="asker")
    service = backend_of(store).embeddings
    acme_tags, globex_tags = (
        service.tenant_tags(acme.tenant_id),
        service.tenant_tags(globex.tenant_id),
    )
    assert len(_tagged(acme_tags)) >= 2 and _tagged(globex_tags)

    receipt = await AsyncAdmin.of(store).erase_tenant(acme.tenant_id)

    assert _tagged(acme_tags) == []
    assert receipt.counts["embedding_cache"] >= 2
    assert _tagged(globex_tags)


async def test_erasing_a_memory_drops_the_reasons_of_promotions_that_stood_on_it(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    marker = uuid.uuid4().hex[:10]
    promoted = {}
    for name, text in (("colour", "My favourite colour is teal"), ("job", "I work at Acme")):
        said = await store.add(text, user_id="ida", channel="proj", wait=True)
        (fact,) = [f for f in await store.facts(user_id="ida") if said.id in f.memory_ids]
        await store.promote(fact.id, user_id="ida", reason=f"{name} said by {marker}")
        promoted[name] = said
    await store.flush_audit()

    receipt = await store.erase(promoted["colour"].id, user_id="ida")

    reasons = raw.execute(
        "SELECT promotion_rule FROM audit_log WHERE promotion_rule IS NOT NULL"
    ).fetchall()
    assert reasons == [(f"job said by {marker}",)]
    assert receipt.counts["audit_reasons"] == 1
