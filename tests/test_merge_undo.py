"""A health merge can be undone as a whole, once: every copy comes back as it was (as ``get``,
``search`` and ``history`` show it), the memories that took them in get their own values and
links back, and the undo record is sealed, refused to anyone but its user, erased with that
user, moved by key rotation and gone once it expires."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memvault.admin import AsyncAdmin
from memvault.config import Settings
from memvault.crypto.envelope import generate_key
from memvault.errors import Conflict, NotFound
from memvault.service import AsyncMemory
from tests.conftest import app_client, backend_of

USER = "maya"


async def _seed(memory: AsyncMemory) -> tuple[list[list[str]], list[str]]:
    """Two clusters (the first with a copy the graph read a fact from, edited once, with its
    own tags, metadata, dates, importance, expiry and source); the copies' texts."""
    original = await memory.add(
        "Maya prefers aisle seats",
        user_id=USER,
        tags=["preferences"],
        metadata={"origin": "seed"},
        source="import",
    )
    copy = await memory.add(
        "Maya works at Feedzai",
        user_id=USER,
        tags=["work"],
        metadata={"origin": "chat", "hint": "mobile"},
        source="chat",
        occurred_at=datetime(2020, 5, 1, tzinfo=UTC),
        expires_at=datetime.now(UTC) + timedelta(days=400),
        wait=True,
    )
    await memory.update(copy.id, user_id=USER, importance=9)
    twin_a = await memory.add("Passport expires 2031", user_id=USER, infer=False, tags=["a"])
    twin_b = await memory.add("Passport expires in 2031", user_id=USER, infer=False, tags=["b"])
    clusters = [[str(copy.id), str(original.id)], [str(twin_a.id), str(twin_b.id)]]
    return clusters, ["Maya works at Feedzai", "Passport expires in 2031"]


async def _seen(memory: AsyncMemory, ids: list[str], queries: list[str]) -> dict[str, Any]:
    """What a user sees of these memories: searches (ids and scores), each memory, its history."""
    found: dict[str, Any] = {}
    for query in queries:
        hits = (await memory.search(query, user_id=USER, limit=10)).results
        found[f"search:{query}"] = [(h.id, round(h.score, 6), h.relevance) for h in hits]
    for ident in ids:
        record = await memory.get(ident, user_id=USER)
        found[ident] = record.model_dump(exclude={"access_count", "last_accessed"})
        history = await memory.history(ident, user_id=USER)
        found[f"history:{ident}"] = [h.model_dump() for h in history]
    return found


@pytest.mark.parametrize("deletion_history", ["tombstone", "purge"])
async def test_two_clusters_merged_then_one_undo_puts_every_copy_back_as_it_was(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any], deletion_history: str
) -> None:
    settings = make_settings(embedding_provider="hash", deletion_history=deletion_history)
    async with await AsyncMemory.open(settings) as store:
        memory = store.for_tenant("acme")
        clusters, queries = await _seed(memory)
        everyone = [i for c in clusters for i in c]
        copy, original = clusters[0]
        facts = {f.id: f.memory_ids for f in await memory.facts(user_id=USER)}
        derived = {i: m for i, m in facts.items() if uuid.UUID(copy) in m}
        assert derived
        before = await _seen(memory, everyone, queries)
        for query, found in zip(queries, (copy, clusters[1][1]), strict=True):
            assert uuid.UUID(found) in [hit[0] for hit in before[f"search:{query}"]]

        result = await memory.health_action(
            {"user_id": USER, "action": "merge", "clusters": clusters}
        )
        assert result.changed == 2 and result.merge_id is not None
        assert result.undo_until is not None and result.undo_until > datetime.now(UTC)
        with pytest.raises(NotFound):
            await memory.get(copy, user_id=USER)
        # The undo record holds the copies' words sealed, never in plain text.
        (sealed,) = raw.execute("SELECT ciphertext FROM merge_undos").fetchone() or ()
        assert b"Feedzai" not in sealed and b"Passport" not in sealed

        undone = await memory.undo_merge(result.merge_id, user_id=USER)
        assert sorted(map(str, undone.restored)) == sorted([copy, clusters[1][1]])
        assert sorted(map(str, undone.reverted)) == sorted([original, clusters[1][0]])
        assert undone.links >= len(derived)

        after = await _seen(memory, everyone, queries)
        kept = (original, clusters[1][0])
        for key in before:
            if key in kept:
                # A kept memory has its own values back; only its update time says it changed.
                assert {**after[key], "updated_at": None} == {**before[key], "updated_at": None}
            elif key.removeprefix("history:") in kept:
                # Its history records the merge and then the undo, each an update.
                assert after[key][: len(before[key])] == before[key]
                assert [h["action"] for h in after[key][len(before[key]) :]] == ["UPDATE"] * 2
                assert after[key][-1]["new_metadata"] == before[key.split(":")[1]]["metadata"]
            else:
                assert after[key] == before[key], key
        # The copy's facts are read from it again, and no longer from the memory that stayed.
        facts = {f.id: f.memory_ids for f in await memory.facts(user_id=USER)}
        assert {i: facts[i] for i in derived} == derived

        with pytest.raises(Conflict, match="undone already"):
            await memory.undo_merge(result.merge_id, user_id=USER)
        rows = [
            r
            for r in (await memory.audit_log(user_id=USER, operation="update")).results
            if r.details.get("via") == "undo_merge"
        ]
        # The undo and the refused second one, each audited.
        assert sorted((r.success, r.result_count) for r in rows) == [(False, None), (True, 2)]
        assert all(r.details["merge_id"] == str(result.merge_id) for r in rows)
        # Once undone, the record keeps only when: the copies' words are gone from it.
        assert raw.execute("SELECT undone_at IS NOT NULL FROM merge_undos").fetchone() == (True,)


