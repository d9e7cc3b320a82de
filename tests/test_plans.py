"""Query plans on a fresh store: retrieval must not depend on table statistics.

A new store has never been analysed; before the statements were shaped for it, the planner
nested every memory over every chunk (or posting) with a join filter. These tests capture the
SQL that real searches and listings send, EXPLAIN it as the app role inside the tenant (as it
ran), and check the plan's shape, not its time. Background ANALYZE after bulk work is checked
through the statistics PostgreSQL then holds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from sqlalchemy import event

from memvault import Settings
from memvault.db import keywords, store, tenancy, vectors
from memvault.db.tenancy import APP_ROLE
from memvault.models import MemoryFilter
from memvault.service import AsyncMemory
from tests.conftest import backend_of, settings_for

TABLES = ("memories", "memory_chunks", "memory_terms")
WORDS = ["garden", "invoice", "piano", "harbour", "lemon", "tennis", "Madrid", "printer"]
START = datetime(2024, 1, 1, tzinfo=UTC)


def notes(user: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "content": f"note {n} about the {WORDS[n % 8]} and the {WORDS[(n * 3) % 8]}",
            "user_id": user,
            "app_id": "work" if n % 3 else "home",
            "tags": ["todo"] if n % 5 == 0 else [],
            "occurred_at": START + timedelta(hours=n),
            "metadata": {"session_id": "s1", "turn": n},
            "infer": False,
        }
        for n in range(count)
    ]


@pytest.fixture
def frozen_statistics(raw: psycopg.Connection[Any]) -> None:
    """Keep autovacuum away for the test, so the tables stay exactly as a new store's."""
    _freeze_statistics(raw)


def _freeze_statistics(raw: psycopg.Connection[Any]) -> None:
    for table in TABLES:
        raw.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


def analysed(raw: psycopg.Connection[Any]) -> set[str]:
    rows = raw.execute(
        "SELECT DISTINCT tablename FROM pg_stats WHERE tablename = ANY(%s)", (list(TABLES),)
    )
    return {r[0] for r in rows}


def _settings(url: str, data_dir: Path, **overrides: Any) -> Settings:
    return settings_for(url, data_dir, embedding_provider="hash", analyze_after_rows=0, **overrides)


