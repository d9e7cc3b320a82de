"""Back-pressure, not failure: many concurrent operations on one user queue for the pool and
all complete; a store that cannot serve within the deadline answers
StoreUnavailable, never a caller's pool exhausted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
from bench.concurrency import KINDS, mixed_operations, text

from memvault import AsyncMemory, AsyncMemoryClient, StoreUnavailable
from memvault.api import create_app
from memvault.config import Settings
from tests.serving import serving
from tests.waiting import wait_for

USER = "busy"


@pytest.fixture
async def hashed(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield memory
    await memory.close()


async def test_concurrent_deletes_of_one_user_all_complete(hashed: AsyncMemory) -> None:
    added = await hashed.add_many([{"content": text(i), "user_id": USER} for i in range(60)])
    assert len({a.id for a in added}) == 60
    outcomes = await asyncio.gather(
        *(hashed.delete(a.id, user_id=USER) for a in added), return_exceptions=True
    )
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    assert (await hashed.list(user_id=USER)).results == []


async def test_two_hundred_mixed_operations_on_one_user_have_no_errors(hashed: AsyncMemory) -> None:
    outcomes = await asyncio.gather(
        *await mixed_operations(hashed, 200, USER), return_exceptions=True
    )
    assert _failures(outcomes) == []


async def test_a_pool_of_two_connections_serves_two_hundred_at_once(
    make_settings: Callable[..., Settings],
) -> None:
    # With one connection and one of overflow, any operation that held a connection while it
    # waited for another would deadlock with a second doing the same: none does.
    settings = make_settings(embedding_provider="hash", pool_size=1, pool_timeout_s=20)
    async with AsyncMemory(settings) as memory:
        outcomes = await asyncio.gather(
            *await mixed_operations(memory, 200, USER), return_exceptions=True
        )
    assert _failures(outcomes) == []


async def test_work_beyond_the_pool_waits_its_deadline_then_is_store_unavailable(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(embedding_provider="hash", pool_size=1, pool_timeout_s=0.5)
    async with AsyncMemory(settings) as memory:
        ids = [(await memory.add(text(i), user_id=USER)).id for i in range(3)]
        # Another session locks two memories: their deletions wait on it, holding both
        # connections of the pool (one and one of overflow).
        with raw.transaction():
            raw.execute("SELECT 1 FROM memories WHERE id = ANY(%s) FOR UPDATE", [ids[:2]])
            deletions = [asyncio.create_task(memory.delete(i, user_id=USER)) for i in ids[:2]]

            def both_wait_on_the_lock() -> bool:
                waiting = (
                    "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> pg_backend_pid()"
                )
                row = raw.execute(waiting).fetchone()
                return row is not None and row[0] >= 2

            await wait_for(both_wait_on_the_lock, 30, "the deletions never waited on the lock")
            started = asyncio.get_running_loop().time()
            with pytest.raises(StoreUnavailable):
                await memory.get(ids[2], user_id=USER)
            assert asyncio.get_running_loop().time() - started >= 0.45
        # The lock gone, the queued deletions complete.
        await asyncio.gather(*deletions)
        assert [r.id for r in (await memory.list(user_id=USER)).results] == [ids[2]]


def _failures(outcomes: list[Any]) -> list[tuple[str, int, str]]:
    """Each failed operation's kind, place and error (the mix's n-th is ``KINDS[n % 6]``)."""
    return [
        (KINDS[n % len(KINDS)], n, repr(o))
        for n, o in enumerate(outcomes)
        if isinstance(o, BaseException)
    ]


async def test_two_hundred_at_once_over_http_with_the_default_rate_limit_have_no_errors(
    make_settings: Callable[..., Settings],
) -> None:
    # Over HTTP with the default limit (50 a second, bursts of 100): the server queues what
    # its pool cannot take at once, and a request the limit turns away is retried by the
    # client after its Retry-After (the retries have their own tests in test_client.py).
    defaults = Settings.model_fields
    settings = make_settings(
        embedding_provider="hash",
        rate_limit_per_s=defaults["rate_limit_per_s"].default,
        rate_limit_burst=defaults["rate_limit_burst"].default,
    )
    with serving(create_app(settings)) as url:
        async with AsyncMemoryClient(url) as client:
            outcomes = await asyncio.gather(
                *await mixed_operations(client, 200, USER),  # type: ignore[arg-type]
                return_exceptions=True,
            )
    assert _failures(outcomes) == []
