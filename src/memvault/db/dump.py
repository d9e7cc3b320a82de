"""Backup and restore with PostgreSQL's own tools: the ``pg_dump`` / ``pg_restore`` that the
``pgserver`` wheel ships (version 16, able to dump any server up to 16), against the embedded
server's socket or an external server's URL.

The dump holds the schema, every row (sealed content, vectors, postings, history, audit) and
the vector indexes, so a restored store answers at once. It holds no key (see docs/lifecycle.md).
Unlogged tables (the embedding cache, rate-limit buckets) are left out: they are caches.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from memvault.db.tenancy import APP_ROLE
from memvault.errors import ConfigurationError


def _tool(name: str) -> str:
    import pgserver

    path = Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    if not path.exists():
        raise ConfigurationError(f"{name} is missing from the pgserver wheel ({path}).")
    return str(path)


def _run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tool = Path(args[0]).name
        raise ConfigurationError(
            f"{tool} failed (exit {done.returncode}): {done.stderr.strip()[-1500:]}",
            details={"tool": tool},
        )


def dump(url: str, file: Path) -> None:
    """A custom-format dump of the database at ``url`` (a libpq URL) into ``file``."""
    _run(
        [
            _tool("pg_dump"),
            "--format=custom",
            "--no-unlogged-table-data",
            f"--file={file}",
            f"--dbname={url}",
        ]
    )


def key_ids(file: Path) -> set[str]:
    """The ids of the keys the dump's content is sealed under: the keys its store registered
    (``encryption_keys``) and those that wrap its tenants' data keys (``tenant_keys``), read
    from the file alone (no server)."""
    done = subprocess.run(
        [
            _tool("pg_restore"),
            "--data-only",
            "--table=encryption_keys",
            "--table=tenant_keys",
            "--file=-",
            str(file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ConfigurationError(
            f"{file} is not a backup pg_restore can read: {done.stderr.strip()[-500:]}",
            details={"tool": "pg_restore"},
        )
    found: set[str] = set()
    column: int | None = None
    for line in done.stdout.splitlines():
        if line.startswith("COPY "):
            names = line[line.index("(") + 1 : line.index(")")].split(", ")
            wanted = "key_id" if "encryption_keys" in line.split(" (")[0] else "master_key_id"
            column = names.index(wanted)
        elif line == "\\.":
            column = None
        elif column is not None:
            found.add(line.split("\t")[column])
    return found


def has_memories(url: str) -> bool:
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT to_regclass('public.memories') IS NOT NULL").fetchone()
        if not found or not found[0]:
            return False
        return conn.execute("SELECT EXISTS (SELECT 1 FROM memories)").fetchone() == (True,)


def restore(url: str, file: Path) -> None:
    """Replace what the database at ``url`` holds with the dump in ``file``. The schema is
    emptied first (``pg_restore --clean`` cannot drop a partitioned table's indexes in the
    order it dumps them), then the dump loads in one transaction."""
    _ensure_app_role(url)
    _empty_schema(url)
    _run(
        [
            _tool("pg_restore"),
            "--no-owner",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={url}",
            str(file),
        ]
    )


def _empty_schema(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


def _ensure_app_role(url: str) -> None:
    """The grants and row-level policies in the dump name the app role; a fresh cluster has
    none yet (roles belong to the cluster, not to the dump's database)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"""
            DO $$
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                    CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS;
                END IF;
                IF NOT pg_has_role(current_user, '{APP_ROLE}', 'MEMBER') THEN
                    EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
                END IF;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
            END $$
            """
        )
