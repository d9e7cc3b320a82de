"""Semantic search: tenant-scoped, only embedded memories, exact and HNSW paths, over HTTP."""

from __future__ import annotations

import random
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from memvault import InvalidInput, Settings
from memvault.api import create_app
from memvault.service import AsyncMemory
from memvault.worker import Worker
from tests.conftest import backend_of

FACTS = [
    "Erin's favourite drink is green tea",
    "Erin drives a red bicycle to work",
    "Erin's sister lives in Madrid",
    "The quarterly report is due on Monday",
]


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="local"))
    yield opened
    await opened.close()


async def embed_all(memory: AsyncMemory) -> None:
    b = backend_of(memory)
    worker = Worker(b)
    while await worker.run_once():
        pass


async def test_search_ranks_by_meaning_and_reports_similarity(memory: AsyncMemory) -> None:
    for fact in FACTS:
        await memory.add(fact, user_id="erin")
    await embed_all(memory)
    result = await memory.search("what does Erin like to drink?", user_id="erin", limit=2)
    assert result.model == "local/all-MiniLM-L6-v2" and not result.degraded
    assert result.results[0].content == FACTS[0]
    assert 0 < result.results[1].similarity < result.results[0].similarity <= 1


async def test_search_is_tenant_and_user_scoped_and_skips_unembedded(
    memory: AsyncMemory,
) -> None:
    mine = await memory.add("I keep bees on the roof", user_id="u")
    await memory.add("I keep bees on the roof", user_id="other-user")
    await memory.for_tenant("other-org").add("I keep bees on the roof", user_id="u")
    await embed_all(memory)
    waiting = await memory.add("bees bees bees, not yet embedded", user_id="u", background=True)
    result = await memory.search("bees", user_id="u", recipe="vector")
    assert [h.id for h in result.results] == [mine.id]
    # Keywords find a memory the moment it is stored, before its vectors exist.
    hybrid = await memory.search("bees", user_id="u")
    assert {h.id for h in hybrid.results} == {mine.id, waiting.id}


async def test_filters_apply_to_search(memory: AsyncMemory) -> None:
    await memory.add("Fix the login bug", user_id="u", app_id="work", tags=["todo"])
    await memory.add("Fix the bike chain", user_id="u", app_id="home", tags=["todo"])
    await memory.add("Fixed the leaking tap", user_id="u", app_id="home")
    await embed_all(memory)
    at_home = await memory.search("fix", user_id="u", app_id="home", tags=["todo"])
    assert [h.content for h in at_home.results] == ["Fix the bike chain"]


