"""Back-pressure, not failure: many concurrent operations on one user queue for the pool and
all complete; a store that cannot serve within the deadline answers
StoreUnavailable, never a caller's pool exhausted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from bench.concurrency import mixed_operations, text

from memvault import AsyncMemory
from memvault.config import Settings

USER = "busy"


@pytest.fixture
async def hashed(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield memory
    await memory.close()


async def test_concurrent_deletes_of_one_user_all_complete(hashed: AsyncMemory) -> None:
    added = [await hashed.add(text(i), user_id=USER) for i in range(60)]
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
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
