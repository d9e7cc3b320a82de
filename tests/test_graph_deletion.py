"""Deletion follows the source: what only a deleted memory held leaves the graph with it, in
the same transaction, whichever way the memory goes; a fact with another source stays. Proven
by reading every table afterwards as the table owner (no row-level policy in the way)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest

from memvault import AsyncMemory, Settings
from memvault.db.tables import GRAPH_TABLES, metadata
from memvault.graph import derive, sealed
from memvault.graph.claims import EntityMention, Extraction, FactClaim, RelationClaim
from memvault.language import keyed
from memvault.language.terms import query_term_ids
from tests.conftest import backend_of

ONLY_A = "Caroline works for Zyxwerk, a robotics firm in Paris."
BOTH = "Caroline lives in Paris."
ONLY_B = "Caroline moved to Paris last spring, she said."


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    said = {
        ONLY_A: Extraction(
            entities=(EntityMention("Zyxwerk", "organisation", aliases=("Zyxwerk GmbH",)),),
            facts=(
                FactClaim("Caroline", "works_for", "Caroline works for Zyxwerk", object="Zyxwerk"),
                FactClaim("Caroline", "lives_in", "Caroline lives in Paris", object="Paris"),
                FactClaim("Zyxwerk", "makes", "Zyxwerk makes robots", value="robots"),
            ),
            relations=(
                RelationClaim("Zyxwerk", "LOCATED_IN", "Paris", properties={"since": "2019"}),
            ),
        ),
        ONLY_B: Extraction(
            facts=(FactClaim("Caroline", "lives_in", "Caroline lives in Paris", object="Paris"),)
        ),
    }

    async def extract(text: str, **_: Any) -> Extraction:
        return said.get(text, Extraction())

    monkeypatch.setattr(derive, "extract", extract)
    yield


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> Any:
    opened = await AsyncMemory.open(make_settings(dedup_similar_threshold=0.999))
    yield opened
    await opened.close()


# The probes read on a thread of their own: a blocking read on the event loop's thread would
# stop the store's background work (the audit log's day partition made under an exclusive lock
# on its first write of the day) halfway, and wait for that lock forever.
async def _rows(raw: psycopg.Connection[Any], table: str, user: str) -> list[tuple[Any, ...]]:
    query = f"SELECT * FROM {table} WHERE user_id = %s"
    return await asyncio.to_thread(lambda: raw.execute(query, (user,)).fetchall())


async def _everywhere(raw: psycopg.Connection[Any], needles: list[Any]) -> list[str]:
    """Every table and column that holds one of ``needles`` (ids, term ids, bytes)."""
    return await asyncio.to_thread(_holding, raw, needles)


def _holding(raw: psycopg.Connection[Any], needles: list[Any]) -> list[str]:
    found = []
    for table in metadata.sorted_tables:
        for row in raw.execute(f"SELECT * FROM {table.name}").fetchall():
            for value in row:
                values = value if isinstance(value, list) else [value]
                if any(v in needles for v in values if not isinstance(v, float)):
                    found.append(table.name)
    return found


async def test_deleting_a_memory_removes_what_only_it_held(
    memory: AsyncMemory, scripted: None, raw: psycopg.Connection[Any]
) -> None:
    a = await memory.add(ONLY_A, user_id="u")
    b = await memory.add(ONLY_B, user_id="u")
    (zyx,) = await memory.entities(user_id="u", q="Zyxwerk")
    works_for = await memory.facts(user_id="u", entity="Zyxwerk")
    assert {f.predicate for f in works_for} == {"works_for", "makes"}
    keyring = backend_of(memory).keys.current()
    term_ids = query_term_ids(keyring, "Zyxwerk robots GmbH")
    name_key = keyed.name_key(keyring, "Zyxwerk")
    fact_ids = [f.id for f in works_for]
    assert await _everywhere(raw, [a.id, zyx.id, name_key, *fact_ids])  # the probe finds them

    await memory.delete(a.id, user_id="u")

    (lives,) = await memory.facts(user_id="u", entity="Caroline")
    assert (lives.object, lives.memory_ids) == ("Paris", [b.id])
    assert await memory.entities(user_id="u", q="Zyxwerk") == []
    # Only the memory's history tombstone and the audit's deletion receipt still name its id.
    assert set(await _everywhere(raw, [a.id])) == {"memory_history", "audit_log"}
    assert set(await _everywhere(raw, [zyx.id, name_key, *fact_ids, *term_ids])) == set()
    for table in ("relations", "relation_sources", "entity_merges", "fact_reviews"):
        assert await _rows(raw, table, "u") == [], table
    names = {sealed.open_entity(keyring, e).name for e in await _entity_rows(memory, "u")}
    assert names == {"Caroline", "Paris"}

    await memory.delete(b.id, user_id="u")
    for table in GRAPH_TABLES:
        assert await _rows(raw, table, "u") == [], table


async def _entity_rows(memory: AsyncMemory, user: str) -> list[Any]:
    from memvault.db import graph as graph_db
    from memvault.db.tenancy import tenant_scope

    with tenant_scope(memory.tenant_id):
        async with backend_of(memory).engine.connect() as conn:
            return await graph_db.list_entities(
                conn, memory.tenant_id, user, type=None, keys=[], term_ids=[], limit=100
            )


async def test_delete_all_removes_every_graph_row_of_the_user_only(
    memory: AsyncMemory, scripted: None, raw: psycopg.Connection[Any]
) -> None:
    await memory.add(ONLY_A, user_id="u")
    await memory.add_fact("Caroline", "age", value="34", user_id="u")  # no source memory
    await memory.add_fact("Someone", "age", value="50", user_id="other")
    (zyx,) = await memory.entities(user_id="u", q="Zyxwerk")
    (paris,) = await memory.entities(user_id="u", q="Paris")
    await memory.merge_entities(zyx.id, into=paris.id, user_id="u")
    assert await memory.delete_all(user_id="u") == 1
    for table in GRAPH_TABLES:
        assert await _rows(raw, table, "u") == [], table
    assert [f.value for f in await memory.facts(user_id="other")] == ["50"]


async def test_a_background_add_derives_in_the_worker_and_goes_with_its_memory(
    make_settings: Callable[..., Settings], scripted: None, raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(make_settings(run_worker=True))
    try:
        added = await memory.add(ONLY_A, user_id="u", background=True, wait=True)
        assert {f.predicate for f in await memory.facts(user_id="u")} == {
            "works_for",
            "lives_in",
            "makes",
        }
        await memory.delete(added.id, user_id="u")
        for table in GRAPH_TABLES:
            assert await _rows(raw, table, "u") == [], table
    finally:
        await memory.close()


def test_the_probe_itself_can_fail(raw: psycopg.Connection[Any]) -> None:
    """_everywhere is not vacuous: an id it is given and that is stored is found."""
    stored = raw.execute("SELECT key_id FROM encryption_keys LIMIT 1").fetchone()
    if stored is not None:
        assert _holding(raw, [stored[0]]) == ["encryption_keys"]
    assert _holding(raw, [UUID(int=0)]) == []


async def test_editing_a_memory_replaces_what_its_text_claimed(
    memory: AsyncMemory, scripted: None, raw: psycopg.Connection[Any]
) -> None:
    a = await memory.add(ONLY_A, user_id="u")
    await memory.update(a.id, user_id="u", content=ONLY_B)
    assert [(f.object, f.memory_ids) for f in await memory.facts(user_id="u")] == [
        ("Paris", [a.id])
    ]
    assert await memory.entities(user_id="u", q="Zyxwerk") == []
    assert await _rows(raw, "relations", "u") == []
    await memory.update(a.id, user_id="u", content="Nothing to see here.")
    for table in GRAPH_TABLES:
        assert await _rows(raw, table, "u") == [], table
