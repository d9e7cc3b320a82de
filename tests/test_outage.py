"""Faults from outside, on real processes: PostgreSQL stopped, frozen and restarted under a
running server, and servers and workers SIGKILLed under load. Nothing acknowledged is lost,
every outage answers 503 in the envelope, and memvault recovers without a restart."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import sqlalchemy.exc as sa_exc

from memvault import Settings, StoreUnavailable, WriteConflict
from memvault.db import engine
from memvault.db.driver_errors import store_errors
from memvault.errors import for_code
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.processes import Load, Postmaster, Process, Server, environment, eventually
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    """A data directory outside pytest's tree: pytest resets that tree's permissions to 0700
    whenever another session starts, and PostgreSQL runs as another user when we are root."""
    path = Path(tempfile.mkdtemp(prefix="memvault-faults-"))
    try:
        yield path / "data"
    finally:
        left = Postmaster(path / "data").pid()
        if left is not None:  # the test failed; don't leave its server behind as well
            os.kill(left, signal.SIGQUIT)
        shutil.rmtree(path, ignore_errors=True)


def _assert_store_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["code"] == "store_unavailable"
    assert int(answer.headers["retry-after"]) > 0
    assert "Traceback" not in answer.text and "SELECT" not in answer.text


def _all_memories(http: httpx.Client) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    cursor: str | None = None
    while True:
        params = {"user_id": "load", "limit": 100, **({"cursor": cursor} if cursor else {})}
        page = http.get("/v1/memories", params=params).json()
        found += page["results"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def test_postgres_stopped_and_frozen_under_load(tmp_path: Path, data: Path) -> None:
    server = Server(data, tmp_path / "server.log", request_timeout_s=3)
    pg = Postmaster(data)
    worker: Process | None = None
    # Closed however the test ends: a client left open warns when collected, failing
    # whichever test runs next in this process.
    http = httpx.Client(base_url=server.base, timeout=15)
    try:
        server.wait_ready()
        # A standalone worker beside the server's own: it must outlive the outage too.
        worker = Process(["worker"], environment(data), tmp_path / "worker.log")
        eventually(lambda: "Ctrl-C to stop" in worker.log.read_text(), 60, "the worker up")
        load = Load(server.base, "outage").start()
        eventually(lambda: len(load.acked) >= 5, 30, "adds before the outage")

        pg.stop()
        for answer in (
            http.post("/v1/memories", json={"content": "during", "user_id": "load"}),
            http.get("/v1/memories", params={"user_id": "load"}),
            http.post("/v1/memories/search", json={"query": "note", "user_id": "load"}),
        ):
            _assert_store_unavailable(answer)
        assert http.get("/metrics").status_code == 200
        eventually(  # the worker meets the outage too
            lambda: "retrying with backoff" in worker.log.read_text(), 30, "the worker's outage"
        )
        pg.start()

        # Recovery without restarting memvault: writes, reads and the worker all come back.
        def writes_again() -> bool:
            return (
                http.post("/v1/memories", json={"content": "after", "user_id": "load"}).status_code
                == 201
            )

        eventually(writes_again, 30, "writes after the restart")
        queued = http.post(
            "/v1/memories",
            params={"async": "true", "wait": "true"},
            json={"content": "embedded by the worker after the outage", "user_id": "load"},
        )
        assert queued.status_code == 201, queued.text
        # The wait lasts at most half the 3 s deadline, and a worker still in its backoff from
        # the outage may take longer on a loaded machine: it must come back and embed it.
        queued_id = queued.json()["id"]

        def embedded_by_the_worker() -> bool:
            found = http.get(f"/v1/memories/{queued_id}", params={"user_id": "load"})
            return found.status_code == 200 and found.json()["embedded"] is True

        eventually(embedded_by_the_worker, 60, "the worker embedding after the outage")
        eventually(lambda: http.get("/ready").status_code == 200, 30, "ready after the outage")
        assert worker.popen.poll() is None, worker.log.read_text()[-2000:]

        # Frozen: every process of the server stopped mid-flight. The scrape and the deadline
        # still answer at once; nothing waits for the cancel of a query the server never reads.
        frozen = pg.freeze()
        try:
            assert http.get("/metrics", timeout=5).status_code == 200
            # Answered by the 3 s deadline: a client that waits 10 s gets the answer.
            answer = http.post(
                "/v1/memories/search", json={"query": "note", "user_id": "load"}, timeout=10
            )
            assert answer.status_code == 503
            assert answer.json()["error"]["code"] in {"request_timeout", "store_unavailable"}
        finally:
            for proc in frozen:
                proc.resume()
        eventually(writes_again, 30, "writes after the thaw")

        load.stop()
        assert load.bodies == [] or all(
            '"store_unavailable"' in b or '"request_timeout"' in b for b in load.bodies
        )
        assert 500 not in load.statuses
        lost = [
            c
            for c, i in load.acked.items()
            if http.get(f"/v1/memories/{i}", params={"user_id": "load"}).status_code != 200
        ]
        assert lost == []
        assert worker.stop() == 0  # still running after both faults, and stops cleanly
    finally:
        http.close()
        if worker is not None and worker.popen.poll() is None:
            worker.kill()
        server.stop()
    eventually(lambda: pg.pid() is None, 30, "the embedded PostgreSQL stopped with the server")


def test_sigkills_under_load_lose_nothing_acknowledged(tmp_path: Path, data: Path) -> None:
    pg = Postmaster(data)
    acked: dict[str, str] = {}
    for round_ in range(3):
        server = Server(data, tmp_path / f"server{round_}.log", worker_lease_s=3)
        server.wait_ready()
        worker = Process(
            ["worker"], environment(data, worker_lease_s=3), tmp_path / f"worker{round_}.log"
        )
        loads = [
            Load(server.base, f"r{round_}single", background=True).start(),
            Load(server.base, f"r{round_}batch", background=True, batch=5).start(),
            Load(server.base, f"r{round_}inline").start(),
        ]
        eventually(lambda: sum(len(x.acked) for x in loads) >= 30, 60, "adds before the kill")  # noqa: B023
        server.kill()
        worker.kill()
        for load in loads:
            load.stop()
            assert 500 not in load.statuses, load.bodies
            acked.update(load.acked)
        assert pg.pid() is not None  # the postmaster outlives its owners' SIGKILL...

    server = Server(data, tmp_path / "final.log", worker_lease_s=3)
    http = httpx.Client(base_url=server.base, timeout=30)
    try:
        server.wait_ready()

        def settled() -> bool:
            stored = {m["id"]: m for m in _all_memories(http)}
            return all(i in stored and stored[i]["embedded"] for i in acked.values())

        eventually(settled, 120, "every acknowledged memory embedded")
        stored = _all_memories(http)
        assert {str(m["id"]) for m in stored} >= set(acked.values())  # 0 lost
        duplicates = [c for c, n in Counter(str(m["content"]) for m in stored).items() if n > 1]
        assert duplicates == []
        for status in ("queued", "processing"):
            jobs = http.get("/v1/admin/jobs", params={"status": status}).json()["results"]
            assert jobs == [], f"{len(jobs)} {status} jobs left"
        for content in list(acked)[:: max(len(acked) // 15, 1)]:
            token = content.split()[-1]
            hits = http.post(
                "/v1/memories/search",
                json={"query": token, "user_id": "load", "recipe": "keyword", "limit": 3},
            ).json()["results"]
            assert [h["content"] for h in hits][:1] == [content]
    finally:
        http.close()
        server.stop()
    # ...and stops with the last live one, dead owners notwithstanding.
    eventually(lambda: pg.pid() is None, 30, "no orphaned PostgreSQL")


async def test_pooled_connections_that_died_are_replaced_or_fail_once(
    make_settings: Callable[..., Settings],
    raw: psycopg.Connection[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server ends every session the pool holds (as a restart does). A connection idle
    longer than PING_AFTER_IDLE_S is pinged and replaced before use: the search succeeds. One
    used a moment before is handed out as it is: its statement fails (one 503), which
    invalidates the pool, and the next search succeeds."""
    memory = await AsyncMemory.open(
        make_settings(embedding_provider="hash", run_worker=False, embedding_cache_ttl_s=0)
    )

    others = (
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'"
    )

    def end_every_session() -> None:
        raw.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity {others}")
        # Termination is a signal: wait until the sessions are really gone (under load a
        # search could otherwise still find its connection alive).
        wait_until(
            lambda: (
                raw.execute(f"SELECT count(*) FROM pg_stat_activity {others}").fetchone() == (0,)
            ),
            10,
            "the sessions did not end",
        )

    try:
        await memory.add("I keep bees on the roof", user_id="u", infer=False)
        assert (await memory.search("bees", user_id="u")).results
        monkeypatch.setattr(engine, "PING_AFTER_IDLE_S", 0.05)
        end_every_session()
        await asyncio.sleep(0.2)  # idle past PING_AFTER_IDLE_S: the idle time is under test
        assert (await memory.search("bees", user_id="u")).results

        monkeypatch.setattr(engine, "PING_AFTER_IDLE_S", 3600.0)
        # The searches' audit rows and access counts are written in the background: written
        # now, so that no such write meets a dead connection first (which would invalidate the
        # pool before the search does, and the search would find fresh connections).
        backend = backend_of(memory)
        await backend.audit.flush()
        await backend.access.flush()
        end_every_session()
        with pytest.raises(StoreUnavailable):
            await memory.search("bees", user_id="u")
        assert (await memory.search("bees", user_id="u")).results
    finally:
        await memory.close()


def test_a_write_rolled_back_for_a_concurrent_one_is_a_write_conflict() -> None:
    """A deadlock or serialization failure is not an outage: the caller learns its work was
    rolled back and may retry it at once (a StoreUnavailable still, for code that retries
    those; 503 write_conflict over HTTP, which the client raises as WriteConflict)."""
    for rolled_back in (
        psycopg.errors.DeadlockDetected("deadlock detected"),
        psycopg.errors.SerializationFailure("could not serialize access"),
    ):
        with pytest.raises(WriteConflict) as caught, store_errors():
            raise sa_exc.OperationalError("SELECT 1", {}, rolled_back)
        assert isinstance(caught.value, StoreUnavailable)
        assert caught.value.status_code == 503 and caught.value.retry_after == 1.0
        assert "rolled it back" in str(caught.value) and "SELECT" not in str(caught.value)
    assert for_code("write_conflict") is WriteConflict
    with pytest.raises(StoreUnavailable) as outage, store_errors():
        raise sa_exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("refused"))
    assert type(outage.value) is StoreUnavailable
