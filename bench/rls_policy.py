"""The row-level policy's two forms side by side (docs/cluster.md#citus): the setting read in a
scalar subquery (once per statement, what memvault's migrations create) or plainly (once per
row, the form a Citus deployment may need).

    .venv/bin/python bench/rls_policy.py [--rows 100000] [--users 10] [--runs 15]

One private PostgreSQL 16 (the embedded one); two tables with the same rows, one per policy,
each with an index on (tenant_id, user_id); as a role the policies apply to, one user's rows
(rows / users of them) counted per run, the two tables in turn, twice. Prints the median and
p95 per table and round.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psycopg

from memvault.db.embedded import EmbeddedPostgres

POLICIES = {
    "subquery": "(SELECT current_setting('x.all', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('x.tenant', true))",
    "plain": "current_setting('x.all', true) = 'on' "
    "OR tenant_id = current_setting('x.tenant', true)",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    server = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="bench-rls-")) / "data")
    server.start()
    try:
        with psycopg.connect(server.admin_url(), autocommit=True) as conn:
            for name, policy in POLICIES.items():
                _table(conn, name, policy, args.rows, args.users)
            conn.execute("SET ROLE bench_app")
            for round_ in (1, 2):
                for name in POLICIES:
                    times = _runs(conn, name, args.runs)
                    p95 = statistics.quantiles(times, n=20)[-1]
                    print(
                        f"round {round_} {name:9s} median {statistics.median(times):.2f} ms"
                        f"  p95 {p95:.2f} ms  ({args.rows // args.users} rows per count)"
                    )
    finally:
        server.stop()


def _table(conn: psycopg.Connection[object], name: str, policy: str, rows: int, users: int) -> None:
    conn.execute(
        "DO $$ BEGIN CREATE ROLE bench_app NOLOGIN; "
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$"
    )
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {name} (tenant_id text, user_id text, x int)")
    conn.execute(
        f"INSERT INTO {name} SELECT 'a', 'u' || (i % {users}), i FROM generate_series(1, {rows}) i"
    )
    conn.execute(f"CREATE INDEX ON {name} (tenant_id, user_id)")
    conn.execute(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
    conn.execute(f"CREATE POLICY p ON {name} TO bench_app USING ({policy})")
    conn.execute(f"GRANT SELECT ON {name} TO bench_app")
    conn.execute(f"ANALYZE {name}")


def _runs(conn: psycopg.Connection[object], name: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with conn.transaction():
            conn.execute(
                "SELECT set_config('x.tenant', 'a', true), set_config('x.all', 'off', true)"
            )
            started = time.perf_counter()
            conn.execute(f"SELECT count(*) FROM {name} WHERE tenant_id = 'a' AND user_id = 'u3'")
            times.append((time.perf_counter() - started) * 1000)
    return times


if __name__ == "__main__":
    main()
