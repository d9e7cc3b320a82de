"""MemvaultRetriever: LangChain documents from memvault's search, in its order, with the
memory's metadata and score, from the sync and async faces."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document

from memvault import AsyncMemory, Memory
from memvault.config import Settings
from memvault.integrations.langchain import MemvaultRetriever


async def test_documents_are_the_search_hits(make_settings: Callable[..., Settings]) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    try:
        await memory.add("Alice keeps bees in her garden", user_id="u", metadata={"topic": "bees"})
        await memory.add("The train to Porto leaves at nine", user_id="u", tags=["travel"])
        await memory.add("Bees are another user's topic", user_id="someone-else")
        retriever = MemvaultRetriever(memory=memory, user_id="u", k=5)
        documents = await retriever.ainvoke("bees garden")
        native = await memory.search("bees garden", user_id="u", limit=5)
        assert [d.id for d in documents] == [str(h.id) for h in native.results]
        first = documents[0]
        assert isinstance(first, Document)
        assert first.page_content == "Alice keeps bees in her garden"
        assert first.metadata["topic"] == "bees"
        # The same score (recency moves it a hair between the two searches).
        assert first.metadata["memvault"]["score"] == pytest.approx(native.results[0].score)
        filtered = MemvaultRetriever(memory=memory, user_id="u", search_kwargs={"tags": ["travel"]})
        assert [d.page_content for d in await filtered.ainvoke("bees")] == [
            "The train to Porto leaves at nine"
        ]
    finally:
        await memory.close()


def test_sync_invoke_over_sync_memory(make_settings: Callable[..., Settings]) -> None:
    with Memory(make_settings(embedding_provider="hash")) as memory:
        memory.add("I take the 8:15 bus to work", user_id="u")
        documents = MemvaultRetriever(memory=memory, user_id="u", k=3).invoke("bus to work")
        assert documents[0].page_content == "I take the 8:15 bus to work"


def test_k_given_at_invoke_wins_for_that_call(make_settings: Callable[..., Settings]) -> None:
    # langchain-tests RetrieversIntegrationTests: test_invoke_with_k_kwarg.
    with Memory(make_settings(embedding_provider="hash")) as memory:
        for text in ("bees in the garden", "bees on the roof", "bees at the farm", "honey bees"):
            memory.add(text, user_id="u")
        retriever = MemvaultRetriever(memory=memory, user_id="u", k=3)
        assert len(retriever.invoke("bees", k=1)) == 1
        assert len(retriever.invoke("bees")) == 3
        assert len(retriever.invoke("bees", k=2)) == 2
