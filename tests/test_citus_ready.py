"""The schema stays distributable by tenant (Citus), read from the migrated database's catalog:
every key of a tenant's table holds ``tenant_id``, row-level policies hold no subquery, and no
setting has to outlive a transaction (Citus would not carry a session's settings to its
worker nodes). Citus itself is not run here: it is not installable on this machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg

SRC = Path(__file__).parents[1] / "src" / "memvault"

# Tenant tables a Citus deployment keeps whole (reference tables) instead of distributing them
# by tenant, each with why. Tables without a tenant_id column (encryption_keys, scheduled_runs,
# worker_heartbeats, embedding_cache, rate_limit_buckets, audit_settings) are reference tables
# by construction: no tenant's rows are in them.
REFERENCE_TABLES: dict[str, str] = {
    "api_keys": "authentication finds a key by its prefix before it knows the tenant, so the "
    "key's id and prefix are unique across tenants and it has no row-level policy (the service "
    "reads it only to authenticate or to manage one tenant's keys, filtering by tenant_id)",
}
# The one subquery a policy may hold: the setting read once per statement (an InitPlan)
# instead of once per row. It reads no table, so no shard is involved in it; a plain
# current_setting() measured 2-4x slower on a 10,000-row scan (bench/rls_policy.py), so the
# policies keep this form here and the Citus page gives the plain one to use there.
_SETTING_ONCE = re.compile(
    r"\(\s*SELECT current_setting\('memvault\.(tenant|all_tenants)'::text, true\)"
    r" AS current_setting\)"
)


def _tenant_tables(raw: psycopg.Connection[Any]) -> list[str]:
    """Every table of the schema with a tenant_id column (partitions answer for their parent)."""
    rows = raw.execute(
        """
        SELECT c.relname FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY 1
        """
    ).fetchall()
    return [r[0] for r in rows if r[0] not in REFERENCE_TABLES]


def _keys_without_tenant(raw: psycopg.Connection[Any], tables: list[str]) -> list[str]:
    """Primary keys, unique constraints and unique indexes that leave tenant_id out."""
    rows = raw.execute(
        """
        SELECT t.relname, i.relname, x.indisprimary
        FROM pg_index x
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indisunique AND t.relname = ANY(%s)
          AND NOT EXISTS (
            SELECT 1 FROM pg_attribute a
            WHERE a.attrelid = t.oid AND a.attname = 'tenant_id' AND a.attnum = ANY(x.indkey)
          )
        ORDER BY 1, 2
        """,
        (tables,),
    ).fetchall()
    return [
        f"{table}.{index}{' (primary key)' if primary else ''}" for table, index, primary in rows
    ]


def _foreign_keys_without_tenant(raw: psycopg.Connection[Any], tables: list[str]) -> list[str]:
    """Foreign keys between tenants' tables that do not match tenant_id to tenant_id."""
    rows = raw.execute(
        """
        SELECT c.conname, t.relname, r.relname,
          EXISTS (
            SELECT 1 FROM unnest(c.conkey, c.confkey) AS k(own, other)
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.own
            JOIN pg_attribute b ON b.attrelid = c.confrelid AND b.attnum = k.other
            WHERE a.attname = 'tenant_id' AND b.attname = 'tenant_id'
          )
        FROM pg_constraint c
        JOIN pg_class t ON t.oid = c.conrelid
        JOIN pg_class r ON r.oid = c.confrelid
        WHERE c.contype = 'f' AND t.relname = ANY(%s)
        ORDER BY 1
        """,
        (tables,),
    ).fetchall()
    return [
        f"{name}: {table} -> {referenced}"
        for name, table, referenced, matched in rows
        if not matched and referenced not in REFERENCE_TABLES
    ]


def test_every_tenant_table_has_tenant_id_in_every_key(raw: psycopg.Connection[Any]) -> None:
    tables = _tenant_tables(raw)
    assert {"memories", "memory_chunks", "facts", "conversations"} <= set(tables)
    assert _keys_without_tenant(raw, tables) == []
    assert _foreign_keys_without_tenant(raw, tables) == []


def test_row_level_policies_read_no_table(raw: psycopg.Connection[Any]) -> None:
    rows = raw.execute(
        """
        SELECT c.relname,
          coalesce(pg_get_expr(p.polqual, p.polrelid), '') || ' '
            || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '')
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
        """
    ).fetchall()
    assert sorted(t for t, _ in rows) == _tenant_tables(raw)  # one policy per tenant table
    assert all(_SETTING_ONCE.search(expr) for _, expr in rows)
    with_subquery = [
        t for t, expr in rows if re.search(r"\bselect\b", _SETTING_ONCE.sub("", expr), re.I)
    ]
    assert with_subquery == []


# A statement that sets a setting for the session: SET without LOCAL, or set_config(…, false).
_SESSION_SET = re.compile(r"""["'(]\s*SET\s+(?!LOCAL\b)[a-z_.]+\s*(=|TO\b)""")
_SET_CONFIG = re.compile(r"set_config\(([^()]*)\)", re.I)


def test_no_setting_outlives_its_transaction() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        for match in _SESSION_SET.finditer(text):
            found.append(f"{path.relative_to(SRC)}: {match.group(0)!r}")
        for match in _SET_CONFIG.finditer(text):
            if match.group(1).replace(" ", "").rsplit(",", 1)[-1].lower() != "true":
                found.append(f"{path.relative_to(SRC)}: {match.group(0)!r}")
    assert found == []
    # The checks do see what they look for.
    assert _SESSION_SET.search('"SET hnsw.ef_search = 40"')
    assert not _SESSION_SET.search('"SET LOCAL hnsw.ef_search = 40"')
    assert _SET_CONFIG.search("set_config('jit', 'off', false)")
