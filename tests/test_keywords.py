"""Keyword retrieval: BM25 on the blind index, recipes, and reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest

from memvault import Settings
from memvault.admin import AsyncAdmin
from memvault.db import keywords
from memvault.language.terms import terms
from memvault.pipeline.rules.dedup import _facts
from memvault.retrieval.search import rrf
from memvault.service import AsyncMemory
from memvault.text import STOP_WORDS
from tests.conftest import backend_of

DISTRACTORS = [
    "The office wifi is slow in the afternoon",
    "Wendy asked about the wifi at the new flat",
    "The router in the hallway needs a reboot now and then",
    "Wendy prefers ethernet cables over wireless networks",
]
RARE = "Wendy's home network is named quokkaflux"


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="local"))
    for text in [*DISTRACTORS, RARE]:
        await opened.add(text, user_id="wendy", infer=False)
    yield opened
    await opened.close()


def test_the_index_and_the_rules_drop_the_same_stop_words() -> None:
    for word in sorted(STOP_WORDS):
        assert terms(word) == {}, word
        assert _facts(word).content == frozenset(), word
    # Negations and amounts change what a memory says: both keep them.
    assert terms("not no never 3") == {"not": 1, "no": 1, "never": 1, "3": 1}


def test_terms_are_normalised_stemmed_and_stopword_free() -> None:
    assert terms("The RUNNING dogs ran to the Dog-park!") == {
        "run": 1,
        "dog": 2,
        "ran": 1,
        "park": 1,
    }
    assert terms("not 3 cats") == {"not": 1, "3": 1, "cat": 1}


async def test_an_exact_rare_term_ranks_first_by_keyword_and_in_hybrid(
    memory: AsyncMemory,
) -> None:
    keyword = await memory.search("quokkaflux", user_id="wendy", recipe="keyword")
    assert [h.content for h in keyword.results] == [RARE]
    assert keyword.results[0].scores["keyword"] > 0 and keyword.results[0].similarity is None
    hybrid = await memory.search("what is the network called? quokkaflux", user_id="wendy")
    assert hybrid.results[0].content == RARE and hybrid.recipe == "hybrid"
    vector = await memory.search("quokkaflux", user_id="wendy", recipe="vector")
    assert len(vector.results) == 5  # meaning ranks everything; keywords only what matches


async def test_bm25_prefers_rarer_terms_and_shorter_documents(memory: AsyncMemory) -> None:
    found = await memory.search("wendy wifi", user_id="wendy", recipe="keyword", limit=5)
    contents = [h.content for h in found.results]
    # "wifi" is in 2 of 5 memories, "wendy" in 3: the memory with both ranks first.
    assert contents[0] == "Wendy asked about the wifi at the new flat"
    assert set(contents) == {DISTRACTORS[0], DISTRACTORS[1], DISTRACTORS[3], RARE}


async def test_the_database_holds_no_plaintext_term(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    columns = raw.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'memory_terms' ORDER BY ordinal_position"
    ).fetchall()
    assert dict(columns)["term"] == "bigint"
    dump = raw.execute("SELECT string_agg(t::text, ' ') FROM memory_terms t").fetchone()
    assert dump is not None and "quokka" not in dump[0] and "wifi" not in dump[0]
    keyring = backend_of(memory).keys.current()
    stored = {row[0] for row in raw.execute("SELECT term FROM memory_terms")}
    assert keyring.term_id("quokkaflux") in stored


async def test_keyword_index_follows_updates_and_deletes(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    target = (await memory.search("quokkaflux", user_id="wendy", recipe="keyword")).results[0]
    await memory.update(target.id, user_id="wendy", content="Wendy's network is now emuwave")
    assert (await memory.search("quokkaflux", user_id="wendy", recipe="keyword")).results == []
    now = await memory.search("emuwave", user_id="wendy", recipe="keyword")
    assert [h.id for h in now.results] == [target.id]
    await memory.delete(target.id, user_id="wendy")
    assert raw.execute(
        "SELECT count(*) FROM memory_terms WHERE memory_id = %s", (target.id,)
    ).fetchone() == (0,)


async def test_keyword_search_is_scoped_to_the_owner(memory: AsyncMemory) -> None:
    await memory.for_tenant("elsewhere").add(RARE, user_id="wendy", infer=False)
    await memory.add(RARE + " too", user_id="someone-else", infer=False)
    found = await memory.search("quokkaflux", user_id="wendy", recipe="keyword")
    assert [h.content for h in found.results] == [RARE]


async def test_memories_a_metadata_value_sets_apart_are_scored_as_a_store_of_their_own(
    memory: AsyncMemory,
) -> None:
    # Many people under one owner (as the mem0 compatibility keeps them), one person's
    # memories told apart by metadata: a word everyone else says often must not make that
    # person's own use of it look common, nor the reverse.
    crowd = ["Wendy fixed the wifi again", "wifi down, Wendy on it", "Wendy: the wifi is back"]
    for text in [*DISTRACTORS, RARE]:
        await memory.add(text, user_id="everyone", metadata={"who": "wendy"}, infer=False)
    for text in crowd * 3:
        await memory.add(text, user_id="everyone", metadata={"who": "crowd"}, infer=False)
    alone = await memory.search("wendy wifi", user_id="wendy", recipe="keyword", limit=5)
    among = await memory.search(
        "wendy wifi", user_id="everyone", metadata={"who": "wendy"}, recipe="keyword", limit=5
    )
    assert [(h.content, h.scores["keyword"]) for h in among.results] == [
        (h.content, h.scores["keyword"]) for h in alone.results
    ]
    everyone = await memory.search("wendy wifi", user_id="everyone", recipe="keyword", limit=30)
    crowd_scored = {h.content: h.scores["keyword"] for h in everyone.results}
    mine = {h.content: h.scores["keyword"] for h in among.results}
    assert all(crowd_scored[text] != mine[text] for text in mine)  # the crowd's counts differ


def test_reciprocal_rank_fusion_orders_as_documented() -> None:
    fused = rrf(
        {"vector": ["a", "b", "c"], "keyword": ["c", "d"]}, {"vector": 1.0, "keyword": 1.0}, k=60
    )
    assert sorted(fused, key=lambda i: -fused[i]) == ["c", "a", "b", "d"]
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    only_keywords = rrf({"vector": ["a"], "keyword": ["d"]}, {"vector": 0.0, "keyword": 1.0}, 60)
    assert only_keywords["a"] == 0.0 and only_keywords["d"] == pytest.approx(1 / 61)


async def test_rotation_moves_the_keyword_index_to_the_new_key(
    make_settings: Callable[..., Settings],
) -> None:
    from memvault.crypto.envelope import generate_key

    old, new = generate_key(), generate_key()
    first = await AsyncMemory.open(make_settings(encryption_key=old, embedding_provider="hash"))
    await first.add(RARE, user_id="wendy", infer=False)
    await first.close()
    during = await AsyncMemory.open(
        make_settings(encryption_key=new, encryption_old_keys=old, embedding_provider="hash")
    )
    assert len((await during.search("quokkaflux", user_id="wendy", recipe="keyword")).results) == 1
    await AsyncAdmin.of(during).rotate_encryption_key()
    await during.close()
    after = await AsyncMemory.open(make_settings(encryption_key=new, embedding_provider="hash"))
    found = await after.search("quokkaflux", user_id="wendy", recipe="keyword")
    assert [h.content for h in found.results] == [RARE]
    await after.close()


async def test_ranking_blends_validity_importance_and_recency(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    from datetime import UTC, datetime, timedelta

    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    now = datetime.now(UTC)
    expired = await memory.add("Gate code for the depot is 4471", user_id="g", infer=False)
    valid = await memory.add(
        "Gate code for the depot is 4471", user_id="g", infer=False, app_id="other"
    )
    raw.execute(
        "UPDATE memories SET app_id = 'default', memory_type = 'temporal', "
        "valid_until = %s WHERE id = %s",
        (now - timedelta(days=1), expired.id),
    )
    found = await memory.search("depot gate code", user_id="g")
    assert [h.id for h in found.results] == [valid.id, expired.id]  # lower, never gone
    assert found.results[1].scores["validity"] == 0.9

    old = await memory.add("Parcel left at the depot", user_id="r", infer=False)
    new = await memory.add("Parcel left at the depot", user_id="r", infer=False, app_id="x")
    raw.execute(
        "UPDATE memories SET occurred_at = %s WHERE id = %s", (now - timedelta(days=60), old.id)
    )
    recent = await memory.search("parcel depot", user_id="r", recipe="recent")
    assert [h.id for h in recent.results] == [new.id, old.id]
    assert recent.results[0].scores["recency"] > 0.9 > recent.results[1].scores["recency"]
    await memory.close()


@pytest.mark.parametrize("channel", [None, "team"])
async def test_large_scopes_rank_from_remembered_statistics_with_the_same_answer(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, channel: str | None
) -> None:
    """A large scope's keyword list gives the statistics an earlier search read and looks only
    its best scores up by id; the answer is the one the whole ranking gives — also when a
    filter leaves the cut short while more memories matched (then it ranks the whole way)."""
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    rooms = ["attic", "garage", "kitchen", "hallway", "cellar", "study"]
    items: list[dict[str, Any]] = []
    for n in range(60):  # more than a candidate list (50) holds
        words = [f"router in the {rooms[n % 6]}", *["reboot"] * (n % 4), "mesh" * (n % 3 > 0)]
        items.append(
            {
                "content": f"Wendy note {n}: " + " ".join(words) + f" since {1900 + n}",
                "user_id": "wendy",
                # The team's notes hold only "router": the least matching, below the cut.
                "channel": "team" if n % 12 == 0 else "home",
                "infer": False,
            }
        )
    try:
        await memory.add_many(items)
        ask: dict[str, Any] = {"user_id": "wendy", "recipe": "keyword", "limit": 10}
        if channel:
            ask["channel"] = channel
        whole = await memory.search("router reboot mesh", **ask)
        stats = backend_of(memory).keyword_stats.get(("default", "wendy"))
        assert stats is not None and stats.n_docs == 60
        monkeypatch.setattr(keywords, "LOOKUP_MIN_SCOPE", 1)
        # The best 50 only (a whole list's worth): none of the team's.
        monkeypatch.setattr(keywords, "lookup_fetch", lambda limit: limit)
        cut = await memory.search("router reboot mesh", **ask)
        assert [(h.id, round(h.scores["keyword"], 9)) for h in cut.results] == [
            (h.id, round(h.scores["keyword"], 9)) for h in whole.results
        ]
        assert len(cut.results) == (10 if channel is None else 5)
    finally:
        await memory.close()
