"""Reads from a real streaming replica (MEMVAULT_DATABASE_READ_URL): the suite's PostgreSQL
copied with pg_basebackup and started as its hot standby from the pgserver wheel's binaries.
Pausing the standby's replay makes what it serves visibly stale, so the tests can tell which
server answered a read."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cluster.standby import Standby
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from memvault.db.embedded import EmbeddedPostgres
from memvault.errors import ConfigurationError
from memvault.service import AsyncMemory
from tests.conftest import TEMPLATE, backend_of
from tests.waiting import wait_for


class Replicated:
    """A database of the suite's server and the server's hot standby."""

    def __init__(self, primary: EmbeddedPostgres, database: str, root: Path) -> None:
        self.primary = primary
        self.database = database
        self.standby = Standby(primary.socket_dir, root)

    @property
    def primary_url(self) -> str:
        return self.primary.admin_url(self.database)

    @property
    def replica_url(self) -> str:
        return self.standby.url(self.database)

    def on_replica(self, sql: str) -> Any:
        return self.standby.one(self.database, sql)


@pytest.fixture(scope="module")
def replicated(pg_server: EmbeddedPostgres) -> Iterator[Replicated]:
    """The suite's server as the primary (a database of this module's copied from the
    migrated template) and a standby of it, started once for the module."""
    root = Path(tempfile.mkdtemp(prefix="memvault-test-replica-"))
    root.chmod(0o755)  # the server's user reaches the standby's folders through it
    database = f"replicas_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{TEMPLATE}"')
    cluster = Replicated(pg_server, database, root)
    try:
        cluster.standby.copy()
        cluster.standby.start()
        yield cluster
        cluster.standby.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


@asynccontextmanager
async def replay_paused(replicated: Replicated, *stores: AsyncMemory) -> AsyncIterator[None]:
    """The standby keeps receiving WAL but replays (shows) none of it until the block ends;
    paused once each store has seen it caught up, so that each would read there."""
    for store in stores:
        reads = backend_of(store).reads
        assert reads is not None
        await wait_for(lambda r=reads: r.lag_s() < 1, 30, "the standby never caught up")
    replicated.on_replica("SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        replicated.on_replica("SELECT pg_wal_replay_resume()")


@pytest.fixture
def database_url(replicated: Replicated) -> str:
    """The suite's settings (``make_settings``), on the replicated database."""
    return replicated.primary_url


@pytest.fixture
def read_settings(
    make_settings: Callable[..., Settings], replicated: Replicated
) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_read_url": replicated.replica_url,
            "database_read_own_writes_wait_s": 0.2,
            "embedding_provider": "hash",
        }
        return make_settings(**{**values, **overrides})

    return build


@asynccontextmanager
async def opened(settings: Settings, tenant: str) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(settings, tenant_id=tenant)
    try:
        yield memory
    finally:
        await memory.close()


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


async def _seen(memory: AsyncMemory, token: str) -> dict[str, bool]:
    """Whether each routed read (search, list, remember()) shows the memory holding ``token``."""
    found = await memory.search(token, user_id="u", recipe="keyword")
    page = await memory.list(user_id="u")
    bundle = await memory.remember(token, user_id="u", include=["episodic"])
    return {
        "search": any(token in hit.content for hit in found.results),
        "list": any(token in record.content for record in page.results),
        "remember": token in bundle.as_prompt(),
    }


async def _seen_by_all(memory: AsyncMemory, token: str) -> bool:
    return all((await _seen(memory, token)).values())


async def test_reads_go_to_the_replica_and_a_writer_reads_its_own_writes(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """Two processes over one primary and its standby (replay paused): the writer's own reads
    show its acknowledged write; the other process, knowing nothing of it, reads the standby
    and does not see it yet — proof that its reads went there. Once replay resumes, it does."""
    tenant, token = _tenant(), f"zq{uuid.uuid4().hex[:10]}"
    lenient = read_settings(database_read_max_lag_s=600)
    async with (
        opened(lenient, tenant) as writer,
        opened(lenient, tenant) as other,
        replay_paused(replicated, writer, other),
    ):
        added = await writer.add(f"the launch code word is {token}", user_id="u", wait=True)
        assert added.embedded
        assert await _seen(writer, token) == {"search": True, "list": True, "remember": True}
        assert await _seen(other, token) == {"search": False, "list": False, "remember": False}
        # Not seen by the other process, but stored: its own read of the primary finds it.
        assert (await other.get(added.id, user_id="u")).content.endswith(token)

        replicated.on_replica("SELECT pg_wal_replay_resume()")
        await wait_for(lambda: _seen_by_all(other, token), 30, "the standby never caught up")


async def test_a_background_add_waited_for_is_read_by_its_writer(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """``async`` + ``wait``: the worker embeds it in a transaction of its own, after the
    writer's; the writer's next search still finds it with the standby's replay paused."""
    tenant, token = _tenant(), f"zq{uuid.uuid4().hex[:10]}"
    settings = read_settings(database_read_max_lag_s=600, run_worker=True)
    async with opened(settings, tenant) as writer, replay_paused(replicated, writer):
        added = await writer.add(
            f"the attic code word is {token}", user_id="u", background=True, wait=True
        )
        assert added.embedded
        found = await writer.search(token, user_id="u", recipe="vector")
        assert [hit.id for hit in found.results][:1] == [added.id]


async def test_a_replica_further_behind_than_the_bound_is_not_read(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """With replay paused, the standby falls behind the primary from the first write on; once
    it is further behind than MEMVAULT_DATABASE_READ_MAX_LAG_S, reads go to the primary and
    show the write, while the standby itself still has not replayed it."""
    tenant, token = _tenant(), f"zq{uuid.uuid4().hex[:10]}"
    async with (
        opened(read_settings(), tenant) as writer,
        opened(read_settings(database_read_max_lag_s=1), tenant) as reader,
        replay_paused(replicated, reader),
    ):
        await writer.add(f"the harbour code word is {token}", user_id="u", wait=True)
        await wait_for(
            lambda: _seen_by_all(reader, token), 30, "reads never left the lagging standby"
        )
        assert replicated.on_replica("SELECT pg_is_wal_replay_paused()") is True


async def test_replica_down_reads_fall_back_to_the_primary(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """The standby stopped under a running server: every read still answers, from the primary,
    through the library and over HTTP — no error reaches a caller."""
    tenant, token = _tenant(), f"zq{uuid.uuid4().hex[:10]}"
    settings = read_settings(database_read_max_lag_s=600)
    async with opened(settings, tenant) as memory:
        await memory.add(f"the garden code word is {token}", user_id="u", wait=True)
        replicated.standby.stop()
        try:
            assert await _seen(memory, token) == {"search": True, "list": True, "remember": True}
            with TestClient(create_app(settings), raise_server_exceptions=False) as client:
                listed = client.get("/v1/memories", params={"user_id": "u"})
                found = client.post("/v1/memories/search", json={"query": token, "user_id": "u"})
            assert listed.status_code == 200, listed.text
            assert found.status_code == 200, found.text
        finally:
            replicated.standby.start()


async def test_a_read_url_without_a_database_url_is_refused(tmp_path: Path) -> None:
    """The embedded server has no replicas: a read URL beside it is a mistake, said at once."""
    settings = Settings(
        database_read_url="postgresql://replica.internal/memvault", data_dir=tmp_path / "data"
    )
    with pytest.raises(ConfigurationError, match="MEMVAULT_DATABASE_READ_URL"):
        await AsyncMemory.open(settings)
