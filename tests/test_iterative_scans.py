"""A big owner's vector search on a server whose pgvector scans HNSW iteratively (0.8 or
later) walks the index past other owners' and other tenants' rows to its own nearest
neighbours; on the embedded server's pgvector 0.6 the same owner is ranked as before, exactly
from its nearest chunks. The store reads which it is when it opens, and the doctor says so."""

from __future__ import annotations

import math
import random
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY

from memvault import AsyncMemory, Settings
from memvault.db import vectors
from memvault.diagnostics import run_checks
from memvault.embedding.hashing import HashEmbedder
from memvault.models import MemoryFilter
from tests.conftest import TEMPLATE, backend_of, settings_for
from tests.waiting import wait_until

MODEL = HashEmbedder().model_id
# The big owner has more chunks than the exact limit; a page of 50 of them is a large enough
# LIMIT that, unanalysed, the planner would rather sort them all than walk the index.
BIG_OWNER, CROWD = 120, 400
EXACT_MAX_CHUNKS = 50
# A plain HNSW scan hands back this many candidates: every one another owner's.
EF_SEARCH = 10
PAGE = 50
NEAREST = 5


@pytest.fixture
def iterative_database_url(pgvector_08_server: Callable[[str], str]) -> Iterator[str]:
    """A fresh copy of the pgvector 0.8 server's template, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    admin = pgvector_08_server("postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    yield pgvector_08_server(name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _settings(url: str, data_dir: Path, *, iterative: bool = True) -> Settings:
    return settings_for(
        url,
        data_dir,
        embedding_provider="hash",
        search_exact_max_chunks=EXACT_MAX_CHUNKS,
        hnsw_ef_search=EF_SEARCH,
        search_iterative_scans=iterative,
    )


def _near(rng: random.Random, spread: float) -> list[float]:
    """A unit vector around the first axis: the smaller ``spread``, the nearer the query."""
    vector = [rng.gauss(0, 1) * spread for _ in range(384)]
    vector[0] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def _lines(user_id: str, vectors: list[list[float]]) -> list[dict[str, Any]]:
    stamp = "2026-01-01T00:00:00Z"
    return [
        {
            "memvault_export": 2,
            "kind": "memory",
            "user_id": user_id,
            "id": str(uuid.uuid4()),
            "content": f"note {n} of {user_id}",
            "occurred_at": stamp,
            "created_at": stamp,
            "updated_at": stamp,
            "vectors": [{"model": MODEL, "chunks": [vector]}],
        }
        for n, vector in enumerate(vectors)
    ]


def _cosine(a: list[float], b: list[float]) -> float:
    return 1 - sum(x * y for x, y in zip(a, b, strict=True))


async def _crowded_store(memory: AsyncMemory) -> tuple[list[float], list[str]]:
    """Ana (tenant t1) holds the big scope; Ben in her tenant and Ana of tenant t2 hold
    memories nearer the query than any of hers. Answers the query and Ana's memories, nearest
    first."""
    rng = random.Random(3)
    own = [_near(rng, 0.08) for _ in range(BIG_OWNER)]
    ana = _lines("ana", own)
    await memory.for_tenant("t1").import_memories(ana)
    await memory.for_tenant("t1").import_memories(
        _lines("ben", [_near(rng, 0.02) for _ in range(CROWD)])
    )
    await memory.for_tenant("t2").import_memories(
        _lines("ana", [_near(rng, 0.01) for _ in range(CROWD)])
    )
    query = _near(rng, 0.05)
    nearest = sorted(range(BIG_OWNER), key=lambda n: _cosine(own[n], query))
    return query, [ana[n]["id"] for n in nearest]


def _rankings() -> dict[str, float]:
    return {
        by: REGISTRY.get_sample_value("memvault_vector_rankings_total", {"by": by}) or 0.0
        for by in ("index", "nearest_chunks", "scope")
    }


async def _search_as_ana(memory: AsyncMemory, query: list[float]) -> tuple[list[str], str]:
    """Ana's page from the store's vector index, and how it was ranked."""
    before = _rankings()
    index = backend_of(memory).vector_index
    hits = await index.search("t1", MemoryFilter(user_id="ana"), MODEL, query, PAGE)
    after = _rankings()
    (ranked_by,) = [by for by in after if after[by] > before[by]]
    return [str(hit.memory_id) for hit in hits], ranked_by


def _plain_scan_owners(url: str, query: list[float]) -> set[tuple[str, str]]:
    """Whose rows a plain HNSW scan of ``EF_SEARCH`` candidates returns (the owner's filter
    applied after it, as pgvector 0.6 would)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        rows = conn.execute(
            "SELECT tenant_id, user_id FROM memory_chunks "
            "ORDER BY embedding::vector(384) <=> %s::vector LIMIT %s",
            (str(query), EF_SEARCH),
        ).fetchall()
    return {(tenant, user) for tenant, user in rows}


