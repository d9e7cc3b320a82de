"""A hit's relevance: calibrated (0-1, comparable across queries), beside the rank score.

The rank score is relative (the top hit scores about 1.03 whatever the query), so on it alone
a caller cannot tell a match from the least bad of unrelated notes, nor ask for only what is
relevant (mem0's threshold, LangGraph's item score)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from fastapi.testclient import TestClient

from memvault import InvalidInput, Settings
from memvault.api import create_app
from memvault.models import SearchResult
from memvault.service import AsyncMemory
from tests.test_search import embed_all

NOTES = [
    "Erin's favourite drink is green tea",
    "Erin drives a red bicycle to work",
    "The quarterly report is due on Monday",
]
UNRELATED = "quantum chromodynamics lattice"
MATCHING = "what does Erin like to drink?"


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="local"))
    for note in NOTES:
        await opened.add(note, user_id="erin", infer=False)
    await embed_all(opened)
    yield opened
    await opened.close()


def _in_range(result: SearchResult) -> bool:
    return all(0.0 <= hit.relevance <= 1.0 for hit in result.results)


async def test_an_unrelated_query_has_low_relevance_and_a_matching_one_high(
    memory: AsyncMemory,
) -> None:
    unrelated = await memory.search(UNRELATED, user_id="erin")
    matching = await memory.search(MATCHING, user_id="erin")
    # The rank score cannot tell the two apart; relevance can.
    assert unrelated.results[0].score > 0.9 and matching.results[0].score > 0.9
    assert max(h.relevance for h in unrelated.results) < 0.3
    assert matching.results[0].content == NOTES[0]
    assert matching.results[0].relevance > 0.5
    assert _in_range(unrelated) and _in_range(matching)


async def test_relevance_falls_when_the_memory_is_rewritten_to_unrelated_text(
    memory: AsyncMemory,
) -> None:
    (before,) = [
        h for h in (await memory.search(MATCHING, user_id="erin")).results if h.content == NOTES[0]
    ]
    await memory.update(before.id, user_id="erin", content="The parking garage closes at midnight")
    await embed_all(memory)
    after = {h.id: h for h in (await memory.search(MATCHING, user_id="erin")).results}
    assert before.id in after
    assert after[before.id].relevance < before.relevance - 0.3
    assert after[before.id].relevance < 0.3


async def test_min_relevance_drops_hits_below_it_and_keeps_the_rank_order(
    memory: AsyncMemory,
) -> None:
    everything = await memory.search(MATCHING, user_id="erin", limit=10)
    floor = 0.3
    relevant = await memory.search(MATCHING, user_id="erin", limit=10, min_relevance=floor)
    kept = [h.id for h in everything.results if h.relevance >= floor]
    assert [h.id for h in relevant.results] == kept  # the same order, nothing reranked
    assert kept and len(kept) < len(everything.results)
    assert (await memory.search(UNRELATED, user_id="erin", min_relevance=floor)).results == []
    # The cut comes after the floor: a page of one is the best hit that passes.
    (one,) = (await memory.search(MATCHING, user_id="erin", limit=1, min_relevance=floor)).results
    assert one.id == kept[0]


async def test_min_relevance_is_validated(memory: AsyncMemory) -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(InvalidInput):
            await memory.search(MATCHING, user_id="erin", min_relevance=bad)
    assert (await memory.search(MATCHING, user_id="erin", min_relevance=1.0)).results == []
    assert len((await memory.search(MATCHING, user_id="erin", min_relevance=0)).results) == 3


@pytest.mark.parametrize("recipe", ["hybrid", "vector", "keyword", "recent"])
async def test_every_recipe_answers_relevance_in_range(memory: AsyncMemory, recipe: str) -> None:
    for query in (MATCHING, UNRELATED, "Erin", "report Monday"):
        result = await memory.search(query, user_id="erin", recipe=recipe, limit=10)
        assert _in_range(result), (recipe, query)


async def test_a_hit_found_by_its_words_alone_has_its_keyword_share(memory: AsyncMemory) -> None:
    """A memory not yet embedded has no similarity; its relevance is how much of the query's
    keyword evidence it holds, so it too falls when the words stop matching."""
    waiting = await memory.add("Ferdinand repairs harpsichords", user_id="erin", background=True)
    found = await memory.search("Ferdinand harpsichords", user_id="erin", recipe="keyword")
    (hit,) = [h for h in found.results if h.id == waiting.id]
    assert hit.similarity is None and hit.relevance > 0.5
    partial = await memory.search("Ferdinand violins", user_id="erin", recipe="keyword")
    (half,) = [h for h in partial.results if h.id == waiting.id]
    assert 0 < half.relevance < hit.relevance


def test_relevance_and_min_relevance_over_http(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(embedding_provider="hash", run_worker=True)
    with TestClient(create_app(settings)) as client:
        for note in NOTES:
            client.post("/v1/memories?wait=true", json={"content": note, "user_id": "erin"})
        body = {"query": "green tea drink", "user_id": "erin"}
        found = client.post("/v1/memories/search", json=body).json()["results"]
        assert found and all(0 <= r["relevance"] <= 1 for r in found)
        floor = found[0]["relevance"]
        top = client.post("/v1/memories/search", json={**body, "min_relevance": floor}).json()
        assert [r["id"] for r in top["results"]] == [
            r["id"] for r in found if r["relevance"] >= floor
        ]
        bad = client.post("/v1/memories/search", json={**body, "min_relevance": 2})
        assert bad.status_code == 422
