"""The schema: migrations build exactly the tables the code declares, once, even when raced."""

from __future__ import annotations

import threading
import uuid

import psycopg
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import driver_url, head_revision, migrate
from memvault.db.tables import metadata


def test_migrations_match_the_declared_schema(database_url: str) -> None:
    engine = sa.create_engine(driver_url(database_url))
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
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
