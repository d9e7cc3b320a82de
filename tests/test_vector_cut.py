"""The exact ranking of a large scope looks its nearest memories up from its nearest chunks
only: the page must be the one the whole ranking gives, also where memories have many chunks
each (so that the nearest chunks hold fewer memories than a page asks for)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from memvault import Settings
from memvault.db import vectors
from memvault.db.units import reading
from memvault.models import MemoryFilter
from memvault.service import AsyncMemory
from memvault.worker import Worker
from tests.conftest import backend_of

TOPICS = [
    "sourdough bread and rye loaves baked at home",
    "the billing service shipped on Fridays",
    "tomato plants watered every morning",
    "an old bicycle repaired in the garage",
    "design documents written for the search team",
    "a trip to Lisbon booked for the spring",
]


def _long(topic: str, n: int) -> str:
    # Many sentences: at 16 tokens a chunk, each memory has several chunks.
    return " ".join(f"Note {n}.{i} about {topic}, kept for later." for i in range(6))


async def _ranked(memory: AsyncMemory, query: str, limit: int) -> list[UUID]:
    backend = backend_of(memory)
    embedded = await backend.embeddings.embed_batch([query])
    vector = embedded.vectors[0]
    async with reading(backend.engine, "default") as conn:
        (page,) = await vectors.nearest(
            conn,
            "default",
            [MemoryFilter(user_id="ana")],
            vector,
            embedded.model_id,
            len(vector),
            limit,
            exact_max_chunks=10_000,
            ef_search=40,
        )
    return [row.id for row in page]


async def test_the_looked_up_page_is_the_whole_rankings_page(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = await AsyncMemory.open(
        make_settings(embedding_provider="local", chunk_tokens=16, chunk_overlap=0)
    )
    try:
        for n in range(24):
            await memory.add(_long(TOPICS[n % len(TOPICS)], n), user_id="ana")
        await memory.add("Ben bakes rye bread", user_id="ben")  # another owner's, never found
        worker = Worker(backend_of(memory))
        while await worker.run_once():
            pass
        queries = ["who bakes bread at home?", "when does billing ship?", "a spring trip"]
        monkeypatch.setattr(vectors, "LOOKUP_MIN_SCOPE", 10**9)  # the whole ranking
        whole = {q: await _ranked(memory, q, 5) for q in queries}
        assert all(len(page) == 5 for page in whole.values())
        # Looked up: five memories asked from the nearest 6 x chunks_per_memory chunks (with
        # 1 and 2 the chunks hold too few memories: the short page falls back to the whole
        # ranking; with 4 they hold enough, and the page is theirs).
        monkeypatch.setattr(vectors, "LOOKUP_MIN_SCOPE", 0)
        monkeypatch.setattr(vectors, "lookup_fetch", lambda limit: limit + 1)
        for chunks_per_memory in (1, 2, 4):
            monkeypatch.setattr(vectors, "NEAREST_CHUNKS_PER_MEMORY", chunks_per_memory)
            for query in queries:
                assert await _ranked(memory, query, 5) == whole[query], (chunks_per_memory, query)
    finally:
        await memory.close()
