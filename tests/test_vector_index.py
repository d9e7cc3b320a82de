"""Vector recall behaves the same whichever index holds the vectors: pgvector, the embedded
Qdrant Edge engine, and qdrant-client's local mode (the code path of a Qdrant server).

Filters, tiers, updates, deletes, memories without vectors and tenant isolation are each
checked through the library's own search, on the real engines; the Qdrant indexes are fed
from the outbox by the worker's feeder, as in production.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest

from memvault import Settings
from memvault.errors import ConfigurationError
from memvault.service import AsyncMemory
from memvault.vectorindex import PgVectorIndex
from memvault.vectorindex.feeder import Feeder
from memvault.worker import Worker
from tests.conftest import backend_of

INDEXES = {
    "pgvector": {},
    "qdrant-edge": {"vector_index": "qdrant-edge"},
    "qdrant-client": {"vector_index": "qdrant", "qdrant_url": ":memory:"},
}


@pytest.fixture(params=list(INDEXES))
async def memory(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings]
) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(
        make_settings(embedding_provider="hash", **INDEXES[request.param])
    )
    yield opened
    await opened.close()


async def settle(memory: AsyncMemory) -> None:
    """Embed what is queued, then feed the index from the outbox (what a worker does)."""
    backend = backend_of(memory)
    worker, feeder = Worker(backend), Feeder(backend)
    while await worker.run_once() or await feeder.run_once():
        pass


async def found(memory: AsyncMemory, query: str, **filters: Any) -> list[str]:
    result = await memory.search(query, user_id="u", recipe="vector", limit=10, **filters)
    return [hit.content for hit in result.results]


async def test_filters_and_tiers_narrow_vector_recall(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await memory.add("fix the login bug", user_id="u", app_id="work", tags=["todo"])
    await memory.add("fix the bike chain", user_id="u", app_id="home", tags=["todo"])
    await memory.add("fixed the leaking tap", user_id="u", app_id="home", project_id="flat")
    await memory.add("fix the bike light", user_id="u", app_id="home", metadata={"room": "hall"})
    await settle(memory)
    assert await found(memory, "fix the bike", app_id="home", tags=["todo"]) == [
        "fix the bike chain"
    ]
    assert await found(memory, "fix", project_id="flat") == ["fixed the leaking tap"]
    # Metadata is not in the index's payload: PostgreSQL filters the candidates.
    assert await found(memory, "fix the bike", metadata={"room": "hall"}) == ["fix the bike light"]
    assert len(await found(memory, "fix the bike")) == 4
    # A tier change (the scheduled tiers job is one UPDATE of the row) reaches the payload.
    assert await found(memory, "leaking tap", tier="cold") == []
    raw.execute("UPDATE memories SET tier = 'cold' WHERE project_id = 'flat'")
    raw.commit()
    await settle(memory)
    assert await found(memory, "leaking tap", tier="cold") == ["fixed the leaking tap"]
    assert "fixed the leaking tap" not in await found(memory, "leaking tap", tier="hot")


async def test_recall_matches_pgvector_exactly(memory: AsyncMemory) -> None:
    texts = [f"note {n}: the {w} sits by the {v}" for n, (w, v) in enumerate(_PAIRS)]
    for n, text in enumerate(texts):
        await memory.add(text, user_id="u", tags=["even" if n % 2 == 0 else "odd"])
    await settle(memory)
    backend = backend_of(memory)
    embedded = await backend.embeddings.embed_batch(["the cat sits by the door"])
    pgvector = PgVectorIndex(backend.engine, backend.settings, backend.scope_sizes)
    for filters in ({}, {"tags": ["odd"]}):
        query = embedded.vectors[0]
        theirs = await pgvector.search(
            "default", _filter("u", **filters), embedded.model_id, query, 5
        )
        ours = await backend.vector_index.search(
            "default", _filter("u", **filters), embedded.model_id, query, 5
        )
        assert [h.memory_id for h in ours] == [h.memory_id for h in theirs]
        for a, b in zip(ours, theirs, strict=True):
            assert a.distance == pytest.approx(b.distance, abs=1e-5)


_PAIRS = [("cat", "door"), ("dog", "window"), ("cat", "window"), ("bird", "door"), ("fox", "gate")]


def _filter(user_id: str, **fields: Any) -> Any:
    from memvault.models import MemoryFilter

    return MemoryFilter(user_id=user_id, **fields)


async def test_updates_replace_points_and_deletes_remove_them_before_the_receipt(
    memory: AsyncMemory,
) -> None:
    gone = await memory.add("the safe code is 4711", user_id="u")
    kept = await memory.add("my bike is red", user_id="u")
    await settle(memory)
    index = backend_of(memory).vector_index
    before = await index.count("default", "u")
    # A new content: new points, the old ones gone, one entry still.
    kept = await memory.update(kept.id, user_id="u", content="the safe is in the attic")
    await settle(memory)
    assert await index.count("default", "u") == before
    both = await found(memory, "the safe is in the attic")
    assert both[0] == kept.content and sorted(both) == sorted([kept.content, gone.content])
    receipt = await memory.erase(gone.id, user_id="u")
    # No feeder ran: the deletion itself removed the point.
    assert await found(memory, "the safe code") == [kept.content]
    if index.fed:
        assert receipt.counts["vector_index"] == 1
        assert await index.count("default", "u") == before - 1
    await memory.delete_all(user_id="u")
    assert await index.count("default", "u") == 0


async def test_tenants_and_users_see_only_their_own_and_vectors_only_what_has_them(
    memory: AsyncMemory,
) -> None:
    mine = await memory.add("I keep bees on the roof", user_id="u")
    await memory.add("I keep bees on the roof", user_id="other-user")
    other_tenant = memory.for_tenant("other-org")
    theirs = await other_tenant.add("I keep bees on the roof", user_id="u")
    await settle(memory)
    waiting = await memory.add("bees bees bees, not yet embedded", user_id="u", background=True)
    result = await memory.search("bees", user_id="u", recipe="vector")
    assert [h.id for h in result.results] == [mine.id]
    # Keywords find a memory without vectors; the vector list does not.
    hybrid = await memory.search("bees", user_id="u")
    assert {h.id for h in hybrid.results} == {mine.id, waiting.id}
    result = await other_tenant.search("bees", user_id="u", recipe="vector")
    assert [h.id for h in result.results] == [theirs.id]
    await memory.delete_all(user_id="u")
    result = await other_tenant.search("bees", user_id="u", recipe="vector")
    assert [h.id for h in result.results] == [theirs.id]


async def test_an_embedded_index_has_one_owner(make_settings: Callable[..., Settings]) -> None:
    """Qdrant Edge keeps no lock of its own: a second store on the same data directory is
    refused with a clear error (two writers would corrupt the shards), and the directory is
    free again once the first store closes."""
    settings = make_settings(embedding_provider="hash", vector_index="qdrant-edge")
    first = await AsyncMemory.open(settings)
    try:
        with pytest.raises(ConfigurationError, match="open in another process"):
            await AsyncMemory.open(settings)
    finally:
        await first.close()
    again = await AsyncMemory.open(settings)
    await again.add("the index opens again", user_id="u")
    await settle(again)
    assert await found(again, "index opens") == ["the index opens again"]
    await again.close()
