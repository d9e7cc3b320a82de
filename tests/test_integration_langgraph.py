"""MemvaultStore against LangGraph's own store behaviour.

The cases below are ported from langgraph's repository (langchain-ai/langgraph,
libs/checkpoint/tests/test_store.py and libs/checkpoint-postgres/tests/test_store.py /
test_async_store.py: basic put/get/delete, namespace listing with prefix/suffix/wildcards and
max_depth, search filters with the comparison operators, batch ordering), minus what needs
their own Postgres schema or an embeddings object. The differential test puts random operation
sequences through langgraph's InMemoryStore and MemvaultStore and asks for the same answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
    TTLConfig,
)
from langgraph.store.memory import InMemoryStore

from memvault import AsyncMemory, Memory
from memvault.config import Settings
from memvault.integrations.langgraph import MemvaultStore
from tests.waiting import wait_for


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[MemvaultStore]:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield MemvaultStore(memory, user_id="graph")
    await memory.close()


async def test_put_get_delete_keep_the_exact_value(store: MemvaultStore) -> None:
    value = {"text": "I like sushi", "n": 3, "f": 1.5, "nested": {"b": [1, None, True]}, "z": ""}
    await store.aput(("users", "alice"), "food", value)
    item = await store.aget(("users", "alice"), "food")
    assert item is not None
    assert item.value == value and item.key == "food" and item.namespace == ("users", "alice")
    assert item.created_at <= item.updated_at
    # Same value under another key is a second item, never folded into the first.
    await store.aput(("users", "alice"), "food2", value)
    assert (await store.aget(("users", "alice"), "food2")) is not None
    assert await store.aget(("users", "bob"), "food") is None
    await store.aput(("users", "alice"), "food", {"text": "I like ramen"})
    updated = await store.aget(("users", "alice"), "food")
    assert updated is not None and updated.value == {"text": "I like ramen"}
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    await store.adelete(("users", "alice"), "food")
    assert await store.aget(("users", "alice"), "food") is None
    assert (await store.aget(("users", "alice"), "food2")) is not None


async def test_a_value_with_personal_data_is_kept_verbatim(store: MemvaultStore) -> None:
    value = {"email": "alice@example.com", "phone": "+1 415 555 0100"}
    await store.aput(("contacts",), "alice", value)
    item = await store.aget(("contacts",), "alice")
    assert item is not None and item.value == value


async def test_list_namespaces_prefix_suffix_wildcards_depth(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_list_namespaces_basic
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        await store.aput(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert await store.alist_namespaces() == sorted(namespaces)
    assert await store.alist_namespaces(prefix=("a", "b")) == sorted(
        ns for ns in namespaces if ns[:2] == ("a", "b")
    )
    assert await store.alist_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(prefix=("a", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await store.alist_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await store.alist_namespaces(prefix=("nonexistent",)) == []
    assert await store.alist_namespaces(prefix=("users",)) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert await store.alist_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await store.alist_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert await store.alist_namespaces(limit=3, offset=2) == sorted(namespaces)[2:5]
    await store.adelete(("users", "123"), "id_6")
    assert ("users", "123") not in await store.alist_namespaces()


async def test_search_filters_with_operators(store: MemvaultStore) -> None:
    # langgraph test_store.py / checkpoint-postgres test_store.py: test_search (filters)
    docs = [
        ("doc1", {"content": "red apple", "color": "red", "score": 4.5, "tags": {"x": 1}}),
        ("doc2", {"content": "green apple", "color": "green", "score": 3.0}),
        ("doc3", {"content": "red car", "color": "red", "score": 2.0}),
        ("doc4", {"content": "blue sky", "color": "blue", "score": 5.0}),
    ]
    for key, value in docs:
        await store.aput(("test", "filters"), key, value)
    await store.aput(("other",), "doc5", {"content": "red wine", "color": "red", "score": 9})

    async def keys(**kwargs: Any) -> set[str]:
        return {i.key for i in await store.asearch(("test",), limit=10, **kwargs)}

    assert await keys(filter={"color": "red"}) == {"doc1", "doc3"}
    assert await keys(filter={"color": {"$eq": "red"}}) == {"doc1", "doc3"}
    assert await keys(filter={"color": {"$ne": "red"}}) == {"doc2", "doc4"}
    assert await keys(filter={"score": {"$gt": 3.0}}) == {"doc1", "doc4"}
    assert await keys(filter={"score": {"$gte": 3.0}}) == {"doc1", "doc2", "doc4"}
    assert await keys(filter={"score": {"$lt": 3.0}}) == {"doc3"}
    assert await keys(filter={"score": {"$lte": 3.0}}) == {"doc2", "doc3"}
    assert await keys(filter={"score": {"$gt": 1.0, "$lt": 4.0}}) == {"doc2", "doc3"}
    assert await keys(filter={"color": "red", "score": {"$gt": 4}}) == {"doc1"}
    assert await keys(filter={"tags": {"x": 1}}) == {"doc1"}
    assert await keys() == {"doc1", "doc2", "doc3", "doc4"}
    page = await store.asearch(("test",), limit=2, offset=1)
    assert len(page) == 2
    # A query ranks within the namespace prefix and keeps the filter.
    found = await store.asearch(("test",), query="red car", filter={"color": "red"}, limit=5)
    assert {i.key for i in found} <= {"doc1", "doc3"} and found[0].key == "doc3"
    assert all(i.score is not None for i in found)


async def test_batch_reads_before_writes_and_last_put_wins(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_batch_order
    await store.aput(("test", "foo"), "key1", {"data": "value1"})
    results = await store.abatch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("test",)),)),
            GetOp(("test",), "key3"),
            PutOp(("test", "bar"), "key2", {"data": "value3"}),
        ]
    )
    assert results[0] is not None and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]
    assert results[3] == [("test", "foo")]
    assert results[4] is None
    item = await store.aget(("test", "bar"), "key2")
    assert item is not None and item.value == {"data": "value3"}


async def test_an_expired_item_is_gone_from_every_read(store: MemvaultStore) -> None:
    await store.aput(("t",), "short", {"v": 1}, ttl=3 / 60)  # three seconds
    await store.aput(("t",), "long", {"v": 2}, ttl=60)
    assert await store.aget(("t",), "short", refresh_ttl=False) is not None

    async def gone() -> bool:
        return await store.aget(("t",), "short", refresh_ttl=False) is None

    await wait_for(gone, 30, "the item outlived its TTL", interval=0.1)
    assert [i.key for i in await store.asearch(("t",))] == ["long"]
    assert [i.key for i in await store.asearch(("t",), query="v")] == ["long"]


async def test_ttl_is_the_memorys_expiry_and_reads_refresh_it(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    user = "ttl-refresh"
    store = MemvaultStore(memory, user_id=user, ttl={"default_ttl": 60, "refresh_on_read": False})
    assert store.supports_ttl

    async def expiry(key: str) -> datetime | None:
        page = await memory.list(user_id=user, metadata={"langgraph": {"key": key}})
        (record,) = page.results
        return record.expires_at

    before = datetime.now(UTC)
    await store.aput(("t",), "k", {"v": 1})  # the config's default_ttl: an hour
    first = await expiry("k")
    assert first is not None
    assert before + timedelta(minutes=60) <= first <= datetime.now(UTC) + timedelta(minutes=60)
    item = await store.aget(("t",), "k")  # refresh_on_read=False: left as it was
    assert item is not None and await expiry("k") == first
    refreshed = await store.aget(("t",), "k", refresh_ttl=True)
    second = await expiry("k")
    assert second is not None and second > first
    assert refreshed is not None and refreshed.value == item.value
    assert (refreshed.created_at, refreshed.updated_at) == (item.created_at, item.updated_at)
    await store.asearch(("t",), refresh_ttl=True)
    third = await expiry("k")
    assert third is not None and third > second
    await store.aput(("t",), "forever", {"v": 2}, ttl=None)
    assert await expiry("forever") is None
    # Refresh on read is LangGraph's default when the config does not say.
    default = MemvaultStore(memory, user_id=user)
    await default.aget(("t",), "k")
    fourth = await expiry("k")
    assert fourth is not None and fourth > third
    await memory.close()


async def test_paging_with_ttl_refresh_on_read_repeats_and_skips_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    """langgraph checkpoint-postgres test_store.py: test_vector_search_pagination, with the TTL
    fixture its port had left out. A refresh moves the expiry of the same memory: a rewrite as
    a new memory drew a new tie-break among equal scores, and pages repeated and skipped."""
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    ttl: TTLConfig = {"default_ttl": 60, "refresh_on_read": True}
    store = MemvaultStore(memory, user_id="ttl-pages", ttl=ttl)
    for i in range(30):
        # Equal texts but for the number: many equal scores, decided by the tie-break.
        await store.aput(("docs",), f"doc{i}", {"text": f"shared words {i}"})
    before = {i.key: i for i in await store.asearch(("docs",), limit=30)}
    for trial in range(4):
        seen = [
            item.key
            for offset in range(0, 30, 7)
            for item in await store.asearch(("docs",), query="shared words", limit=7, offset=offset)
        ]
        assert sorted(seen) == sorted(before), trial  # no repeats, no skips
    after = {i.key: i for i in await store.asearch(("docs",), limit=30)}
    assert {k: (i.created_at, i.updated_at) for k, i in after.items()} == {
        k: (i.created_at, i.updated_at) for k, i in before.items()
    }
    await memory.close()


async def test_a_filter_finds_matches_beyond_the_best_hundred(store: MemvaultStore) -> None:
    """langgraph checkpoint-postgres test_store.py: filters apply before the cut, as
    InMemoryStore's do. 121 items; the filter selects the one ranked last for the query."""
    # Stored as one batch: what is under test is the search, not 121 round trips.
    await store.abatch(
        [
            PutOp(("docs",), f"near{i}", {"text": f"apple orchard harvest {i}", "n": i})
            for i in range(120)
        ]
    )
    await store.aput(("docs",), "far", {"text": "tax return deadline", "n": 999})
    found = await store.asearch(("docs",), query="apple orchard", filter={"n": 999})
    assert [i.key for i in found] == ["far"]
    assert found[0].score is not None and 0 <= found[0].score <= 1
    # Pages past what the best hundred hold fill from beyond them, in order, once each.
    wide = {"n": {"$gte": 90}}
    pages = [
        await store.asearch(("docs",), query="apple orchard", filter=wide, limit=10, offset=o)
        for o in range(0, 40, 10)
    ]
    keys = [i.key for page in pages for i in page]
    assert sorted(keys) == sorted([f"near{i}" for i in range(90, 120)] + ["far"])
    assert keys[-1] == "far"  # the least relevant comes last