async def test_an_undo_is_only_for_its_user_in_its_tenant(
    make_settings: Callable[..., Settings],
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        memory = store.for_tenant("acme")
        clusters, _ = await _seed(memory)
        result = await memory.health_action(
            {"user_id": USER, "action": "merge", "clusters": clusters}
        )
        assert result.merge_id is not None
        for other, user in ((memory, "someone-else"), (store.for_tenant("globex"), USER)):
            with pytest.raises(NotFound, match="No merge"):
                await other.undo_merge(result.merge_id, user_id=user)
        with pytest.raises(NotFound, match="No merge"):
            await memory.undo_merge(uuid.uuid4(), user_id=USER)
        # Those refusals changed nothing: the merge can still be undone by its user.
        assert len((await memory.undo_merge(result.merge_id, user_id=USER)).restored) == 2


def test_over_http_a_merge_answers_its_id_and_the_undo_answers_404_and_409(
    database_url: str, tmp_path: Any
) -> None:
    with app_client(database_url, tmp_path, embedding_provider="hash") as client:
        ids = [
            client.post(
                "/v1/memories", json={"content": "Likes figs", "user_id": "u", "infer": False}
            ).json()["id"]
            for _ in range(2)
        ]
        merged = client.post(
            "/v1/health/memory/actions",
            json={"user_id": "u", "action": "merge", "memory_ids": ids},
        ).json()
        path = f"/v1/health/memory/merges/{merged['merge_id']}/undo"
        assert client.post(path, json={"user_id": "v"}).status_code == 404
        assert client.post(path, json={"user_id": "u"}).status_code == 200
        again = client.post(path, json={"user_id": "u"})
        assert again.status_code == 409 and "undone already" in again.json()["error"]["message"]
        listed = client.get("/v1/memories", params={"user_id": "u"}).json()["results"]
        assert sorted(m["id"] for m in listed) == sorted(ids)


async def test_erasing_the_user_erases_the_undo_record(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        memory = store.for_tenant("acme")
        for user in (USER, "other"):
            twins = [
                str((await memory.add("Likes figs", user_id=user, infer=False)).id)
                for _ in range(2)
            ]
            await memory.health_action({"user_id": user, "action": "merge", "memory_ids": twins})
        await memory.erase_user(user_id=USER)
        left = raw.execute("SELECT user_id FROM merge_undos ORDER BY user_id").fetchall()
        assert left == [("other",)]


async def test_an_expired_undo_record_is_refused_and_cleaned_up(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        memory = store.for_tenant("acme")
        twins = [str((await memory.add("Likes figs", user_id=USER, infer=False)).id) for _ in "ab"]
        result = await memory.health_action(
            {"user_id": USER, "action": "merge", "memory_ids": twins}
        )
        assert result.merge_id is not None
        raw.execute("UPDATE merge_undos SET expires_at = now() - interval '1 second'")
        with pytest.raises(NotFound, match="older than 30 days"):
            await memory.undo_merge(result.merge_id, user_id=USER)
        run = await AsyncAdmin.of(store).run_scheduled("cleanup")
        assert run.counts["merge_undos.purged"] == 1
        assert raw.execute("SELECT count(*) FROM merge_undos").fetchone() == (0,)


async def test_key_rotation_reseals_the_undo_record(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    old_key, new_key = generate_key(), generate_key()
    async with await AsyncMemory.open(
        make_settings(embedding_provider="hash", encryption_key=old_key)
    ) as before:
        memory = before.for_tenant("acme")
        twins = [str((await memory.add("Likes figs", user_id=USER, infer=False)).id) for _ in "ab"]
        result = await memory.health_action(
            {"user_id": USER, "action": "merge", "memory_ids": twins}
        )
        assert result.merge_id is not None
    rotating = make_settings(
        embedding_provider="hash", encryption_key=new_key, encryption_old_keys=old_key
    )
    async with await AsyncMemory.open(rotating) as during:
        await AsyncAdmin.of(during).rotate_encryption_key()
    async with await AsyncMemory.open(
        make_settings(embedding_provider="hash", encryption_key=new_key)
    ) as after:
        active = backend_of(after).keys.current().active.key_id
        assert raw.execute("SELECT key_id FROM merge_undos").fetchall() == [(active,)]
        undone = await after.for_tenant("acme").undo_merge(result.merge_id, user_id=USER)
        assert len(undone.restored) == 1
        back = await after.for_tenant("acme").get(undone.restored[0], user_id=USER)
        assert back.content == "Likes figs"
