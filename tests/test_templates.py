"""Ranking statements are built once per shape and reused: every search still ranks its own
owner's memories, through its own filters and words, on every ranking path."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import StatementError

from memvault import Settings
from memvault.db import templates, vectors
from memvault.service import AsyncMemory
from memvault.worker import Worker
from tests.conftest import backend_of

TEXTS = {
    ("ana", "work"): ["Ana ships the billing service on Fridays", "Ana reviews pull requests"],
    ("ana", "home"): ["Ana waters the tomato plants", "Ana bakes sourdough bread"],
    ("ben", "work"): ["Ben ships the search service on Mondays", "Ben writes design docs"],
    ("ben", "home"): ["Ben repairs his old bicycle", "Ben bakes rye bread"],
}


async def _stored(settings: Settings) -> AsyncMemory:
    memory = await AsyncMemory.open(settings)
    for (user, channel), texts in TEXTS.items():
        for text in texts:
            await memory.add(text, user_id=user, channel=channel)
    worker = Worker(backend_of(memory))
    while await worker.run_once():
        pass
    return memory


@pytest.mark.parametrize("path", ["exact", "looked up by id", "hnsw"])
async def test_reused_rankings_answer_each_search_with_its_own_values(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "looked up by id":
        monkeypatch.setattr(vectors, "LOOKUP_MIN_SCOPE", 0)
    exact_max = 0 if path == "hnsw" else 10_000
    memory = await _stored(
        make_settings(embedding_provider="local", search_exact_max_chunks=exact_max)
    )
    try:
        # The same shapes again and again (one channel filter, the same limit): only the
        # values change, and each answer must follow them.
        for _ in range(2):
            for (user, channel), texts in TEXTS.items():
                for recipe in ("vector", "keyword", "hybrid"):
                    found = await memory.search(
                        "who ships a service or bakes bread?",
                        user_id=user,
                        channel=channel,
                        recipe=recipe,
                        limit=5,
                    )
                    contents = {hit.content for hit in found.results}
                    assert contents and contents <= set(texts), (user, channel, recipe)
        other = await memory.for_tenant("another-org").search("bread", user_id="ana")
        assert other.results == []
    finally:
        await memory.close()


async def test_a_template_run_without_one_of_its_values_fails(
    make_settings: Callable[..., Settings],
) -> None:
    """A template keeps no value of its own: a missing one is an error, never the value an
    earlier search ran it with."""
    memory = await AsyncMemory.open(make_settings())
    try:
        built = templates.template(
            ("test", "missing value"),
            lambda: sa.select(sa.literal_column("1")).where(
                sa.literal("ana") == templates.param("user_id", type_=sa.Text())
            ),
        )
        async with backend_of(memory).engine.connect() as conn:
            assert (await conn.execute(built, {"user_id": "ana"})).scalar() == 1
            with pytest.raises(StatementError, match="user_id"):
                await conn.execute(built)
    finally:
        await memory.close()


def test_templates_are_kept_per_shape_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templates, "MAX_TEMPLATES", 3)
    built: list[int] = []

    def build(n: int) -> object:
        built.append(n)
        return object()

    first = templates.template(("bounded", 1), build, 1)
    assert templates.template(("bounded", 1), build, 1) is first and built == [1]
    for n in (2, 3, 4):
        templates.template(("bounded", n), build, n)
    templates.template(("bounded", 1), build, 1)  # the oldest shape was let go, built again
    assert built == [1, 2, 3, 4, 1]