async def test_invalid_namespaces_are_refused(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_cannot_put_empty_namespace / invalid labels
    with pytest.raises(InvalidNamespaceError):
        await store.aput((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.aput(("some", "fun", ""), "k", {"v": 1})
    assert await store.alist_namespaces() == []


async def test_list_namespaces_wildcards_pagination_depth_and_empty(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_list_namespaces_with_wildcards / _pagination / _max_depth /
    # _no_conditions / _empty_store
    assert await store.alist_namespaces() == []
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        await store.aput(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert await store.alist_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert await store.alist_namespaces(suffix=("*", "preferences")) == [
        ("guests", "456", "preferences")
    ]
    assert await store.alist_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert await store.alist_namespaces(max_depth=2) == [
        ("admin", "users"),
        ("guests", "123"),
        ("guests", "456"),
        ("users", "123"),
        ("users", "456"),
        ("users", "789"),
    ]
    for i in range(12):
        await store.aput(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    pages = [
        await store.alist_namespaces(prefix=("namespace",), limit=5, offset=offset)
        for offset in (0, 5, 10)
    ]
    assert pages == [
        [("namespace", f"sub_{i:02d}") for i in range(0, 5)],
        [("namespace", f"sub_{i:02d}") for i in range(5, 10)],
        [("namespace", f"sub_{i:02d}") for i in range(10, 12)],
    ]


async def test_langgraph_inside_a_namespace_is_allowed(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_cannot_put_empty_namespace (the valid half)
    doc = {"foo": "bar"}
    await store.aput(("foo", "langgraph", "foo"), "bar", doc)
    item = await store.aget(("foo", "langgraph", "foo"), "bar")
    assert item is not None and item.value == doc
    assert (await store.asearch(("foo", "langgraph", "foo")))[0].value == doc
    await store.adelete(("foo", "langgraph", "foo"), "bar")
    assert await store.aget(("foo", "langgraph", "foo"), "bar") is None


async def test_query_search_finds_by_the_values_words(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_async_vector_insert_with_auto_embedding
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]
    for key, value in docs:
        await store.aput(("test",), key, value)
    keys = [r.key for r in await store.asearch(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys
    # Updating an item re-indexes it: the old words no longer find it first.
    await store.aput(("test",), "doc1", {"text": "zebra crossing"})
    assert (await store.asearch(("test",), query="zebra crossing", limit=1))[0].key == "doc1"


async def test_put_without_index_is_never_found_by_a_query(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_vector_update_with_embedding (the index=False half)
    await store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
    await store.aput(("test",), "doc2", {"text": "something about dogs"})
    await store.aput(("test",), "doc3", {"text": "text about birds"})
    assert (await store.asearch(("test",), query="Zany Xerxes"))[0].key == "doc1"
    await store.aput(("test",), "doc1", {"text": "new text about dogs"})
    await store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = [r.key for r in await store.asearch(("test",), query="new text about dogs")]
    assert found[0] == "doc1" and "doc4" not in found and len(found) == 3
    # Everything but a query still sees it, with its exact value.
    item = await store.aget(("test",), "doc4")
    assert item is not None and item.value == {"text": "new text about dogs"}
    listed = await store.asearch(("test",), filter={"text": "new text about dogs"})
    assert sorted(i.key for i in listed) == ["doc1", "doc4"]
    # A TTL refresh rewrites the item as its put did: still unindexed.
    await store.aput(("ttl",), "k", {"text": "walrus tusk"}, index=False, ttl=60)
    await store.aput(("ttl",), "other", {"text": "seal"})
    assert await store.aget(("ttl",), "k", refresh_ttl=True) is not None
    assert [r.key for r in await store.asearch(("ttl",), query="walrus tusk")] == ["other"]


async def test_index_fields_decide_what_a_query_finds(
    make_settings: Callable[..., Settings],
) -> None:
    # checkpoint-postgres test_store.py: test_embed_with_path (store fields, per-put override)
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    # embed/dims name LangGraph's own embedder; memvault's configured model is used instead.
    index: Any = {"dims": 3, "embed": "not-a-provider:model", "fields": ["title", "meta.note"]}
    store = MemvaultStore(memory, user_id="graph-fields", index=index)
    a = {"title": "zebra crossing", "body": "quantum lattice", "meta": {"note": "stripes"}}
    await store.aput(("docs",), "a", a)
    await store.aput(("docs",), "b", {"title": "quantum lattice", "body": "zebra crossing"})

    async def first(query: str) -> str:
        return (await store.asearch(("docs",), query=query, limit=1))[0].key

    assert await first("quantum lattice") == "b"
    assert await first("zebra crossing") == "a"
    assert await first("stripes") == "a"
    # A put names its own fields.
    await store.aput(("docs",), "c", {"title": "plain", "body": "walrus tusk"}, index=["body"])
    assert await first("walrus tusk") == "c"
    # No text at the fields: nothing to find it by, though it is stored as put.
    await store.aput(("docs",), "d", {"body": "penguin colony"})
    assert "d" not in [i.key for i in await store.asearch(("docs",), query="penguin colony")]
    assert [i.key for i in await store.asearch(("docs",), filter={"body": "penguin colony"})] == [
        "d"
    ]
    got = await store.aget(("docs",), "a")
    assert got is not None and got.value == a
    await memory.close()


async def test_stores_of_other_users_apps_and_tenants_never_see_each_other(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    stores = {
        "user": MemvaultStore(memory, user_id="iso-a"),
        "other user": MemvaultStore(memory, user_id="iso-b"),
        "other app": MemvaultStore(memory, user_id="iso-a", app_id="iso-app"),
        "other tenant": MemvaultStore(memory.for_tenant("iso-tenant"), user_id="iso-a"),
    }
    for name, store in stores.items():
        await store.aput(("memories", "alice"), "pref", {"text": f"kiwi jam {name}"})
        await store.aput(("memories", name.replace(" ", "-")), "k", {"v": 1})
    for name, store in stores.items():
        item = await store.aget(("memories", "alice"), "pref")
        assert item is not None and item.value == {"text": f"kiwi jam {name}"}, name
        assert await store.alist_namespaces() == sorted(
            [("memories", "alice"), ("memories", name.replace(" ", "-"))]
        ), name
        found = await store.asearch(("memories",), query="kiwi jam", limit=10)
        assert [i.value["text"] for i in found if "text" in i.value] == [f"kiwi jam {name}"]
    # A delete in one store leaves the same namespace and key in the others.
    await stores["user"].adelete(("memories", "alice"), "pref")
    assert await stores["user"].aget(("memories", "alice"), "pref") is None
    for name in ("other user", "other app", "other tenant"):
        assert await stores[name].aget(("memories", "alice"), "pref") is not None, name
    await memory.close()


async def test_query_search_pages_and_odd_queries(store: MemvaultStore) -> None:
    # langgraph test_store.py: test_vector_search_pagination / test_vector_search_edge_cases
    for i in range(5):
        await store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = await store.asearch(("test",), query="test", limit=2)
    page2 = await store.asearch(("test",), query="test", limit=2, offset=2)
    assert len(page1) == len(page2) == 2
    assert not {i.key for i in page1} & {i.key for i in page2}
    assert len(await store.asearch(("test",), query="test", limit=10)) == 5
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(await store.asearch(("test",), query=query, limit=10)) == 5, query


def test_sync_store_over_sync_memory(make_settings: Callable[..., Settings]) -> None:
    with Memory(make_settings(embedding_provider="hash")) as memory:
        store = MemvaultStore(memory, user_id="sync")
        store.put(("a",), "k", {"x": [1, 2]})
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"x": [1, 2]}
        assert store.list_namespaces() == [("a",)]
        store.delete(("a",), "k")
        assert store.get(("a",), "k") is None


# --- differential: InMemoryStore is the reference --------------------------------------------

# Per-end-user namespaces as LangMem makes them (("memories", "{langgraph_user_id}")) beside
# others: one store lists and searches them all.
_NS = st.sampled_from(
    [("a",), ("a", "b"), ("b", "a", "c"), ("memories", "alice"), ("memories", "bob")]
)
_KEY = st.sampled_from(["k1", "k2", "k3"])
_VALUE = st.dictionaries(
    st.sampled_from(["x", "y", "n"]),
    st.one_of(st.integers(-5, 5), st.text("abc ", max_size=4), st.booleans(), st.none()),
    max_size=3,
)
# Each operation goes to one of two stores: two memvault users against two InMemoryStores.
_OPS = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.one_of(
            st.tuples(st.just("put"), _NS, _KEY, _VALUE),
            st.tuples(st.just("put_unindexed"), _NS, _KEY, _VALUE),
            st.tuples(st.just("delete"), _NS, _KEY),
            st.tuples(st.just("get"), _NS, _KEY),
            st.tuples(st.just("search"), st.sampled_from([(), ("a",), ("memories",), ("a", "b")])),
            st.tuples(
                st.just("search_filter"), st.sampled_from(["$eq", "$ne"]), st.integers(-2, 2)
            ),
            st.tuples(st.just("list"), st.one_of(st.none(), st.integers(1, 2))),
        ),
    ),
    min_size=1,
    max_size=12,
)


def _answer(store: Any, op: tuple[Any, ...]) -> Any:
    kind = op[0]
    if kind == "put":
        return store.put(op[1], op[2], op[3])
    if kind == "put_unindexed":
        return store.put(op[1], op[2], op[3], index=False)
    if kind == "delete":
        return store.delete(op[1], op[2])
    if kind == "get":
        item = store.get(op[1], op[2])
        return None if item is None else (item.namespace, item.key, item.value)
    if kind == "search":
        found = store.search(op[1], limit=100)
        return sorted((i.namespace, i.key, repr(i.value)) for i in found)
    if kind == "search_filter":
        # $eq/$ne, not $gt..: InMemoryStore raises on an item that lacks the field there.
        found = store.search((), filter={"n": {op[1]: op[2]}}, limit=100)
        return sorted((i.namespace, i.key) for i in found)
    listed = store.list_namespaces(max_depth=op[1])
    if isinstance(store, InMemoryStore):
        # InMemoryStore keeps a namespace's empty dict after its last delete (and makes one on a
        # get of a namespace it never held), so it lists namespaces with no items; LangGraph's
        # Postgres store, like ours, lists only namespaces that hold an item.
        held = [ns for ns, items in store._data.items() if items]
        truncated = {h[: op[1]] if op[1] else h for h in held}
        listed = [ns for ns in listed if ns in truncated]
    return listed


def test_same_answers_as_in_memory_store(make_settings: Callable[..., Settings]) -> None:
    runs = iter(range(10_000))
    with Memory(make_settings(embedding_provider="hash")) as memory:

        @hsettings(max_examples=25, deadline=None)
        @given(ops=_OPS)
        def check(ops: list[tuple[int, tuple[Any, ...]]]) -> None:
            # Fresh users per example: fresh, empty stores on the same database.
            run = next(runs)
            ours = [MemvaultStore(memory, user_id=f"diff-{run}-{n}") for n in (0, 1)]
            reference = [InMemoryStore(), InMemoryStore()]

            for which, op in ops:
                assert _answer(ours[which], op) == _answer(reference[which], op), (which, op)

        check()


async def test_no_running_loop(store: MemvaultStore) -> None:
    # langgraph checkpoint-postgres test_async_store.py: test_no_running_loop. A sync call on
    # the loop that owns the store would block it: InvalidStateError, as langgraph's own
    # async stores raise; from another thread the sync calls work.
    for call in (
        lambda: store.put(("foo", "bar"), "baz", {"val": "baz"}),
        lambda: store.get(("foo", "bar"), "baz"),
        lambda: store.delete(("foo", "bar"), "baz"),
        lambda: store.search(("foo", "bar")),
        lambda: store.list_namespaces(prefix=("foo",)),
        lambda: store.batch([PutOp(("foo", "bar"), "baz", {"val": "baz"})]),
    ):
        with pytest.raises(asyncio.InvalidStateError):
            call()
    with ThreadPoolExecutor(max_workers=1) as executor:
        put = executor.submit(store.put, ("foo", "bar"), "baz", {"val": "baz"})
        assert await asyncio.wrap_future(put) is None
        got = await asyncio.wrap_future(executor.submit(store.get, ("foo", "bar"), "baz"))
        assert got is not None and got.value == {"val": "baz"}


async def test_concurrent_puts_to_one_key_all_succeed_and_one_value_stays(
    store: MemvaultStore,
) -> None:
    # 150 at once used to lose 12 to a starved connection pool.
    outcomes = await asyncio.gather(
        *(store.aput(("race",), "key", {"n": n}) for n in range(150)), return_exceptions=True
    )
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    item = await store.aget(("race",), "key")
    assert item is not None and item.value["n"] in range(150)


async def test_two_hundred_concurrent_mixed_batches_have_no_errors(store: MemvaultStore) -> None:
    await store.abatch(
        [
            PutOp(("mixed", str(n % 4)), f"k{n}", {"text": f"note {n} on topic {n % 7}"})
            for n in range(40)
        ]
    )

    def ops(i: int) -> list[Op]:
        ns, key = ("mixed", str(i % 4)), f"k{i % 40}"
        return [
            [PutOp(ns, f"new{i}", {"text": f"fresh {i}"})],
            [GetOp(ns, key)],
            [SearchOp(("mixed",), query=f"topic {i % 7}", limit=3)],
            [PutOp(ns, key, {"text": f"changed {i}"})],
            [PutOp(ns, f"gone{i}", None)],
            [ListNamespacesOp(match_conditions=(), limit=10)],
        ][i % 6]

    outcomes = await asyncio.gather(
        *(store.abatch(ops(i)) for i in range(200)), return_exceptions=True
    )
    assert [o for o in outcomes if isinstance(o, BaseException)] == []


async def test_concurrent_calls_run_as_one_batch_and_one_bad_call_fails_alone(
    store: MemvaultStore,
) -> None:
    # Calls made at once are merged into one batch, as LangGraph's async stores merge them:
    # each caller still gets its own answers, and a caller whose operation is refused gets the
    # error while the others' operations are done.
    await store.aput(("b",), "old", {"n": 0})
    outcomes = await asyncio.gather(
        store.aput(("b",), "new", {"n": 1}),
        store.aget(("b",), "old"),
        store.asearch(("b",), filter={"n": {"$between": [0, 1]}}),
        store.aget(("b",), "old"),
        store.adelete(("b",), "old"),
        return_exceptions=True,
    )
    assert outcomes[0] is None and outcomes[4] is None
    assert isinstance(outcomes[2], ValueError) and "$between" in str(outcomes[2])
    for got in (outcomes[1], outcomes[3]):
        assert not isinstance(got, BaseException) and got is not None and got.value == {"n": 0}
    assert await store.aget(("b",), "old") is None
    new = await store.aget(("b",), "new")
    assert new is not None and new.value == {"n": 1}
