"""remember(): every kind recalled in a channel and _global, merged by weights that are data,
diversified, and cut to a token budget of the model's tokenizer."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import AsyncMemory, InvalidInput
from memvault.cognitive.bundle import (
    BundleDiagnostics,
    BundleItem,
    MemoryBundle,
    counted_together,
    diversify,
    fit,
    weighted,
)
from memvault.cognitive.kinds import Goal, Profile
from memvault.retrieval.recency import recency
from tests.conftest import backend_of


async def _populate(memory: AsyncMemory) -> str:
    convo = await memory.start_conversation(user_id="ann", channel="proj")
    await memory.add_turns(
        convo.id,
        [
            {"role": "user", "content": "The staging database runs on port 5433"},
            {"role": "assistant", "content": "Noted: staging PostgreSQL listens on 5433"},
        ],
        user_id="ann",
        wait=True,
    )
    home = await memory.start_conversation(user_id="ann")
    await memory.add_turns(
        home.id,
        [{"role": "user", "content": "My database backups run nightly at 2am"}],
        user_id="ann",
        wait=True,
    )
    elsewhere = await memory.start_conversation(user_id="ann", channel="other")
    await memory.add_turns(
        elsewhere.id,
        [{"role": "user", "content": "The other database lives on port 6000"}],
        user_id="ann",
        wait=True,
    )
    await memory.learn_strategy(
        "connect to a database and run a migration",
        user_id="ann",
        tool_sequence=["psql", "alembic"],
        channel="proj",
    )
    await memory.add_goal("migrate staging to PostgreSQL 16", user_id="ann", channel="proj")
    await memory.add_goal("learn Portuguese", user_id="ann", channel="other")
    await memory.update_profile(user_id="ann", communication_style="terse", expertise=["sql"])
    await memory.set_context(str(convo.id), "ticket", "OPS-42", user_id="ann", channel="proj")
    return str(convo.id)


async def test_remember_brings_every_kind_from_the_channel_and_global(memory: AsyncMemory) -> None:
    convo = await _populate(memory)
    bundle = await memory.remember(
        "which port does the database use?", user_id="ann", channel="proj", conversation_id=convo
    )
    turns = {i.content: i.channel for i in bundle.episodic}
    assert turns["My database backups run nightly at 2am"] == "_global"
    assert "The other database lives on port 6000" not in turns
    # This session's turns are under "This session", not recalled a second time.
    assert "The staging database runs on port 5433" not in turns
    assert bundle.working is not None
    assert bundle.working.turns[0]["content"] == "The staging database runs on port 5433"
    assert [s.detail["tool_sequence"] for s in bundle.procedural] == [["psql", "alembic"]]
    assert [g.description for g in bundle.goals] == ["migrate staging to PostgreSQL 16"]
    assert bundle.profile is not None and bundle.profile.communication_style == "terse"
    assert bundle.working is not None and bundle.working.values == {"ticket": "OPS-42"}
    assert {i.channel for i in bundle.semantic} <= {"proj", "_global"}
    assert bundle.channels == ["proj", "_global"]
    assert set(bundle.diagnostics.timings_ms) >= {
        "episodic",
        "procedural",
        "semantic",
        "goals",
        "profile",
        "working",
        "total",
    }
    prompt = bundle.as_prompt()
    for text in (
        "## Profile",
        "style: terse",
        "## Active goals",
        "OPS-42",
        "port 5433",
        "connect to a database and run a migration: 1. psql 2. alembic",
    ):
        assert text in prompt
    assert bundle.tokens == _tokens(memory, prompt) <= bundle.budget_tokens
    # Recalled memories count as accessed, in the background.
    await backend_of(memory).access.flush()
    record = await memory.get(bundle.episodic[0].id, user_id="ann")
    assert record.access_count == 1


async def test_include_limits_the_kinds(memory: AsyncMemory) -> None:
    await _populate(memory)
    bundle = await memory.remember(
        "database", user_id="ann", channel="proj", include=["goals", "profile"]
    )
    assert bundle.episodic == [] and bundle.procedural == [] and bundle.goals
    assert set(bundle.diagnostics.timings_ms) == {"goals", "profile", "budget", "total"}
    with pytest.raises(InvalidInput):
        await memory.remember("database", user_id="ann", include=["dreams"])
    with pytest.raises(InvalidInput):
        await memory.remember("database", user_id="ann", weights={"episodic": -1})


@pytest.mark.parametrize("budget", [16, 40, 80, 160, 400])
async def test_the_budget_is_honoured_exactly(memory: AsyncMemory, budget: int) -> None:
    convo = await _populate(memory)
    bundle = await memory.remember(
        "database port", user_id="ann", channel="proj", conversation_id=convo, budget_tokens=budget
    )
    assert bundle.tokens == _tokens(memory, bundle.as_prompt()) <= budget
    unbounded = await memory.remember(
        "database port", user_id="ann", channel="proj", conversation_id=convo, budget_tokens=5000
    )
    if unbounded.tokens > budget:
        assert bundle.diagnostics.budget_dropped > 0
        assert budget - bundle.tokens < 40  # nothing small enough was left out for no reason
    # Asked again, the lines' counts come from what earlier bundles counted: the same cut.
    again = await memory.remember(
        "database port", user_id="ann", channel="proj", conversation_id=convo, budget_tokens=budget
    )
    assert again.tokens == bundle.tokens == _tokens(memory, again.as_prompt()) <= budget
    assert again.as_prompt() == bundle.as_prompt()


def test_counts_remembered_by_digest_are_the_counts_of_the_texts() -> None:
    def spans(text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]

    known: dict[bytes, int] = {}
    texts = ["a b c", "one", "a b c", "x " * 400, "", "two words"]
    counted = counted_together(spans, known)
    assert counted(texts) == [3, 1, 3, 400, 0, 2] == counted_together(spans)(texts)
    assert len(known) == 5 and not any(t.encode() in known for t in texts)
    assert counted(["one", "three more words"]) == [1, 3]  # one known, one new


async def _graph(memory: AsyncMemory) -> None:
    await memory.add_fact(
        "staging database", "listens_on", value="port 5433", user_id="ann", channel="proj"
    )
    await memory.add_fact("staging database", "hosted_by", object="Hetzner", user_id="ann")
    await memory.add_fact(
        "other database", "listens_on", value="port 6000", user_id="ann", channel="other"
    )


async def test_facts_and_entities_come_back_scored_from_the_channel_and_global(
    memory: AsyncMemory,
) -> None:
    await _graph(memory)
    bundle = await memory.remember(
        "staging database port", user_id="ann", channel="proj", include=["facts", "entities"]
    )
    facts = {i.content: i for i in bundle.facts}
    assert "staging database listens on port 5433" in {c.replace("_", " ") for c in facts}
    assert {i.channel for i in bundle.facts} <= {"proj", "_global"}
    assert {i.channel for i in bundle.semantic} >= {"proj"}
    assert not any("6000" in c for c in facts)
    # Two hops: Hetzner is reached through the staging database the query names.
    assert any("Hetzner" in c for c in facts)
    assert any(i.content.startswith("staging database") for i in bundle.entities)
    assert not any(i.content.startswith("other database") for i in bundle.entities)
    for item in bundle.semantic:
        assert item.scores["weight"] == {"facts": 0.25, "entities": 0.20}[item.kind]
        assert 0 <= item.scores["relevance"] <= 1
    prompt = bundle.as_prompt()
    assert "- [fact, proj" in prompt and "- [entity, " in prompt
    assert bundle.tokens == _tokens(memory, prompt) <= bundle.budget_tokens
    assert bundle.diagnostics.candidates["semantic"] == len(bundle.semantic)


@pytest.mark.parametrize("budget", [16, 30, 60])
async def test_facts_and_entities_fit_the_budget_exactly(memory: AsyncMemory, budget: int) -> None:
    await _graph(memory)
    bundle = await memory.remember(
        "staging database port", user_id="ann", channel="proj", budget_tokens=budget
    )
    assert bundle.tokens == _tokens(memory, bundle.as_prompt()) <= budget
    unbounded = await memory.remember(
        "staging database port", user_id="ann", channel="proj", budget_tokens=5000
    )
    assert unbounded.facts and unbounded.entities
    if unbounded.tokens > budget:
        assert bundle.diagnostics.budget_dropped > 0
        assert len(bundle.semantic) < len(unbounded.semantic)


async def test_the_time_window_bounds_episodic_recall(memory: AsyncMemory) -> None:
    convo = await memory.start_conversation(user_id="ann")
    old = datetime(2024, 1, 5, tzinfo=UTC)
    await memory.add_turns(
        convo.id,
        [{"role": "user", "content": "the database was down"}],
        user_id="ann",
        occurred_at=old,
        wait=True,
    )
    await memory.add_turns(
        convo.id, [{"role": "user", "content": "the database is back"}], user_id="ann", wait=True
    )
    bundle = await memory.remember(
        "database",
        user_id="ann",
        time_window={"after": old - timedelta(days=1), "before": old + timedelta(days=1)},
    )
    assert [i.content for i in bundle.episodic] == ["the database was down"]


async def test_counting_texts_together_counts_each_as_alone(memory: AsyncMemory) -> None:
    spans = backend_of(memory).embeddings.primary.tokenizer().spans
    texts = [
        "## Relevant memories",
        "- [turn, proj 2026-01-02] The staging database runs on port 5433",
        "\n  source: I live in München — and I work for Acme, Inc.!",
        "user: naïve café façade 東京 😀 x" * 40,  # longer than one batch
        '- [tool book_hotel succeeded 2026-11-27 14:02]: {"hotel": "Memmo Alfama"}',
        "a",
    ]
    assert counted_together(spans)(texts) == [len(spans(t)) for t in texts]
    assert counted_together(spans)([]) == []


def _tokens(memory: AsyncMemory, text: str) -> int:
    return len(backend_of(memory).embeddings.primary.tokenizer().spans(text))


# --- the pure parts ------------------------------------------------------------------------------

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WEIGHTS = {"episodic": 0.30, "facts": 0.25, "entities": 0.20, "procedural": 0.15, "recency": 0.10}


def _item(ident: str, score: float, conversation: str | None = None) -> BundleItem:
    return BundleItem(
        kind="episodic",
        id=ident,
        channel="_global",
        content=f"memory {ident}",
        score=score,
        scores={},
        conversation_id=conversation,
    )


def test_scores_are_the_weighted_sum_of_relevance_and_recency() -> None:
    fresh = recency(NOW - timedelta(days=30), NOW, 30)
    assert fresh == pytest.approx(0.5)
    assert recency(None, NOW, 30) == 0 and recency(NOW + timedelta(days=1), NOW, 30) == 1
    score, parts = weighted("episodic", 0.8, fresh, WEIGHTS)
    assert score == pytest.approx(0.30 * 0.8 + 0.10 * 0.5)
    assert parts == {"relevance": 0.8, "recency": 0.5, "weight": 0.30}
    # The weights are data: the same evidence ranks differently under other weights.
    a, _ = weighted("episodic", 1.0, 0.0, WEIGHTS)
    b, _ = weighted("procedural", 1.0, 1.0, WEIGHTS)
    assert a > b
    a, _ = weighted("episodic", 1.0, 0.0, {**WEIGHTS, "procedural": 0.5})
    b, _ = weighted("procedural", 1.0, 1.0, {**WEIGHTS, "procedural": 0.5})
    assert b > a


def test_diversity_demotes_items_past_a_conversations_share() -> None:
    items = [_item(f"a{n}", 1 - n / 10, "A") for n in range(5)] + [
        _item("b0", 0.5, "B"),
        _item("x", 0.1),
    ]
    reranked, demoted = diversify(items, 2)
    assert demoted == 3 and len(reranked) == len(items)  # a rerank: nothing is lost
    assert [i.id for i in reranked] == ["a0", "a1", "b0", "a2", "a3", "a4", "x"]
    assert reranked[3].score == pytest.approx(0.8 * 0.5)
    assert reranked[3].scores["diversity"] == 0.5


def test_fit_keeps_context_first_then_the_best_items_whole() -> None:
    goal = Goal(
        id="00000000-0000-0000-0000-000000000001",
        user_id="u",
        channel="_global",
        description="ship it",
        priority=5,
        status="active",
        deadline=None,
        parent_id=None,
        blocked_by=[],
        result=None,
        created_at=NOW,
        completed_at=None,
    )
    bundle = MemoryBundle(
        query="q",
        user_id="u",
        channel="_global",
        channels=["_global"],
        episodic=[_item("1", 0.9), _item("2", 0.5), _item("3", 0.1)],
        goals=[goal],
        profile=Profile(user_id="u", channel="_global", communication_style="terse"),
        weights=WEIGHTS,
        tokens=0,
        budget_tokens=0,
        diagnostics=BundleDiagnostics(
            timings_ms={}, candidates={}, diversity_demoted=0, budget_dropped=0
        ),
    )
    words = lambda text: len(text.split())  # noqa: E731 - a tokenizer for the test
    full = fit(bundle.model_copy(update={"budget_tokens": 1000}), words)
    assert full.tokens == words(full.as_prompt()) and len(full.episodic) == 3
    for budget in range(0, full.tokens + 1):
        cut = fit(bundle.model_copy(update={"budget_tokens": budget}), words)
        assert cut.tokens == words(cut.as_prompt()) <= budget
        # Lines are whole: every kept item appears in full.
        for item in cut.episodic:
            assert item.content in cut.as_prompt()
    small = fit(bundle.model_copy(update={"budget_tokens": 12}), words)
    assert small.profile is not None and small.profile.communication_style == "terse"
    assert [i.id for i in small.episodic] == [] and small.goals == [goal]


@given(
    scores=st.lists(st.floats(0, 1), max_size=12),
    words=st.lists(st.integers(1, 30), min_size=12, max_size=12),
    budget=st.integers(0, 300),
)
def test_fit_never_exceeds_the_budget(scores: list[float], words: list[int], budget: int) -> None:
    items = [
        BundleItem(
            kind="episodic",
            id=str(n),
            channel="_global",
            content="w " * words[n],
            score=score,
            scores={},
        )
        for n, score in enumerate(scores)
    ]
    bundle = MemoryBundle(
        query="q",
        user_id="u",
        channel="_global",
        channels=["_global"],
        episodic=items,
        weights=WEIGHTS,
        tokens=0,
        budget_tokens=budget,
        diagnostics=BundleDiagnostics(
            timings_ms={}, candidates={}, diversity_demoted=0, budget_dropped=0
        ),
    )
    count = lambda text: len(text.split())  # noqa: E731 - a tokenizer for the test
    cut = fit(bundle, count)
    assert cut.tokens == count(cut.as_prompt()) <= budget
    diagnostics = cut.diagnostics
    assert len(cut.episodic) + diagnostics.budget_dropped + diagnostics.duplicates_dropped == len(
        items
    )
    # Items of the same length say the same words here: each is shown once.
    body = cut.as_prompt().splitlines()[1:]
    assert len(body) == len(set(body))
