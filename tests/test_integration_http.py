"""Each adapter over HTTP: the same behaviour through MemoryClient / AsyncMemoryClient against a
served memvault as in process."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("langgraph.store.base")
pytest.importorskip("agents")
pytest.importorskip("langchain_core")

from memvault import AsyncMemoryClient, MemoryClient
from memvault.api import create_app
from memvault.compat import mem0
from memvault.config import Settings
from memvault.integrations.langchain import MemvaultRetriever
from memvault.integrations.langgraph import MemvaultStore
from memvault.integrations.openai_agents import MemvaultSession
from tests.serving import serving


@pytest.fixture
def url(make_settings: Callable[..., Settings]) -> Iterator[str]:
    with serving(create_app(make_settings(embedding_provider="hash"))) as served:
        yield served


def test_store_and_mem0_over_the_sync_client(url: str) -> None:
    with MemoryClient(url) as client:
        store = MemvaultStore(client, user_id="graph")
        value = {"email": "ann@example.com", "list": [1, {"a": None}]}
        store.put(("users", "ann"), "profile", value)
        item = store.get(("users", "ann"), "profile")
        assert item is not None and item.value == value
        assert store.list_namespaces(prefix=("users",)) == [("users", "ann")]
        assert [i.key for i in store.search(("users",), query="ann")] == ["profile"]
        store.delete(("users", "ann"), "profile")
        assert store.get(("users", "ann"), "profile") is None

        m = mem0.MemoryClient.over(client)
        added = m.add("I am allergic to peanuts", user_id="ann")
        memory_id = added["results"][0]["id"]
        assert m.get(memory_id)["memory"] == "I am allergic to peanuts"
        assert m.search("peanuts", filters={"user_id": "ann"})["results"][0]["id"] == memory_id
        m.delete(memory_id)
        assert m.get_all(filters={"user_id": "ann"})["results"] == []


def test_store_index_fields_and_unindexed_items_over_http(url: str) -> None:
    with MemoryClient(url) as client:
        store = MemvaultStore(client, user_id="graph-ix", index={"dims": 0, "fields": ["title"]})
        store.put(("d",), "a", {"title": "zebra crossing", "body": "quantum lattice"})
        store.put(("d",), "b", {"title": "quantum lattice", "body": "zebra crossing"})
        store.put(("d",), "c", {"title": "quantum lattice"}, index=False)
        found = [i.key for i in store.search(("d",), query="quantum lattice")]
        assert found[0] == "b" and "c" not in found
        assert sorted(i.key for i in store.search(("d",), filter={"title": "quantum lattice"})) == [
            "b",
            "c",
        ]


async def test_session_and_retriever_over_the_async_client(url: str) -> None:
    async with AsyncMemoryClient(url) as client:
        session = MemvaultSession("http-1", client, user_id="ann")
        items = [
            {"role": "user", "content": "My flight is on Friday"},
            {"type": "function_call", "call_id": "c", "name": "book", "arguments": "{}"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.pop_item() == items[1]
        retriever = MemvaultRetriever(memory=client, user_id="ann", k=3)
        documents = await retriever.ainvoke("flight Friday")
        assert documents[0].page_content == "My flight is on Friday"
        await session.clear_session()
        assert await session.get_items() == []
