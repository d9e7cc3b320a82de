"""Where a tenant's and a user's data lives is one declared catalogue (db/catalogue.py): the
live schema has no table holding such data that it leaves out, deletion and export read it,
and nothing has to be imported for a deletion or the scheduler to know every store."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg
import pytest

from memvault.db import catalogue, portable
from memvault.db.tables import metadata
from memvault.lifecycle import deletion_steps


def _tables_holding_tenant_or_user_data(raw: psycopg.Connection[Any]) -> set[str]:
    """Every table of the live schema with a tenant_id or user_id column (partitions are
    their parent's)."""
    rows = raw.execute(
        """
        SELECT DISTINCT c.relname
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND NOT a.attisdropped AND a.attnum > 0
        WHERE n.nspname = current_schema()
          AND c.relkind IN ('r', 'p')
          AND NOT c.relispartition
          AND a.attname IN ('tenant_id', 'user_id')
        """
    ).fetchall()
    return {r[0] for r in rows}


def test_every_table_holding_a_tenants_or_users_data_is_in_the_catalogue(
    raw: psycopg.Connection[Any],
) -> None:
    holding = _tables_holding_tenant_or_user_data(raw)
    assert {"memories", "facts", "conversations", "api_keys", "audit_log"} <= holding
    named = {p.name for p in catalogue.CATALOGUE}
    assert holding - named == set()


def test_every_place_is_a_table_or_a_store_a_deletion_step_clears() -> None:
    names = [p.name for p in catalogue.CATALOGUE]
    assert len(names) == len(set(names))
    for place in catalogue.CATALOGUE:
        if place.erase == "outside":
            assert place.name in deletion_steps.OUTSIDE, place.name
        else:
            assert place.name in metadata.tables, place.name
        assert (place.kind is not None) == (place.export == "line"), place.name
        assert bool(place.why) == (place.export in ("rebuilt", "left_out")), place.name
    outside = {p.name for p in catalogue.places(erase="outside")}
    assert set(deletion_steps.OUTSIDE) == outside


def test_export_and_deletion_read_the_catalogue() -> None:
    exported = {t.name for t in portable.OWNED}
    assert exported == {p.name for p in catalogue.CATALOGUE if p.export in ("line", "inside")}
    steps = [name for name, _ in deletion_steps.in_store()]
    derived = [
        p.name for p in catalogue.CATALOGUE if p.erase in ("by_memory", "owned", "turns", "events")
    ]
    assert [s for s in steps if s != "graph"] == derived
    assert steps.count("graph") == 1


@pytest.mark.slow
def test_a_process_that_imports_only_deletion_and_the_jobs_knows_every_store_and_job() -> None:
    """Nothing joins by being imported elsewhere: the deletion and the scheduler's table are
    whole in a process that imported them alone."""
    script = (
        "from memvault.lifecycle import deletion_steps, jobs\n"
        "print(sorted(n for n, _ in deletion_steps.in_store() + deletion_steps.outside()))\n"
        "print(sorted(jobs.JOBS))\n"
        "print(sorted(jobs.CLEANUP_STEPS))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    stores, jobs, cleanup = (eval(line) for line in found)
    assert {"conversations", "working_memory_redis", "graph", "memory_chunks"} <= set(stores)
    assert {"cleanup", "patterns", "promote", "consolidate"} <= set(jobs)
    assert cleanup == [
        "conversations",
        "entities",
        "idempotent_writes",
        "merge_undos",
        "working_memory",
    ]
