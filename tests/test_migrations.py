"""The schema: migrations build exactly the tables the code declares, once, even when raced."""

from __future__ import annotations

import threading
import uuid

import psycopg
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import create_engine, driver_url, head_revision, migrate
from memvault.db.tables import metadata
from memvault.db.vectors import ensure_index, index_name
from memvault.embedding.hashing import HashEmbedder


def _made_at_run_time(obj: object, name: str | None, kind: str, *_: object) -> bool:
    """False for each model's vector index: the store makes it when a model is first used
    (``db.vectors.ensure_index``), not a migration, and the test template already has some."""
    return not (kind == "index" and name is not None and name.startswith(HNSW_PREFIX))


HNSW_PREFIX = index_name("any").rsplit("_", 1)[0] + "_"


def test_migrations_match_the_declared_schema(database_url: str) -> None:
    engine = sa.create_engine(driver_url(database_url))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": _made_at_run_time})
        diff = compare_metadata(context, metadata)
    engine.dispose()
    assert diff == []


def test_concurrent_starts_migrate_once(pg_server: EmbeddedPostgres) -> None:
    name = f"race_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.admin_url(name)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            migrate(url)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    migrate(url)  # and again: idempotent
    assert errors == []
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (head_revision(),)
        ]
    with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


async def test_a_vector_index_a_failed_build_left_invalid_is_built_again(database_url: str) -> None:
    """A concurrent build that fails (a deadlock's victim, a cancelled start) leaves an invalid
    index that PostgreSQL maintains but never reads; it is not mistaken for a finished one."""
    name = index_name(HashEmbedder().model_id)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", (name,)
        )
    engine = create_engine(database_url, pool_size=1, as_app=False)
    try:
        await ensure_index(engine, HashEmbedder().model_id, 384)
    finally:
        await engine.dispose()
    with psycopg.connect(database_url, autocommit=True) as conn:
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass", (name,)
        ).fetchone()
    assert valid == (True,)
