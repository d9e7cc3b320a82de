"""An external vector index loses nothing: the worker killed between PostgreSQL's commit and the
index upsert, the index away for a while, points lost or stale behind the store's back.
Recall keeps answering throughout (from PostgreSQL's own vectors while the index is away), and
once it is back every memory is found exactly once; the sweep counts what it repaired."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest

from memvault import Settings
from memvault.db import vector_outbox
from memvault.db.units import transaction
from memvault.service import AsyncMemory
from memvault.vectorindex.engines import Point
from memvault.vectorindex.feeder import Feeder
from memvault.vectorindex.qdrant import QdrantIndex
from memvault.worker import Worker
from tests.conftest import backend_of
from tests.waiting import wait_for

TEXTS = [
    f"reminder {n}: water the {plant}" for n, plant in enumerate(["fern", "ivy", "cactus", "palm"])
]


class Down:
    """The index's store while it is unreachable: every call fails as a refused connection."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def refused(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionRefusedError(f"{name}: the index is down")

        return refused


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    settings = make_settings(
        embedding_provider="hash", vector_index="qdrant-edge", worker_lease_s=1
    )
    opened = await AsyncMemory.open(settings)
    yield opened
    await opened.close()


async def embed(memory: AsyncMemory) -> None:
    worker = Worker(backend_of(memory))
    while await worker.run_once():
        pass


async def each_found_once(memory: AsyncMemory, ids: dict[str, uuid.UUID]) -> None:
    everything = await memory.search("reminder water", user_id="u", recipe="vector", limit=50)
    assert Counter(h.id for h in everything.results) == Counter(ids.values())
    for text, memory_id in ids.items():
        result = await memory.search(text, user_id="u", recipe="vector", limit=1)
        assert [h.id for h in result.results] == [memory_id]


async def test_a_killed_worker_and_an_index_away_lose_nothing(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    backend = backend_of(memory)
    index = backend.vector_index
    assert isinstance(index, QdrantIndex)
    ids = {text: (await memory.add(text, user_id="u")).id for text in TEXTS}
    await embed(memory)
    # The worker claims the outbox entries and dies before the upsert.
    async with transaction(backend.engine, every_tenant=True) as conn:
        abandoned = await vector_outbox.claim(conn, 100, backend.settings.worker_lease_s)
    assert {e.memory_id for e in abandoned} == set(ids.values())
    feeder = Feeder(backend)
    assert await feeder.run_once() == 0  # still leased to the dead worker
    # Then the index goes away; recall answers from PostgreSQL meanwhile.
    real, index.store = index.store, Down()
    await each_found_once(memory, ids)

    async def tried_while_down() -> bool:
        await feeder.run_once()
        errors = raw.execute("SELECT count(last_error) FROM vector_index_outbox").fetchone()
        raw.commit()
        return errors is not None and errors[0] == len(ids)

    await wait_for(tried_while_down, 20, "the feeder never tried the index while it was down")
    index.store = real

    async def synced() -> bool:
        await feeder.run_once()
        async with transaction(backend.engine, every_tenant=True) as conn:
            return await vector_outbox.pending(conn) == 0

    await wait_for(synced, 20, "the outbox never drained once the index was back")
    assert await index.count("default", "u") == len(ids)
    await each_found_once(memory, ids)
    assert await feeder.reconcile() == Counter()


async def test_the_sweep_repairs_and_counts_drift(memory: AsyncMemory) -> None:
    backend = backend_of(memory)
    index = backend.vector_index
    assert isinstance(index, QdrantIndex)
    ids = {text: (await memory.add(text, user_id="u")).id for text in TEXTS}
    await embed(memory)
    feeder = Feeder(backend)
    while await feeder.run_once():
        pass
    (name,) = await index.store.collections()
    points = sorted(await index.store.scroll(name))
    # Behind the store's back: two points lost, one payload stale, one point of no memory.
    await index.store.delete(name, [points[0][0], points[1][0]])
    stale = dict(points[2][1], tier="cold")
    vector = [1.0] * len((await backend.embeddings.embed_batch(["x"])).vectors[0])
    await index.store.upsert(
        name,
        [
            Point(points[2][0], vector, stale),
            Point(str(uuid.uuid4()), vector, dict(stale, memory_id=str(uuid.uuid4()))),
        ],
    )
    assert await feeder.reconcile() == Counter(missing=2, stale=1, orphaned=1)
    assert await index.count("default", "u") == len(ids)
    await each_found_once(memory, ids)
    assert await feeder.reconcile() == Counter()


async def test_a_qdrant_server_out_of_reach_keeps_the_outbox(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(
        embedding_provider="hash", vector_index="qdrant", qdrant_url="http://127.0.0.1:9"
    )
    memory = await AsyncMemory.open(settings)
    try:
        ids = {text: (await memory.add(text, user_id="u")).id for text in TEXTS}
        await embed(memory)
        backend = backend_of(memory)
        assert await Feeder(backend).run_once() == 0
        async with transaction(backend.engine, every_tenant=True) as conn:
            assert await vector_outbox.pending(conn) == len(ids)
        # Recall answers from PostgreSQL's vectors while the server is away.
        found = await memory.search("reminder water", user_id="u", recipe="vector", limit=50)
        assert sorted(h.id for h in found.results) == sorted(ids.values())
    finally:
        await memory.close()
