"""LangGraph's own store tests, ported for ``MemvaultStore``.

Each test names the peer test it ports: suite langchain-ai/langgraph, file
``libs/checkpoint/tests/test_store.py`` (checkpoint), ``libs/checkpoint-postgres/tests/
test_store.py`` / ``test_async_store.py`` (postgres) or ``libs/checkpoint-sqlite/tests/
test_store.py`` (sqlite), and the test. What they assert of the store is kept; what they assert
of their own database (rows, SQL, migrations) or of the caller's embedding function (exact
cosine values of ``CharacterEmbeddings``) is not: docs/integrations.md names those, and
``bench/peer_suites.py`` runs the peers' files themselves. The cases already in
``tests/test_integration_langgraph.py`` (basic ops, namespace listing, filters with operators,
batch order, TTL, paging with TTL refresh, filters beyond the best hundred, ``no_running_loop``,
concurrency) are not repeated here.

One memvault store serves the module; each test has a store of its own user, which is what
isolates LangGraph stores of one memvault store from each other (tested there)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from memvault import AsyncMemory
from memvault.integrations.langgraph import MemvaultStore


@pytest.fixture(scope="module")
def shared(module_memory: AsyncMemory) -> AsyncMemory:
    return module_memory


@pytest.fixture
def store(shared: AsyncMemory) -> MemvaultStore:
    return MemvaultStore(shared, user_id=f"lg-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def text_store(shared: AsyncMemory) -> MemvaultStore:
    """Their ``vector_store``: an index on the value's ``text``."""
    return MemvaultStore(shared, user_id=f"lg-{uuid.uuid4().hex[:12]}", index={"fields": ["text"]})


async def _namespaces_found(store: MemvaultStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in await store.asearch(prefix, limit=100)}


async def test_search_namespace_segment_boundary(store: MemvaultStore) -> None:
    # postgres test_store.py / sqlite test_store.py: test_search_namespace_segment_boundary
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
    ]:
        await store.aput(namespace, "k", {"v": 1})
    assert await _namespaces_found(store, ("foo",)) == {
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
    }
    assert await _namespaces_found(store, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert await _namespaces_found(store, ("foo", "child")) == {
        ("foo", "child"),
        ("foo", "child", "deep"),
    }
    assert await _namespaces_found(store, ("foo2",)) == {("foo2",)}
    assert await _namespaces_found(store, ("fo",)) == set()


async def test_search_empty_prefix_and_metacharacters(store: MemvaultStore) -> None:
    # postgres test_store.py: test_search_empty_prefix_is_unconstrained,
    # test_search_namespace_like_metacharacters; sqlite test_store.py:
    # test_search_namespace_wildcard_chars_are_literal, test_search_namespace_is_case_sensitive
    for namespace in [("a",), ("b", "c"), ("user_1",), ("user_1", "child"), ("userX1",)]:
        await store.aput(namespace, "k", {"v": 1})
    for namespace in [("a%b",), ("axxb",), ("a*b",), ("a?b",), ("Users",)]:
        await store.aput(namespace, "k", {"v": 2})
    assert len(await _namespaces_found(store, ())) == 10
    assert await _namespaces_found(store, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert await _namespaces_found(store, ("a%b",)) == {("a%b",)}
    assert await _namespaces_found(store, ("a*b",)) == {("a*b",)}
    assert await _namespaces_found(store, ("a?b",)) == {("a?b",)}
    assert await _namespaces_found(store, ("users",)) == set()


async def test_list_namespaces_segment_boundary_and_newlines(store: MemvaultStore) -> None:
    # postgres test_store.py: test_list_namespaces_segment_boundary,
    # test_namespace_labels_with_trailing_newline; sqlite test_store.py:
    # test_list_namespaces_metacharacter_labels
    for namespace in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
        ("users", "alice\n"),
        ("meta", "a_b"),
        ("meta", "a%b"),
    ]:
        await store.aput(namespace, "k", {"v": 1})
    assert set(await store.alist_namespaces(prefix=("foo",), limit=100)) == {
        ("foo",),
        ("foo", "child"),
    }
    assert set(await store.alist_namespaces(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }
    assert set(await store.alist_namespaces(prefix=("uid", "*", "alice"), limit=100)) == {
        ("uid", "users", "alice")
    }
    assert len(await store.alist_namespaces(prefix=("uid",), limit=100)) == 3
    assert await store.alist_namespaces(prefix=("users", "alice"), limit=100) == []
    assert await store.alist_namespaces(prefix=("meta", "a_b")) == [("meta", "a_b")]
    assert await store.alist_namespaces(suffix=("a%b",)) == [("meta", "a%b")]


async def test_batch_ops_of_each_kind(store: MemvaultStore) -> None:
    # postgres test_async_store.py: test_abatch_order, test_batch_get_ops, test_batch_put_ops,
    # test_batch_search_ops, test_batch_list_namespaces_ops
    await store.aput(("test", "foo"), "key1", {"data": "value1"})
    await store.aput(("test", "bar"), "key2", {"data": "value2"})
    results = await store.abatch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2-new"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("test",)),), limit=10),
            GetOp(("test",), "key3"),
            PutOp(("test", "foo"), "key1", None),
        ]
    )
    assert len(results) == 6
    assert results[0] is not None and results[0].value == {"data": "value1"}
    assert results[1] is None and results[5] is None
    assert [item.key for item in results[2]] == ["key1"]
    assert set(results[3]) == {("test", "foo"), ("test", "bar")}
    assert results[4] is None
    # The batch's writes land after its reads (as in LangGraph's stores).
    assert await store.aget(("test", "foo"), "key1") is None
    after = await store.aget(("test", "bar"), "key2")
    assert after is not None and after.value == {"data": "value2-new"}
    # test_batch_list_namespaces_ops: max_depth and limit in one batch
    listed = await store.abatch(
        [ListNamespacesOp(max_depth=1, limit=5), ListNamespacesOp(limit=1, offset=1)]
    )
    assert listed == [[("test",)], []]  # ("test", "foo") went with its last item