async def test_the_hnsw_path_finds_the_same_memories(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(
        make_settings(embedding_provider="local", search_exact_max_chunks=0)
    )
    for fact in FACTS:
        await memory.add(fact, user_id="erin")
    await memory.for_tenant("elsewhere").add(FACTS[0], user_id="erin")
    await embed_all(memory)
    indexes = [
        r[0]
        for r in raw.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_chunks'")
    ]
    assert any("hnsw" in d and "vector(384)" in d for d in indexes)
    result = await memory.search("Erin's drink", user_id="erin", limit=10)
    assert result.results[0].content == FACTS[0]
    assert len(result.results) == 4  # the other tenant's copy is not among them
    await memory.close()


async def test_an_owner_s_first_memory_is_found_right_after_a_search_of_the_empty_scope(
    memory: AsyncMemory,
) -> None:
    """Scope sizes are remembered between searches, but an empty scope never is."""
    assert (await memory.search("cello", user_id="new", recipe="vector")).results == []
    record = await memory.add("Frank plays the cello", user_id="new")
    await embed_all(memory)
    found = await memory.search("cello", user_id="new", recipe="vector")
    assert [h.id for h in found.results] == [record.id]


@pytest.mark.parametrize("remembered", [1, 3, 50_000])
async def test_a_stale_scope_size_changes_no_result(memory: AsyncMemory, remembered: int) -> None:
    """A remembered size only picks the way to rank (exact, or HNSW past the exact limit);
    whatever it says, a search finds what counting would have found."""
    for fact in FACTS:
        await memory.add(fact, user_id="erin")
    await embed_all(memory)
    counted = await memory.search("Erin's sister", user_id="erin", recipe="vector", limit=10)
    backend = backend_of(memory)
    backend.scope_sizes.put("default", "erin", counted.model, remembered)
    stale = await memory.search("Erin's sister", user_id="erin", recipe="vector", limit=10)
    assert backend.scope_sizes.get("default", "erin", counted.model) == remembered
    assert [h.id for h in stale.results] == [h.id for h in counted.results]
    assert len(stale.results) == len(FACTS)


async def test_a_query_no_model_can_embed_is_answered_from_its_words(
    memory: AsyncMemory, make_settings: Callable[..., Settings]
) -> None:
    """When no model can embed the query, the keyword lists are the answer, of the caller's
    tenant and user only, and the search says it is degraded."""
    for fact in FACTS:
        await memory.add(fact, user_id="erin")
    await memory.add("Erin's favourite drink is black coffee", user_id="sam")
    await memory.for_tenant("acme").add("Erin's favourite drink is lemonade", user_id="erin")
    with socket.socket() as closed:  # a port nothing listens on: every embedding call fails
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    unembedded = await AsyncMemory.open(
        make_settings(
            embedding_provider="openai",
            embedding_base_url=f"http://127.0.0.1:{port}/v1",
            embedding_api_key="unused",
            embedding_fallback=False,
            embedding_attempts=1,
            embedding_cache_ttl_s=0,
        )
    )
    try:
        found = await unembedded.search("favourite drink", user_id="erin", limit=5)
    finally:
        await unembedded.close()
    assert found.degraded
    assert [hit.content for hit in found.results] == [FACTS[0]]


async def test_search_validates_its_input(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        await memory.search("   ", user_id="u")
    with pytest.raises(InvalidInput):
        await memory.search("x", user_id="u", limit=0)


async def test_add_with_wait_returns_a_searchable_memory(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash", run_worker=True))
    record = await memory.add("Frank plays the cello", user_id="frank", wait=True)
    assert record.embedded
    assert [h.id for h in (await memory.search("cello", user_id="frank")).results] == [record.id]
    await memory.close()


def test_search_and_wait_over_http(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(embedding_provider="hash", run_worker=True)
    with TestClient(create_app(settings)) as client:
        created = client.post(
            "/v1/memories?wait=true",
            json={"content": "Gina's flight lands at 9pm", "user_id": "gina"},
        )
        assert created.status_code == 201 and created.json()["embedded"] is True
        found = client.post(
            "/v1/memories/search", json={"query": "when does the flight land", "user_id": "gina"}
        )
        assert found.status_code == 200
        body = found.json()
        assert [r["content"] for r in body["results"]] == ["Gina's flight lands at 9pm"]
        assert 0 < body["results"][0]["similarity"] <= 1
        assert body["model"] == "hash/384"
        bad = client.post("/v1/memories/search", json={"query": "", "user_id": "gina"})
        assert bad.status_code == 422
        other = client.post("/v1/memories/search", json={"query": "flight", "user_id": "hal"})
        assert other.json()["results"] == []


async def test_a_short_page_from_the_hnsw_index_is_filled_from_the_owners_nearest_chunks(
    make_settings: Callable[..., Settings],
) -> None:
    """An owner with a small share of the HNSW index finds few of its memories among the
    chunks the index returns (a 50,000-memory user in a 1,000,000-memory store: about 20 of
    the 50 a search asks for). The second try ranks the owner's nearest chunks, as an exact
    scope does, before grouping every chunk of the scope: the same page, cheaper."""
    rng = random.Random(5)
    words = [f"{w}{n}" for w in ("garden", "piano", "lemon", "harbour", "tennis") for n in "abcd"]

    def notes(user: Callable[[int], str], count: int) -> list[Any]:
        return [
            {"content": " ".join(rng.sample(words, 4)), "user_id": user(n), "infer": False}
            for n in range(count)
        ]

    approximate = await AsyncMemory.open(
        make_settings(embedding_provider="hash", search_exact_max_chunks=20, hnsw_ef_search=10)
    )
    exact = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    for _ in range(2):
        await approximate.add_many(notes(lambda n: f"crowd-{n % 30}", 500))
    await approximate.add_many(notes(lambda n: "ada", 120))
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "<=>" in statement:
            sent.append(statement)

    engine = backend_of(approximate).engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        found = await approximate.search("gardena pianob", user_id="ada", recipe="vector")
    finally:
        event.remove(engine, "before_cursor_execute", record)
    expected = await exact.search("gardena pianob", user_id="ada", recipe="vector")
    await approximate.close()
    await exact.close()
    assert [r.id for r in found.results] == [r.id for r in expected.results]
    assert len(found.results) == 10
    # The index's short page, then the owner's nearest chunks; never the whole scope grouped.
    assert len(sent) == 2 and "ann AS MATERIALIZED" in sent[0], sent
    assert ") AS chunks" in sent[1], sent[1]
