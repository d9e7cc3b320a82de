"""A memory found by another text than its content (``index_text``), or by none (``""``):
what an adapter needs to store a record exactly while searching only some of it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory, ContentTooLong, PIIRejected
from memvault.config import Settings
from tests.conftest import backend_of


@pytest.fixture
async def hashed(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield memory
    await memory.close()


async def _found(memory: AsyncMemory, query: str, user: str, recipe: str = "hybrid") -> list[str]:
    hits = await memory.search(query, user_id=user, recipe=recipe, limit=10)
    return [h.content for h in hits.results]


async def test_search_finds_a_memory_by_its_index_text_and_returns_its_content(
    hashed: AsyncMemory,
) -> None:
    record = '{"title":"zanzibar spices","notes":"quartermaster ledger"}'
    added = await hashed.add(record, user_id="ix-1", index_text="zanzibar spices")
    await hashed.add("quartermaster ledger audit", user_id="ix-1")
    assert added.embedded and added.content == record
    assert (await hashed.get(added.id, user_id="ix-1")).content == record
    # The keywords are the index text's: words only in the content find the other memory.
    assert await _found(hashed, "zanzibar", "ix-1", "keyword") == [record]
    assert await _found(hashed, "quartermaster", "ix-1", "keyword") == [
        "quartermaster ledger audit"
    ]
    assert (await _found(hashed, "zanzibar spices", "ix-1", "vector"))[0] == record


async def test_an_empty_index_text_stores_a_memory_search_never_finds(
    hashed: AsyncMemory,
) -> None:
    hidden = await hashed.add("penguin colony census", user_id="ix-2", index_text="", wait=True)
    blank = await hashed.add("penguin colony census", user_id="ix-2", index_text=" \n ")
    await hashed.add("penguin colony census", user_id="ix-2", infer=False)
    assert hidden.embedded  # nothing to wait for
    for recipe in ("hybrid", "vector", "keyword", "recent"):
        hits = await hashed.search("penguin colony census", user_id="ix-2", recipe=recipe)
        assert {hidden.id, blank.id}.isdisjoint(h.id for h in hits.results), recipe
        assert len(hits.results) == 1, recipe
    listed = await hashed.list(user_id="ix-2")
    assert hidden.id in [r.id for r in listed.results]
    assert (await hashed.get(hidden.id, user_id="ix-2")).content == "penguin colony census"
    # An edit of the content is indexed like any edit.
    await hashed.update(hidden.id, user_id="ix-2", content="walrus colony census")
    assert "walrus colony census" in await _found(hashed, "walrus", "ix-2", "keyword")


async def test_a_memory_with_an_index_text_is_never_folded_into_another(
    hashed: AsyncMemory,
) -> None:
    first = await hashed.add("Tom likes green tea", user_id="ix-3")
    second = await hashed.add("Tom likes green tea", user_id="ix-3", index_text="green tea")
    assert second.id != first.id and second.dedup.action == "stored_new"
    twin = await hashed.add("Tom likes green tea", user_id="ix-3")
    assert twin.dedup.action == "duplicate_exact" and twin.id == first.id


async def test_index_text_passes_the_pii_policy_and_the_length_limit(
    hashed: AsyncMemory,
) -> None:
    added = await hashed.add("contact record 7", user_id="ix-4", index_text="mail jane@example.com")
    assert await _found(hashed, "jane@example.com", "ix-4", "keyword") == []
    assert added.content == "contact record 7"
    with pytest.raises(PIIRejected):
        await hashed.add("r", user_id="ix-4", index_text="jane@example.com", pii_policy="reject")
    limit = backend_of(hashed).settings.max_content_chars
    with pytest.raises(ContentTooLong):
        await hashed.add("r", user_id="ix-4", index_text="x" * (limit + 1))
    assert len((await hashed.list(user_id="ix-4")).results) == 1


def test_index_text_over_http(make_settings: Callable[..., Settings]) -> None:
    from memvault.api import create_app

    with TestClient(create_app(make_settings(embedding_provider="hash"))) as client:
        body = {"content": '{"k":"v"}', "user_id": "ix-http", "index_text": ""}
        created = client.post("/v1/memories", json=body)
        assert created.status_code == 201, created.text
        found = client.post(
            "/v1/memories/search", json={"query": '{"k":"v"}', "user_id": "ix-http"}
        )
        assert found.status_code == 200 and found.json()["results"] == []
        listed = client.get("/v1/memories", params={"user_id": "ix-http"}).json()
        assert [m["content"] for m in listed["results"]] == ['{"k":"v"}']
        bad = client.post("/v1/memories", json={**body, "index_text": "a\x00b"})
        assert bad.status_code == 422


async def test_memory_health_does_not_report_an_unindexed_memory_as_lost(
    hashed: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    hidden = await hashed.add("a record kept out of search", user_id="ix-5", index_text="")
    lost = await hashed.add("a memory whose vectors went missing", user_id="ix-5", infer=False)
    raw.execute("DELETE FROM memory_chunks WHERE memory_id = %s", (lost.id,))
    raw.execute(
        "UPDATE memories SET created_at = now() - interval '10 minutes' WHERE id = ANY(%s)",
        ([hidden.id, lost.id],),
    )
    report = await hashed.memory_health(user_id="ix-5")
    found = {f.kind: f for f in report.findings}
    assert found["vectorless"].memory_ids == [lost.id]