@pytest.fixture(scope="module")
async def filled(module_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store of 300 memories for one user, 100 for another and 100 in another tenant,
    written in batches with background ANALYZE and autovacuum off; once for the module, whose
    plan tests only read it. Its database's URL."""
    with psycopg.connect(module_database_url, autocommit=True) as conn:
        _freeze_statistics(conn)
    first = await AsyncMemory.open(_settings(module_database_url, tmp_path_factory.mktemp("plans")))
    try:
        await first.add_many(notes("ada", 300))
        await first.add_many(notes("bob", 100))
        await first.for_tenant("other").add_many(notes("ada", 100))
    finally:
        await first.close()
    return module_database_url


@pytest.fixture
def filled_raw(filled: str) -> Iterator[psycopg.Connection[Any]]:
    """A plain connection to the filled store's database."""
    with psycopg.connect(filled, autocommit=True) as conn:
        yield conn


@pytest.fixture
async def stored(filled: str, tmp_path: Path) -> AsyncIterator[Callable[..., AsyncMemory]]:
    """Stores opened on the filled database, with the settings a test asks for."""
    opened: list[AsyncMemory] = []

    async def open_store(**overrides: Any) -> AsyncMemory:
        memory = await AsyncMemory.open(_settings(filled, tmp_path / "data", **overrides))
        opened.append(memory)
        return memory

    yield open_store
    for memory in opened:
        await memory.close()


@contextmanager
def captured(memory: AsyncMemory) -> Iterator[list[tuple[str, Any]]]:
    """The SELECT statements (with their parameters) that ``memory`` sends meanwhile."""
    sent: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH", "SET", "RESET")):
            sent.append((statement, parameters))

    engine = backend_of(memory).engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def plans(
    database_url: str, sent: list[tuple[str, Any]], *, verbose: bool = False
) -> list[dict[str, Any]]:
    """EXPLAIN each statement as the service ran it: as the app role, in one transaction
    where the settings it made (the tenant, planner switches) are replayed in order.
    ``verbose``: each node lists its output columns."""
    options = "VERBOSE, FORMAT JSON" if verbose else "FORMAT JSON"
    found = []
    with psycopg.connect(database_url) as conn:
        conn.execute(f"SET ROLE {APP_ROLE}")
        for statement, parameters in sent:
            if "set_config" in statement or statement.lstrip().upper().startswith(("SET", "RESET")):
                conn.execute(statement, parameters)
                continue
            row = conn.execute(f"EXPLAIN ({options}) " + statement, parameters).fetchone()
            assert row is not None
            plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
            found.append(plan[0]["Plan"])
        conn.rollback()
    return found


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def relations(plan: dict[str, Any]) -> set[str]:
    return {n["Relation Name"] for n in nodes(plan) if "Relation Name" in n}


def blind_joins(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Nested loops that compare pairs with a join filter over chunks or postings: the plan
    that made a fresh store slow."""
    return [
        n
        for n in nodes(plan)
        if n["Node Type"] == "Nested Loop"
        and "Join Filter" in n
        and relations(n) & {"memory_chunks", "memory_terms"}
    ]


def memories_scanned_per_candidate(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Nested loops that read memories for each candidate other than by its id (a scan, or
    an owner index that ties with the key on a table without statistics): a scan of scans.
    One lookup by id per candidate is the cheap plan."""
    return [
        n
        for n in nodes(plan)
        if n["Node Type"] == "Nested Loop"
        and any(
            m.get("Relation Name") == "memories" and m.get("Index Name") != "ix_memories_id"
            for m in nodes(n)
        )
        and len(relations(n)) > 1
    ]


def memories_by_key(plan: dict[str, Any]) -> bool:
    return any(
        m.get("Relation Name") == "memories" and m.get("Index Name") == "ix_memories_id"
        for m in nodes(plan)
    )


async def test_retrieval_plans_on_a_never_analysed_store(
    stored: Callable[..., Any], filled: str, filled_raw: psycopg.Connection[Any]
) -> None:
    exact = await stored()
    approximate = await stored(search_exact_max_chunks=10)
    searches: list[tuple[AsyncMemory, dict[str, Any]]] = [
        (exact, {"recipe": "vector"}),
        (exact, {"recipe": "keyword"}),
        (exact, {"recipe": "hybrid", "app_id": "home", "tags": ["todo"]}),
        (exact, {"recipe": "hybrid", "context_window": 2}),
        # A question naming a time: its own lists and the time-narrowed ones, in one statement
        # per kind.
        (exact, {"recipe": "hybrid", "query": "the piano and the lemon last year"}),
        (approximate, {"recipe": "vector"}),
        (approximate, {"recipe": "vector", "app_id": "home"}),
    ]
    for memory, options in searches:
        query = options.pop("query", "the piano and the lemon")
        with captured(memory) as sent:
            found = await memory.search(query, user_id="ada", track_access=False, **options)
        assert found.results, options
        timings = found.diagnostics.timings_ms if found.diagnostics else {}
        lists = [k for k in timings if k.startswith("retrieve:")]
        assert lists and all(timings[k] <= timings["retrieve"] for k in lists), timings
        if "last year" in query:
            assert {"retrieve:time:vector", "retrieve:time:keyword"} <= set(lists), timings
            assert sum("UNION ALL" in statement for statement, _ in sent) == 2, options
        explained = plans(filled, sent)
        retrieval = [p for p in explained if relations(p) & {"memory_chunks", "memory_terms"}]
        assert retrieval, options
        for plan in explained:
            assert not blind_joins(plan), (options, plan)
        # The ranked candidates are looked up by id, or joined to the owner's memories read
        # once (a small scope, narrowing filters, a short page); never memories scanned for each.
        assert all(not memories_scanned_per_candidate(p) for p in retrieval), (options, retrieval)
        if memory is approximate:  # a few hundred candidates of a large scope: by id
            assert any(memories_by_key(p) for p in retrieval), options
    with captured(exact) as sent:
        listed = await exact.list(user_id="ada", app_id="home", tags=["todo"], limit=5)
    assert len(listed.results) == 5
    for plan in plans(filled, sent):
        assert plan["Node Type"] == "Limit" and not blind_joins(plan)
    assert analysed(filled_raw) == set()  # the plans above were made without statistics


async def test_a_filter_only_the_least_relevant_pass_still_fills_the_page(
    make_settings: Callable[..., Settings], frozen_statistics: None
) -> None:
    """The filters apply after ranking, yet a filter that only the least relevant memories
    pass still fills the page."""
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    close = [{"content": f"lemon lemon {n}", "user_id": "ada", "infer": False} for n in range(250)]
    far = [
        {
            "content": f"a long letter {n} from the harbour office with a lemon in it",
            "user_id": "ada",
            "tags": ["far"],
            "infer": False,
        }
        for n in range(10)
    ]
    await memory.add_many(close + far)
    for recipe in ("vector", "keyword"):
        found = await memory.search(
            "lemon", user_id="ada", recipe=recipe, tags=["far"], limit=10, track_access=False
        )
        assert len(found.results) == 10, recipe
        assert all(h.tags == ["far"] for h in found.results)
    await memory.close()


async def test_bulk_adds_analyse_the_tables_in_the_background(
    make_settings: Callable[..., Settings], frozen_statistics: None, raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(
        make_settings(embedding_provider="hash", analyze_after_rows=200)
    )
    for n in range(3):
        await memory.add(f"single note {n}", user_id="ada", infer=False)
    await memory.add_many(notes("ada", 150))
    await backend_of(memory).analyzer.idle()
    assert analysed(raw) == set()  # single adds and 150 batched rows: not yet
    await memory.add_many(notes("bob", 60))
    await backend_of(memory).analyzer.idle()
    assert analysed(raw) == set(TABLES)
    await memory.close()


CONVERSATION_KEY = [("tenant_id", "text"), ("user_id", "text"), ("id", "text")]


@pytest.mark.parametrize(
    "table", ["memories", "entities", "facts", "relations", "goals", "conversations"]
)
async def test_foreign_key_checks_find_their_row_by_key_on_a_never_analysed_store(
    table: str, filled_raw: psycopg.Connection[Any]
) -> None:
    """PostgreSQL checks that a referenced row exists (a posting's or chunk's memory, a
    fact's entity, a subgoal's goal) with one cached plan per connection, made on the table
    as it was. An index that starts with the tenant alone once tied with the primary key
    there, and each check then read every row of the tenant (bulk ingestion slowed as the
    store grew: 160 memories/s at 30,000, 67/s at 40,000). Migrations 0013 and 0014."""
    filled_raw.execute("SET plan_cache_mode = force_generic_plan")
    # A conversation is keyed by its user and the caller's (text) id.
    key = CONVERSATION_KEY if table == "conversations" else [("tenant_id", "text"), ("id", "uuid")]
    types = ", ".join(kind for _, kind in key)
    where = " AND ".join(
        f"{column} OPERATOR(pg_catalog.=) ${n}" for n, (column, _) in enumerate(key, start=1)
    )
    filled_raw.execute(
        f"PREPARE exists_check({types}) AS SELECT 1 FROM ONLY public.{table} x"
        f" WHERE {where} FOR KEY SHARE OF x"
    )
    for tenant in ("default", "other"):
        values = (
            f"'{tenant}', 'ada', gen_random_uuid()::text"
            if table == "conversations"
            else (f"'{tenant}', gen_random_uuid()")
        )
        row = filled_raw.execute(f"EXPLAIN (FORMAT JSON) EXECUTE exists_check({values})").fetchone()
        assert row is not None
        plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
        scans = [n for n in nodes(plan[0]["Plan"]) if n.get("Relation Name") == table]
        assert scans and all(
            n.get("Index Name") in (f"pk_{table}", "ix_memories_id") for n in scans
        ), scans


async def test_a_users_facts_are_listed_newest_first_from_an_index(
    stored: Callable[..., Any], filled: str, filled_raw: psycopg.Connection[Any]
) -> None:
    """Every listing of a user's facts is newest first with a limit (``facts()``, a profile's
    new facts, the facts about a question's entities). Without an index in that order every
    fact of the user was read and sorted (5.9 ms for 5,222 in bench/remember.py's store, 0.17
    through ``ix_facts_recent``, migration 0019), on a never-analysed table too."""
    filled_raw.execute("ALTER TABLE facts SET (autovacuum_enabled = false)")
    memory = await stored()
    for n in range(40):
        await memory.add_fact("@user", "likes", value=f"{WORDS[n % 8]} {n}", user_id="fay")
    with captured(memory) as sent:
        listed = await memory.facts(user_id="fay", limit=5)
    assert [f.value for f in listed] == [f"{WORDS[n % 8]} {n}" for n in range(39, 34, -1)]
    listings = [
        p for p in plans(filled, sent) if p["Node Type"] == "Limit" and "facts" in relations(p)
    ]
    assert listings, sent
    for plan in listings:
        scans = [n for n in nodes(plan) if n.get("Relation Name") == "facts"]
        assert [n.get("Index Name") for n in scans] == ["ix_facts_recent"], plan
        assert not any(n["Node Type"] == "Sort" for n in nodes(plan)), plan
    assert not filled_raw.execute("SELECT 1 FROM pg_stats WHERE tablename = 'facts'").fetchone()


async def test_only_ranking_transactions_begin_with_nested_loops_off(
    stored: Callable[..., Any],
) -> None:
    """Ranking transactions say it with their tenant (a round trip fewer per candidate list);
    the next transaction on the same pooled connection plans as usual again."""
    memory = await stored(pool_size=1)
    engine = backend_of(memory).engine

    async def nestloop() -> str:
        async with engine.begin() as conn:
            return str((await conn.exec_driver_sql("SHOW enable_nestloop")).scalar())

    with tenancy.tenant_scope("default"):
        with tenancy.ranking_transactions():
            assert await nestloop() == "off"
        assert await nestloop() == "on"
        async with engine.begin() as conn:
            await store.nested_loops_off(conn)  # a transaction of any kind can still ask
            assert (await conn.exec_driver_sql("SHOW enable_nestloop")).scalar() == "off"


async def test_chunks_are_sorted_by_memory_with_their_distance_not_their_vector(
    stored: Callable[..., Any], filled: str
) -> None:
    """An exact ranking groups each memory's chunks by sorting them; folded into the
    aggregate, the distance was computed after that sort, which then carried every vector
    (and spilled to disk past work_mem: half the statement at 5,000 chunks)."""
    memory = await stored()
    with captured(memory) as sent:
        await memory.search("the piano", user_id="ada", recipe="vector", track_access=False)
    explained = plans(filled, sent, verbose=True)
    sorts = [
        n
        for plan in explained
        if "memory_chunks" in relations(plan)
        for n in nodes(plan)
        if n["Node Type"] == "Sort"
    ]
    assert sorts
    for node in sorts:
        # A distance names the vector column inside its expression; a carried vector is a
        # column of its own.
        carried = [c for c in node["Output"] if "chunks.embedding" in c and "<=>" not in c]
        assert not carried, node["Output"]


async def test_one_ranking_serves_one_owner() -> None:
    """Pages share a ranking of one owner's memories: pages of two owners are a caller's bug,
    refused before any statement runs."""
    pages = [MemoryFilter.model_construct(user_id=u) for u in ("ada", "bob")]
    no_connection = cast(Any, None)
    with pytest.raises(ValueError, match="one owner"):
        await keywords.bm25(no_connection, "default", pages, [1], 10)
    with pytest.raises(ValueError, match="one owner"):
        await vectors.nearest(
            no_connection, "default", pages, [0.0] * 3, "m", 3, 10, exact_max_chunks=0, ef_search=1
        )


async def test_an_entitys_support_is_read_by_index_not_by_scanning_every_fact(
    stored: Callable[..., Any], filled: str, filled_raw: psycopg.Connection[Any]
) -> None:
    """remember() asks of each entity the question names whether a current fact is about it.
    As one "subject or object" condition PostgreSQL answered it by reading the tenant's whole
    facts table for each entity with none (0.8 ms each at 3,657 facts, growing with the
    store); a lookup on each of the two indexes answers it at any size."""
    filled_raw.execute("ALTER TABLE facts SET (autovacuum_enabled = false)")
    memory = await stored()
    for n in range(60):
        await memory.add_fact("Gus", "likes", value=f"{WORDS[n % 8]} {n}", user_id="gil")
    await memory.add("Gus and Hana met in Madrid", user_id="gil", wait=True)
    with captured(memory) as sent:
        await memory.remember("Gus or Hana in Madrid?", user_id="gil", include=["entities"])
    support = [p for p in plans(filled, sent) if {"entity_mentions", "facts"} <= relations(p)]
    assert support, sent
    for plan in support:
        scans = [n for n in nodes(plan) if n.get("Relation Name") == "facts"]
        # By the tenant's key (pk_facts) is a scan of all its facts, as a Seq Scan is.
        lookups = {n.get("Index Name") for n in scans}
        assert lookups == {"ix_facts_subject", "ix_facts_object"}, plan