async def test_large_batches_async(store: MemvaultStore) -> None:
    # postgres test_async_store.py: test_large_batches_async (N=1000, M=10 there; 4 x 2 here,
    # the same six operations on the same keys at once: queued, none fails; the 200 at once of
    # test_integration_langgraph.py is the load test)
    namespace_of = [("test", "foo", "bar", "baz", str(m % 2)) for m in range(2)]
    coros: list[Any] = []
    for m in range(2):
        for i in range(4):
            ns = namespace_of[m]
            coros += [
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=m + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.adelete(ns, f"key{i}"),
            ]
    results = await asyncio.gather(*coros)
    assert len(results) == 2 * 4 * 6


async def test_vector_update_with_embedding(text_store: MemvaultStore) -> None:
    # postgres test_store.py: test_vector_update_with_embedding (scores: rewriting an item to
    # other text lowers its score for the old query, and index=False keeps it out of searches)
    await text_store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
    await text_store.aput(("test",), "doc2", {"text": "something about dogs"})
    await text_store.aput(("test",), "doc3", {"text": "text about birds"})
    initial = await text_store.asearch(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    assert initial[0].score is not None
    await text_store.aput(("test",), "doc1", {"text": "new text about dogs"})
    after = await text_store.asearch(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in after if r.key == "doc1"), 0.0)
    assert after_score is not None and after_score < initial[0].score
    for hit in await text_store.asearch(("test",), query="new text about dogs"):
        if hit.key == "doc1":
            assert hit.score is not None and hit.score > after_score
    await text_store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    found = await text_store.asearch(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in found)


async def test_vector_search_with_filters(text_store: MemvaultStore) -> None:
    # postgres test_store.py: test_vector_search_with_filters (both refresh_ttl values)
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        await text_store.aput(("test",), key, value)
    for refresh in (True, False):
        found = await text_store.asearch(
            ("test",), query="apple", filter={"color": "red"}, refresh_ttl=refresh
        )
        assert [r.key for r in found][:1] == ["doc1"] and len(found) == 2
        found = await text_store.asearch(
            ("test",), query="car", filter={"color": "red"}, refresh_ttl=refresh
        )
        assert [r.key for r in found][:1] == ["doc2"] and len(found) == 2
    found = await text_store.asearch(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in found] == ["doc3"]


async def test_vector_search_pagination_and_edge_cases(text_store: MemvaultStore) -> None:
    # postgres test_store.py: test_vector_search_pagination, test_vector_search_edge_cases
    for i in range(5):
        await text_store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
    first = await text_store.asearch(("test",), query="test", limit=2)
    second = await text_store.asearch(("test",), query="test", limit=2, offset=2)
    assert len(first) == 2 and len(second) == 2
    assert {r.key for r in first}.isdisjoint(r.key for r in second)
    assert len(await text_store.asearch(("test",), query="test", limit=10)) == 5
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(await text_store.asearch(("test",), query=query)) == 5


