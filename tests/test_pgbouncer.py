"""memvault through a real PgBouncer in transaction pooling mode, in front of the suite's
PostgreSQL: every transaction may land on another server connection, so nothing may be left on
one (role, tenant, prepared statements, session locks) and workers wake without LISTEN on it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memvault import Settings
from memvault.db.embedded import EmbeddedPostgres
from memvault.errors import ConfigurationError
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.debian import install_when_missing
from tests.processes import free_port
from tests.waiting import wait_until

# Fewer server connections than the app's pool: transactions of both tenants, the worker and
# the scheduler share them, so any state left on one would show up in another's transaction.
SERVER_CONNECTIONS = 3


def _pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer")
    if found is None and install_when_missing("pgbouncer", "/usr/sbin/pgbouncer"):
        found = "/usr/sbin/pgbouncer"
    assert found, "pgbouncer is needed (apt-get install pgbouncer)"
    return found


def _config(server: EmbeddedPostgres, workdir: Path, port: int) -> Path:
    (workdir / "users.txt").write_text('"postgres" ""\n')
    config = workdir / "pgbouncer.ini"
    config.write_text(
        f"""[databases]
* = host={server.socket_dir} port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {workdir / "users.txt"}
admin_users = postgres
pool_mode = transaction
default_pool_size = {SERVER_CONNECTIONS}
max_client_conn = 200
server_reset_query =
logfile = {workdir / "pgbouncer.log"}
pidfile = {workdir / "pgbouncer.pid"}
"""
    )
    return config


@pytest.fixture(scope="module")
def pgbouncer(pg_server: EmbeddedPostgres) -> Iterator[int]:
    """A PgBouncer (transaction mode) serving every database of the suite's server; its port."""
    binary = _pgbouncer_binary()
    # Outside pytest's tree (private to root): PgBouncer, not root, writes its log here.
    workdir = Path(tempfile.mkdtemp(prefix="memvault-test-pgbouncer-"))
    port = free_port()
    config = _config(pg_server, workdir, port)
    # PgBouncer will not run as root: as root it runs as the server's own user, who can
    # reach the server's socket directory.
    owner = Path(pg_server.socket_dir).owner()
    as_user = ["-u", owner] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(workdir, owner)
    with (workdir / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(
            [binary, *as_user, str(config)], stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        _wait_for(port, process, workdir)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_for(port: int, process: subprocess.Popen[bytes], workdir: Path) -> None:
    def accepts() -> bool:
        if process.poll() is not None:
            logs = [
                (workdir / n).read_text()
                for n in ("stderr.log", "pgbouncer.log")
                if (workdir / n).exists()
            ]
            raise AssertionError(f"PgBouncer did not start: {logs}")
        with psycopg.connect(_admin(port), autocommit=True):
            return True

    wait_until(
        accepts, 20, "PgBouncer did not accept a connection", ignore=(psycopg.OperationalError,)
    )


def _admin(port: int) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/pgbouncer"


def _admin_show(port: int, what: str) -> list[dict[str, Any]]:
    # The admin console speaks only the simple query protocol.
    with psycopg.connect(
        _admin(port), autocommit=True, cursor_factory=psycopg.ClientCursor
    ) as conn:
        cursor = conn.execute(f"SHOW {what}")
        names = [c.name for c in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture
def pooled_settings(
    make_settings: Callable[..., Settings], database_url: str, pgbouncer: int
) -> Settings:
    name = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
    return make_settings(
        database_url=f"postgresql://postgres@127.0.0.1:{pgbouncer}/{name}",
        database_pooler="transaction",
        database_direct_url=database_url,
        embedding_provider="hash",
        run_worker=True,
        worker_batch_wait_ms=0,
        pool_size=6,
    )


def _database_of(settings: Settings) -> str:
    assert settings.database_url is not None
    return str(
        psycopg.conninfo.conninfo_to_dict(settings.database_url.get_secret_value())["dbname"]
    )


async def test_a_workload_of_two_tenants_runs_through_pgbouncer_in_transaction_mode(
    pooled_settings: Settings, pgbouncer: int, raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(pooled_settings)
    acme, globex = memory.for_tenant("acme"), memory.for_tenant("globex")
    try:
        waited = await acme.add("Ada deploys on Fridays with a checklist", user_id="u", wait=True)
        queued = await acme.add(
            "Ada's pager rota changes every Monday", user_id="u", background=True
        )
        turns = await acme.add_messages(
            [{"role": "user", "content": "I moved to Lisbon in March"}], user_id="u", wait=True
        )
        # Both tenants at once, more transactions in flight than server connections.
        theirs = await asyncio.gather(
            *(globex.add(f"Globex secret plan number {i}", user_id="u") for i in range(6)),
            *(acme.search("checklist", user_id="u") for _ in range(6)),
        )
        settled = await acme.add("Ada's pager rota changes every Monday", user_id="u", wait=True)
        assert settled.id == queued.id  # the worker embedded it, woken without LISTEN here
        assert waited.embedded and all(t.embedded for t in turns)

        found = await acme.search("pager rota Monday", user_id="u")
        assert queued.id in [h.id for h in found.results]
        bundle = await acme.remember("Where do I live?", user_id="u")
        assert "Lisbon" in bundle.as_prompt()
        secrets = await acme.search("Globex secret plan", user_id="u")
        assert not {h.id for h in secrets.results} & {r.id for r in theirs[:6]}
        own = await globex.search("secret plan", user_id="u")
        assert {h.id for h in own.results} <= {r.id for r in theirs[:6]} and own.results
        # Row-level security holds: each transaction runs as the app role, whichever server
        # connection it got (PgBouncer connects as the owner, who would bypass the policies).
        async with backend_of(memory).engine.begin() as conn:
            who = await conn.exec_driver_sql("SELECT current_user, current_setting('jit')")
            assert who.one() == ("memvault_app", "off")
    finally:
        await memory.close()

    stats = {s["database"]: s for s in _admin_show(pgbouncer, "STATS")}
    assert stats[_database_of(pooled_settings)]["total_xact_count"] > 20
    pools = [
        p for p in _admin_show(pgbouncer, "POOLS") if p["database"] == _database_of(pooled_settings)
    ]
    assert pools and pools[0]["pool_mode"] == "transaction"
    # No lock of a scheduled job or a migration stayed behind on a pooled server connection.
    left = raw.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
        "WHERE l.locktype = 'advisory' AND d.datname = current_database()"
    ).fetchone()
    assert left == (0,)


async def test_a_transaction_pooler_without_a_direct_url_is_refused_with_what_to_set(
    pooled_settings: Settings,
) -> None:
    settings = pooled_settings.model_copy(update={"database_direct_url": None})
    with pytest.raises(ConfigurationError, match="MEMVAULT_DATABASE_DIRECT_URL"):
        await AsyncMemory.open(settings)
