"""One way to open either door: ``AsyncMemory(settings)`` is an async context manager as
``Memory(settings)`` is a context manager."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memvault import AsyncMemory, Memory
from memvault.config import Settings


async def test_async_with_async_memory_of_settings_opens_and_closes_the_store(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(embedding_provider="hash")
    async with AsyncMemory(settings) as memory:
        added = await memory.add("I keep bees on the roof", user_id="ada")
        assert (await memory.get(added.id, user_id="ada")).content == "I keep bees on the roof"
    with Memory(settings) as same:
        assert same.get(added.id, user_id="ada").content == "I keep bees on the roof"


async def test_an_unopened_async_memory_names_the_ways_to_open_it(
    make_settings: Callable[..., Settings],
) -> None:
    memory = AsyncMemory(make_settings(embedding_provider="hash"))
    with pytest.raises(RuntimeError, match=r"async with AsyncMemory\(settings\)"):
        await memory.add("too early", user_id="ada")
    await memory.close()  # nothing was opened: nothing to close, no error