def _hnsw_tuples_read(url: str) -> int:
    """Index entries the HNSW index has handed out (what server processes that ended have
    reported)."""
    with psycopg.connect(url, autocommit=True) as conn:
        (read,) = conn.execute(
            "SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
            "WHERE relname = 'memory_chunks' AND indexrelname = %s",
            (vectors.index_name(MODEL),),
        ).fetchone() or (0,)
    return int(read)


async def test_a_crowded_big_owner_finds_its_nearest_through_the_index(
    iterative_database_url: str, tmp_path: Path
) -> None:
    url = iterative_database_url
    memory = await AsyncMemory.open(_settings(url, tmp_path))
    try:
        assert backend_of(memory).iterative_scans
        query, expected = await _crowded_store(memory)
        found, ranked_by = await _search_as_ana(memory, query)
    finally:
        await memory.close()  # its server processes end, and report what they read
    # Her own nearest memories, none of Ben's nor of the other tenant's Ana, and found by the
    # index scan itself (the planner walked the index, past the others' rows, for all of
    # hers), not by an exact ranking after it came back short.
    assert found[:NEAREST] == expected[:NEAREST]
    assert len(found) == PAGE and set(found) <= set(expected)
    assert ranked_by == "index"
    wait_until(lambda: _hnsw_tuples_read(url) >= BIG_OWNER, 10, "the search never read the index")
    # Where a plain scan of the index, filtered afterwards, finds none of hers.
    assert ("t1", "ana") not in _plain_scan_owners(url, query)


async def _ranked_without_iterative_scans(settings: Settings) -> None:
    """The crowded big owner on a store that does not use iterative scans: her page is ranked
    exactly from her nearest chunks."""
    memory = await AsyncMemory.open(settings)
    try:
        assert not backend_of(memory).iterative_scans
        query, expected = await _crowded_store(memory)
        found, ranked_by = await _search_as_ana(memory, query)
    finally:
        await memory.close()
    assert found == expected[:PAGE]
    assert ranked_by == "nearest_chunks"


async def test_without_iterative_scans_the_big_owner_is_ranked_exactly(
    database_url: str, tmp_path: Path
) -> None:
    await _ranked_without_iterative_scans(_settings(database_url, tmp_path))


async def test_iterative_scans_are_used_only_when_asked_for(
    iterative_database_url: str, tmp_path: Path
) -> None:
    # Off by default: their candidates held fewer of the exact nearest (docs/deployment.md).
    await _ranked_without_iterative_scans(
        _settings(iterative_database_url, tmp_path, iterative=False)
    )
    checks = await run_checks(
        _settings(iterative_database_url, tmp_path / "doctor", iterative=False)
    )
    (pgvector,) = [check for check in checks if check.name == "pgvector"]
    assert "with iterative index scans, not used" in pgvector.detail


async def test_the_doctor_says_whether_pgvector_scans_iteratively(
    iterative_database_url: str, database_url: str, tmp_path: Path
) -> None:
    details = {}
    for name, url in (("0.8", iterative_database_url), ("0.6", database_url)):
        checks = await run_checks(_settings(url, tmp_path / name))
        (pgvector,) = [check for check in checks if check.name == "pgvector"]
        assert pgvector.ok
        details[name] = pgvector.detail
    assert details["0.8"].startswith("version 0.8.5, with iterative index scans")
    assert re.match(r"version 0\.6\.\d+, without iterative index scans", details["0.6"])