async def test_non_ascii(text_store: MemvaultStore) -> None:
    # postgres test_store.py / checkpoint test_store.py: test_non_ascii
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        await text_store.aput(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        found = await text_store.asearch(("user_123", "memories"), query=text)
        assert found[0].key == str(i)
        assert found[0].value == {"text": text}


async def test_filter_values_are_data_not_code(store: MemvaultStore) -> None:
    # sqlite test_store.py: test_sql_injection_filter_values, test_numeric_filter_safety,
    # test_boolean_filter_safety, test_filter_keys_with_hyphens_and_digits,
    # test_sql_injection_vulnerability
    await store.aput(("docs",), "a", {"name": "x' OR '1'='1", "n": 5, "flag": True, "my-key1": 1})
    await store.aput(("docs",), "b", {"name": "plain", "n": 50, "flag": False, "my-key1": 2})
    assert await store.asearch(("docs",), filter={"name": "' OR '1'='1"}) == []
    assert [r.key for r in await store.asearch(("docs",), filter={"name": "x' OR '1'='1"})] == ["a"]
    assert [r.key for r in await store.asearch(("docs",), filter={"n": {"$gt": 10}})] == ["b"]
    assert [r.key for r in await store.asearch(("docs",), filter={"n": {"$lte": 5}})] == ["a"]
    assert [r.key for r in await store.asearch(("docs",), filter={"flag": True})] == ["a"]
    assert [r.key for r in await store.asearch(("docs",), filter={"flag": False})] == ["b"]
    assert [r.key for r in await store.asearch(("docs",), filter={"my-key1": 2})] == ["b"]
    assert await store.asearch(("docs",), filter={"n": "5"}) == []
    # A key with dots that is no key of the value is the nested path it spells (SQLite's
    # reading; Postgres and InMemoryStore read the key itself, which is looked up first).
    await store.aput(("paths",), "hyphen", {"user": {"access-level": "nested"}})
    await store.aput(("paths",), "digit", {"user": {"123abc": "ok2"}, "a.b": 1})
    found = await store.asearch(("paths",), filter={"user.access-level": "nested"})
    assert [r.key for r in found] == ["hyphen"]
    assert [r.key for r in await store.asearch(("paths",), filter={"user.123abc": "ok2"})] == [
        "digit"
    ]
    assert [r.key for r in await store.asearch(("paths",), filter={"a.b": 1})] == ["digit"]
    # A key is data, never code: one shaped as SQL matches nothing (SQLite's store refuses it).
    malicious = "access') = 'public' OR '1'='1' OR json_extract(value, '$."
    assert await store.asearch(("docs",), filter={malicious: "dummy"}) == []


async def test_search_items_orders_unscored_by_update(store: MemvaultStore) -> None:
    # sqlite test_store.py: test_search_items; postgres test_store.py: test_search (a search
    # without a query lists the prefix, newest update first, unscored; limit and offset page)
    for i in range(4):
        await store.aput(("test", "docs"), f"doc{i}", {"title": f"Doc {i}", "n": i})
    found = await store.asearch(("test",))
    assert [r.key for r in found] == ["doc3", "doc2", "doc1", "doc0"]
    assert all(r.score is None for r in found)
    assert [r.key for r in await store.asearch(("test",), limit=2, offset=1)] == ["doc2", "doc1"]
    await store.aput(("test", "docs"), "doc0", {"title": "Doc 0 again", "n": 0})
    assert [r.key for r in await store.asearch(("test",), limit=1)] == ["doc0"]


async def test_vector_search_edge_cases(text_store: MemvaultStore) -> None:
    # postgres test_async_store.py: test_vector_search_edge_cases (a query that holds the
    # item's words among others, or junk around one of them, scores below the item's own
    # text: the score is the query's similarity to the item, not whether the item holds every
    # word of the query; an empty query lists, unscored)
    await text_store.aput(("test",), "doc1", {"text": "test document"})
    perfect = (await text_store.asearch(("test",), query="test document"))[0].score
    assert perfect is not None
    for query in ("", None):
        found = await text_store.asearch(("test",), query=query)
        assert [(r.key, r.score) for r in found] == [("doc1", None)]
    for query in ("foo " * 100, "test!@#$%^&*()", "document"):
        found = await text_store.asearch(("test",), query=query)
        assert len(found) == 1
        assert found[0].score is not None and found[0].score < perfect, query
