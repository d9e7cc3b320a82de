"""Facts as extra keys of search: a fact the query matches lifts the memory it was read from,
as one more candidate list; off unless asked for (MEMVAULT_GRAPH_FACT_KEYS or `fact_keys`).

The extractor is scripted (what a text claims is given per text), so the fact's words are
nowhere in its source memory's text: only the fact can bring that memory back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memvault import AsyncMemory
from memvault.graph import derive
from memvault.graph.claims import Extraction, FactClaim

SOURCE = "Sure, I'll tell you all about it on Friday."
CLAIM = FactClaim("Caroline", "works_for", "Caroline works for Zephyrion", object="Zephyrion")


@pytest.fixture
def claims(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Extraction]]:
    scripted: dict[str, Extraction] = {}

    async def scripted_extract(text: str, **_: Any) -> Extraction:
        return scripted.get(text, Extraction())

    monkeypatch.setattr(derive, "extract", scripted_extract)
    yield scripted


async def _store(memory: AsyncMemory, claims: dict[str, Extraction], user: str) -> str:
    claims[SOURCE] = Extraction(facts=[CLAIM])
    source = await memory.add(SOURCE, user_id=user, infer=True, wait=True)
    await memory.add("We went hiking in the Alps last summer.", user_id=user, infer=False)
    await memory.add("The quarterly report is due next week.", user_id=user, infer=False)
    return str(source.id)


async def test_a_fact_match_lifts_its_source_memory(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    source = await _store(memory, claims, "u")
    query = "Zephyrion employer"
    without = await memory.search(query, user_id="u", recipe="keyword", track_access=False)
    assert source not in [str(h.id) for h in without.results]
    lifted = await memory.search(
        query, user_id="u", recipe="keyword", fact_keys=True, track_access=False
    )
    assert [str(h.id) for h in lifted.results][:1] == [source]
    # The breakdown keeps the memory's own keyword score: the fact matched, not the memory.
    assert lifted.results[0].scores["keyword"] is None
    # Hybrid fuses the fact lists beside the memory lists, and the fact list lifts it too.
    hybrid = await memory.search(query, user_id="u", fact_keys=True, track_access=False)
    assert str(hybrid.results[0].id) == source


async def test_fact_keys_are_off_by_default_and_respect_the_filters(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    source = await _store(memory, claims, "u")
    default = await memory.search("Zephyrion", user_id="u", recipe="keyword", track_access=False)
    assert default.results == []
    # Another user's search never sees this user's facts.
    await memory.add("Nothing to see here.", user_id="other", infer=False)
    other = await memory.search(
        "Zephyrion", user_id="other", recipe="keyword", fact_keys=True, track_access=False
    )
    assert other.results == []
    # A filter the source memory fails drops it, as it would drop a memory matched directly.
    filtered = await memory.search(
        "Zephyrion",
        user_id="u",
        recipe="keyword",
        fact_keys=True,
        tags=["never-set"],
        track_access=False,
    )
    assert filtered.results == []
    kept = await memory.search(
        "Zephyrion", user_id="u", recipe="keyword", fact_keys=True, track_access=False
    )
    assert [str(h.id) for h in kept.results] == [source]


async def test_a_deleted_source_is_no_longer_lifted(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    source = await _store(memory, claims, "u")
    await memory.delete(source, user_id="u")
    after = await memory.search(
        "Zephyrion", user_id="u", recipe="keyword", fact_keys=True, track_access=False
    )
    assert after.results == []
