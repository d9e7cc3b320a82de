"""Graph query latency: a depth-2 walk (``entity_graph``) of one user's graph of 10,000
entities and 50,000 facts, on a fresh, never-analysed store.

    .venv/bin/python bench/graph_query.py [--entities 10000] [--facts 50000] [--queries 300]

Starts a private PostgreSQL (autovacuum off: no statistics for the whole run), builds the
graph through the db layer in bulk (sealed names and claims, as the store writes them; 60% of
the facts point at another entity, the rest hold a literal; one functional fact in ten has
been superseded; 5,000 relations), then asks ``entity_graph(depth=2)`` (the walk plus
decrypting every node) from random starts through the service, and the walk alone. Prints
p50/p95/p99 in milliseconds. Target: depth-2 p95 <= 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg

from memvault import AsyncMemory
from memvault.config import Settings
from memvault.crypto.envelope import generate_key
from memvault.db import graph_admin, graph_walk
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.tenancy import tenant_scope
from memvault.graph import sealed

from _stats import summary_ms

TENANT, USER = "bench", "u"
PREDICATES = ("knows", "works_for", "lives_in", "uses_database", "part_of", "met")
BATCH = 2_000


def entity_rows(memory: AsyncMemory, n: int) -> list[dict[str, Any]]:
    keyring = memory._backend.keys.current()
    rows = []
    for i in range(n):
        entity_id = uuid4()
        rows.append(
            {
                "tenant_id": TENANT,
                "id": entity_id,
                "user_id": USER,
                "type": random.choice(("person", "organisation", "place", "project")),
                **sealed.entity_columns(keyring, TENANT, entity_id, f"Entity {i}", [], None),
            }
        )
    return rows


def fact_rows(memory: AsyncMemory, ids: list[UUID], n: int) -> list[dict[str, Any]]:
    keyring = memory._backend.keys.current()
    now = datetime.now(UTC)
    rows = []
    # Preferential attachment: a few hubs, a long tail, as real graphs have.
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(ids))]
    subjects = random.choices(ids, weights=weights, k=n)
    objects = random.choices(ids, weights=weights, k=n)
    for i in range(n):
        fact_id = uuid4()
        predicate = random.choice(PREDICATES)
        to_entity = random.random() < 0.6
        value = None if to_entity else f"value {i}"
        superseded = random.random() < 0.1
        rows.append(
            {
                "tenant_id": TENANT,
                "id": fact_id,
                "user_id": USER,
                "subject_id": subjects[i],
                "predicate": predicate,
                "object_id": objects[i] if to_entity else None,
                **sealed.fact_columns(keyring, TENANT, fact_id, f"claim {i}", value),
                "confidence": 0.95,
                "valid_from": now - timedelta(days=400),
                "valid_until": now - timedelta(days=10) if superseded else None,
                "recorded_at": now - timedelta(days=400),
                "superseded_at": now - timedelta(days=10) if superseded else None,
            }
        )
    return rows


def relation_rows(ids: list[UUID], n: int) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": TENANT,
            "id": uuid4(),
            "user_id": USER,
            "source_id": random.choice(ids),
            "type": random.choice(("RELATED_TO", "PART_OF", "KNOWS")),
            "target_id": random.choice(ids),
        }
        for _ in range(n)
    ]


async def build(memory: AsyncMemory, n_entities: int, n_facts: int) -> list[UUID]:
    started = time.perf_counter()
    entities = entity_rows(memory, n_entities)
    ids = [e["id"] for e in entities]
    facts = fact_rows(memory, ids, n_facts)
    with tenant_scope(TENANT):
        for table, rows in (
            ("entities", entities),
            ("facts", facts),
            ("relations", relation_rows(ids, n_entities // 2)),
        ):
            for start in range(0, len(rows), BATCH):
                async with memory._backend.engine.begin() as conn:
                    await graph_admin.insert_many(conn, table, rows[start : start + BATCH])
    print(f"built {n_entities} entities, {n_facts} facts in {time.perf_counter() - started:.1f} s")
    return ids


async def measure(memory: AsyncMemory, ids: list[UUID], queries: int, depth: int) -> None:
    starts = random.sample(ids, min(queries, len(ids)))
    settings = memory._backend.settings
    for entity_id in starts[:20]:  # warm the pool and the caches, not measured
        await memory.entity_graph(entity_id, user_id=USER, depth=depth)
    service: list[float] = []
    walk: list[float] = []
    sizes: list[int] = []
    for entity_id in starts:
        began = time.perf_counter()
        view = await memory.entity_graph(entity_id, user_id=USER, depth=depth)
        service.append(time.perf_counter() - began)
        sizes.append(len(view.nodes))
        with tenant_scope(TENANT):
            async with memory._backend.engine.connect() as conn:
                began = time.perf_counter()
                await graph_walk.walk(
                    conn,
                    TENANT,
                    USER,
                    entity_id,
                    depth=depth,
                    now=datetime.now(UTC),
                    fanout=settings.graph_fanout,
                    max_nodes=settings.graph_max_nodes,
                    max_edges=settings.graph_max_edges,
                )
                walk.append(time.perf_counter() - began)
    for name, samples in (("entity_graph", service), ("walk (SQL only)", walk)):
        s = summary_ms(samples)
        print(
            f"depth {depth} {name:16s} p50 {s['p50']:6.2f} ms  p95 {s['p95']:6.2f} ms  "
            f"p99 {s['p99']:6.2f} ms  ({len(samples)} queries)"
        )
    sizes.sort()
    print(f"depth {depth} nodes returned: median {sizes[len(sizes) // 2]}, max {sizes[-1]}")


async def main(args: argparse.Namespace) -> None:
    random.seed(13)
    with tempfile.TemporaryDirectory() as tmp:
        pg = EmbeddedPostgres(Path(tmp) / "pg")
        pg.start()
        try:
            with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET autovacuum = off")
                conn.execute("SELECT pg_reload_conf()")
                conn.execute('CREATE DATABASE "graph"')
            settings = Settings(
                database_url=pg.admin_url("graph"),
                encryption_key=generate_key(),
                data_dir=Path(tmp) / "data",
                embedding_provider="hash",
                analyze_after_rows=0,
                run_worker=False,
            )
            memory = (await AsyncMemory.open(settings)).for_tenant(TENANT)
            try:
                ids = await build(memory, args.entities, args.facts)
                for depth in (2, 3):
                    await measure(memory, ids, args.queries, depth)
            finally:
                await memory.close()
        finally:
            pg.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    sys.exit(asyncio.run(main(parser.parse_args())))
