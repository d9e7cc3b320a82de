"""The embedding job queue and workers on real PostgreSQL, against a real local HTTP provider."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from memvault import Settings
from memvault.admin import AsyncAdmin
from memvault.db.tenancy import tenant_scope
from memvault.service import AsyncMemory
from memvault.worker import Worker
from tests.conftest import KEY, backend_of
from tests.fakes import Script, embedding_server


@pytest.fixture
def provider() -> Iterator[tuple[str, Script]]:
    with embedding_server() as served:
        yield served


@pytest.fixture
def http_settings(
    make_settings: Callable[..., Settings], provider: tuple[str, Script]
) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "embedding_provider": "openai",
            "embedding_model": "fake-embed",
            "embedding_base_url": provider[0],
            "embedding_attempts": 1,
            "embedding_fallback": False,
            "embedding_cache_ttl_s": 0,
            "worker_backoff_base_s": 0,
            "worker_batch_wait_ms": 0,
        }
        values.update(overrides)
        return make_settings(**values)

    return build


@pytest.fixture
async def store(http_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(http_settings())
    yield memory
    await memory.close()


def worker_for(memory: AsyncMemory) -> Worker:
    b = backend_of(memory)
    return Worker(b)


def chunk_counts(raw: psycopg.Connection[Any]) -> dict[Any, int]:
    rows = raw.execute("SELECT memory_id, count(*) FROM memory_chunks GROUP BY memory_id")
    return dict(rows.fetchall())


async def test_a_batch_of_jobs_is_embedded_in_one_provider_call(
    store: AsyncMemory, provider: tuple[str, Script], raw: psycopg.Connection[Any]
) -> None:
    added = [
        await store.add(f"fact number {i}", user_id="u", background=True, infer=False)
        for i in range(10)
    ]
    assert await worker_for(store).run_once() == 10
    assert len(provider[1].requests) == 1 and len(provider[1].requests[0]) == 10
    for record in added:
        got = await store.get(record.id, user_id="u")
        assert got.embedded
    assert chunk_counts(raw) == {r.id: 1 for r in added}
    assert await AsyncAdmin.of(store).queue_counts() == {"done": 10}


async def test_failures_back_off_then_dead_letter_and_a_manual_retry_succeeds(
    http_settings: Callable[..., Settings],
    provider: tuple[str, Script],
    raw: psycopg.Connection[Any],
) -> None:
    memory = await AsyncMemory.open(http_settings(worker_max_attempts=3, worker_backoff_base_s=60))
    record = await memory.add("will fail for a while", user_id="u", background=True, infer=False)
    worker = worker_for(memory)
    provider[1].fail_next = 100
    assert await worker.run_once() == 1
    job = raw.execute(
        "SELECT status, attempts, available_at - now() FROM embedding_jobs"
    ).fetchone()
    assert job is not None and job[0] == "queued" and job[1] == 1
    assert job[2].total_seconds() > 50  # backed off by the base delay
    for _ in range(2):
        raw.execute("UPDATE embedding_jobs SET available_at = now()")
        await worker.run_once()
    (dead,) = await AsyncAdmin.of(memory).list_jobs(status="failed")
    assert dead.attempts == 3 and "503" in (dead.last_error or "")
    assert (await memory.get(record.id, user_id="u")).embedded is False
    assert [m.id for m in (await memory.list(user_id="u")).results] == [record.id]

    provider[1].fail_next = 0
    assert await AsyncAdmin.of(memory).retry_jobs() == 1
    assert await worker.run_once() == 1
    assert (await memory.get(record.id, user_id="u")).embedded is True
    await memory.close()


async def test_two_workers_never_process_the_same_job(
    store: AsyncMemory, provider: tuple[str, Script], raw: psycopg.Connection[Any]
) -> None:
    contents = [f"memory {i}" for i in range(60)]
    for text in contents:
        await store.add(text, user_id="u", background=True, infer=False)
    provider[1].hang_s = 0.05  # keep batches in flight at the same time

    async def drain(worker: Worker) -> int:
        total = 0
        while n := await worker.run_once():
            total += n
        return total

    settings = backend_of(store).settings.model_copy(update={"worker_batch_size": 7})
    b = backend_of(store)
    workers = [Worker(b, settings) for _ in range(2)]
    done = await asyncio.gather(*(drain(w) for w in workers))
    assert sum(done) == 60 and all(done)
    embedded_texts = [t for request in provider[1].requests for t in request]
    assert sorted(embedded_texts) == sorted(contents)
    assert set(chunk_counts(raw).values()) == {1}


async def test_content_updates_reembed_and_metadata_updates_do_not(
    store: AsyncMemory, provider: tuple[str, Script], raw: psycopg.Connection[Any]
) -> None:
    record = await store.add("Dana lives in Oslo", user_id="u", background=True, infer=False)
    worker = worker_for(store)
    await worker.run_once()
    before = raw.execute("SELECT embedding::text FROM memory_chunks").fetchall()

    await store.update(record.id, user_id="u", metadata={"checked": True})
    assert (await store.get(record.id, user_id="u")).embedded
    assert await worker.run_once() == 0

    await store.update(record.id, user_id="u", content="Dana lives in Bergen")
    assert (await store.get(record.id, user_id="u")).embedded is False
    assert await worker.run_once() == 1
    after = raw.execute("SELECT embedding::text FROM memory_chunks").fetchall()
    assert len(after) == 1 and after != before
    assert provider[1].requests[-1] == ["Dana lives in Bergen"]


async def test_an_edit_during_embedding_is_not_overwritten_by_stale_vectors(
    store: AsyncMemory, provider: tuple[str, Script], raw: psycopg.Connection[Any]
) -> None:
    record = await store.add("first version", user_id="u", background=True, infer=False)
    provider[1].hang_s = 0.3
    worker = worker_for(store)
    provider[1].received.clear()
    in_flight = asyncio.create_task(worker.run_once())
    assert await asyncio.to_thread(provider[1].received.wait, 10)  # the text is being embedded
    await store.update(record.id, user_id="u", content="second version")
    await in_flight
    assert (await store.get(record.id, user_id="u")).embedded is False
    provider[1].hang_s = 0
    await worker.run_once()
    assert provider[1].requests[-1] == ["second version"]
    assert (await store.get(record.id, user_id="u")).embedded is True


async def test_fallback_vectors_are_marked_and_redone_when_the_provider_returns(
    http_settings: Callable[..., Settings], provider: tuple[str, Script]
) -> None:
    memory = await AsyncMemory.open(http_settings(embedding_fallback=True))
    record = await memory.add(
        "embedded during an outage", user_id="u", background=True, infer=False
    )
    worker = worker_for(memory)
    provider[1].fail_next = 1
    await worker.run_once()
    raw_model = await _model_of(memory, record.id)
    assert raw_model == "local/all-MiniLM-L6-v2"
    degraded = await memory.search("outage", user_id="u", recipe="vector")
    assert degraded.results == []  # the provider is back: queries use it, and nothing matches yet

    assert await worker.sweep() == 1
    await worker.run_once()
    assert await _model_of(memory, record.id) == "openai/fake-embed"
    found = await memory.search("embedded during an outage", user_id="u")
    assert [h.id for h in found.results] == [record.id]
    await memory.close()


async def _model_of(memory: AsyncMemory, memory_id: Any) -> str | None:
    # A raw query runs under the row-level policies too: it must name its tenant.
    with tenant_scope(memory.tenant_id):
        async with backend_of(memory).engine.connect() as conn:
            return (
                await conn.execute(
                    sa.text("SELECT embedding_model FROM memories WHERE id = :i"),
                    {"i": memory_id},
                )
            ).scalar()


async def test_sweep_queues_memories_that_lost_their_job(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    record = await store.add("orphan", user_id="u", background=True, infer=False)
    raw.execute("DELETE FROM embedding_jobs")
    assert await worker_for(store).sweep() == 1
    assert await worker_for(store).run_once() == 1
    assert (await store.get(record.id, user_id="u")).embedded


@pytest.mark.slow
async def test_a_killed_worker_loses_nothing_and_leaves_no_duplicates(
    http_settings: Callable[..., Settings],
    provider: tuple[str, Script],
    database_url: str,
    raw: psycopg.Connection[Any],
) -> None:
    memory = await AsyncMemory.open(http_settings(worker_lease_s=1))
    ids = [
        (await memory.add(f"survivor {i}", user_id="u", background=True, infer=False)).id
        for i in range(20)
    ]
    provider[1].hang_s = 30  # the doomed worker's batch never comes back
    env = {
        **os.environ,
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_EMBEDDING_PROVIDER": "openai",
        "MEMVAULT_EMBEDDING_MODEL": "fake-embed",
        "MEMVAULT_EMBEDDING_BASE_URL": provider[0],
        "MEMVAULT_EMBEDDING_FALLBACK": "false",
        "MEMVAULT_EMBEDDING_CACHE_TTL_S": "0",
        "MEMVAULT_WORKER_LEASE_S": "1",
        "MEMVAULT_WORKER_BATCH_WAIT_MS": "0",
    }
    doomed = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert await asyncio.to_thread(provider[1].received.wait, 60)
    assert [sorted(r) for r in provider[1].requests] == [sorted(f"survivor {i}" for i in range(20))]
    doomed.send_signal(signal.SIGKILL)
    await asyncio.to_thread(doomed.wait)
    processing = raw.execute("SELECT count(*) FROM embedding_jobs WHERE status = 'processing'")
    assert processing.fetchone() == (20,)

    provider[1].hang_s = 0
    # The dead worker's lease runs out (moved to the past rather than waited for).
    raw.execute("UPDATE embedding_jobs SET locked_until = now() - interval '1 second'")
    assert await worker_for(memory).run_once() == 20
    for memory_id in ids:
        assert (await memory.get(memory_id, user_id="u")).embedded
    await memory.close()
    assert chunk_counts(raw) == dict.fromkeys(ids, 1)
    assert raw.execute("SELECT count(*) FROM memories").fetchone() == (20,)
