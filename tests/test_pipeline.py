"""The write pipeline end to end on real parts: PII, dedup bands, enrichment, batches."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from memvault import InvalidInput, Settings
from memvault.errors import PIIRejected
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.made_up import made_up_texts

CARD = "4111 1111 1111 1111"


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="local"))
    yield opened
    await opened.close()


def count(raw: psycopg.Connection[Any], table: str = "memories") -> int:
    row = raw.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


async def test_the_same_text_twice_is_one_memory(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    first = await memory.add("Alice is allergic to penicillin", user_id="alice")
    again = await memory.add("  alice is ALLERGIC to penicillin ", user_id="alice")
    assert first.dedup.action == "stored_new" and first.embedded
    assert again.dedup.action == "duplicate_exact" and again.dedup.decided_by == "hash"
    assert again.id == first.id == again.dedup.existing_id
    assert count(raw) == 1
    other_user = await memory.add("Alice is allergic to penicillin", user_id="bob")
    assert other_user.dedup.action == "stored_new"


async def test_a_near_copy_is_a_duplicate_by_vector(memory: AsyncMemory) -> None:
    first = await memory.add("Alice is allergic to penicillin", user_id="alice")
    again = await memory.add("Alice is allergic to penicillin.", user_id="alice")
    assert again.dedup.action == "duplicate_exact" and again.dedup.decided_by == "vector"
    assert again.id == first.id and (again.dedup.similarity or 0) >= 0.98


async def test_an_update_replaces_the_old_fact_offline(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    old = await memory.add("Bob has 2 cats at home", user_id="bob")
    new = await memory.add("Bob has 3 cats at home", user_id="bob")
    assert new.dedup.action == "replace" and new.dedup.decided_by == "rules"
    assert 0.70 <= (new.dedup.similarity or 0) < 0.98
    assert new.id == old.id and new.content == "Bob has 3 cats at home"
    assert count(raw) == 1
    history = await memory.history(old.id, user_id="bob")
    assert [(h.action, h.new_content) for h in history][-1] == ("UPDATE", "Bob has 3 cats at home")
    found = await memory.search("how many cats does Bob have", user_id="bob")
    assert [h.content for h in found.results] == ["Bob has 3 cats at home"]


async def test_unrelated_memories_are_stored_new(memory: AsyncMemory) -> None:
    await memory.add("Carol works as a pilot", user_id="carol")
    other = await memory.add("The tax return is due in April", user_id="carol")
    assert other.dedup.action == "stored_new" and other.dedup.existing_id is None


async def test_concurrent_adds_of_one_text_store_one_row(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    results = await asyncio.gather(
        *(memory.add("Dana's passport expires in 2031", user_id="dana") for _ in range(8))
    )
    assert len({r.id for r in results}) == 1
    assert sorted(r.dedup.action for r in results).count("stored_new") == 1
    assert count(raw) == 1


async def test_every_stored_memory_is_enriched(memory: AsyncMemory) -> None:
    reference = datetime(2024, 5, 15, 10, 0, tzinfo=UTC)
    temporal = await memory.add(
        "Dentist appointment tomorrow at 3pm", user_id="erin", occurred_at=reference
    )
    lasting = await memory.add("Erin is vegetarian", user_id="erin", infer=False)
    for result in (temporal, lasting):
        assert result.importance is not None and 1 <= result.importance <= 10
        assert result.categories and all(c == c.lower() for c in result.categories)
        assert result.sources["importance"] == "rules"
    assert temporal.memory_type == "temporal"
    assert (
        temporal.valid_until is not None and temporal.valid_until.date().isoformat() == "2024-05-16"
    )
    assert lasting.memory_type == "persistent" and lasting.valid_until is None
    got = await memory.get(temporal.id, user_id="erin")
    assert (got.importance, got.memory_type, got.categories) == (
        temporal.importance,
        "temporal",
        temporal.categories,
    )


async def test_infer_false_stores_the_text_as_given(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    a = await memory.add("Frank likes jazz", user_id="frank", infer=False)
    b = await memory.add("Frank likes jazz", user_id="frank", infer=False)
    assert a.id != b.id and count(raw) == 2


async def test_pii_is_redacted_before_anything_else_sees_it(
    memory: AsyncMemory, raw: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = await memory.add(f"My card is {CARD} and my email is gina@example.com", user_id="gina")
    assert result.pii.found == {"credit_card": 1, "email": 1} and result.pii.redacted
    assert CARD not in result.content and "[REDACTED:credit_card]" in result.content
    assert "gina@example.com" not in caplog.text and CARD not in caplog.text
    assert result.embedded  # the redacted text was embedded, never the card
    found = await memory.search("credit card", user_id="gina")
    assert CARD not in found.model_dump_json()


async def test_reject_policy_stores_nothing(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    with pytest.raises(PIIRejected) as info:
        await memory.add(f"card {CARD}", user_id="hal", pii_policy="reject")
    assert CARD not in str(info.value.to_dict())
    assert info.value.details["found"] == {"credit_card": 1}
    with pytest.raises(PIIRejected):
        await memory.add("The password is written on the card I gave you", user_id="hal")
    assert count(raw) == 0 and count(raw, "memory_history") == 0


async def test_updates_are_protected_too(memory: AsyncMemory) -> None:
    record = await memory.add("Ivy's contact details", user_id="ivy")
    updated = await memory.update(record.id, user_id="ivy", content="Ivy: ivy@example.org")
    assert "ivy@example.org" not in updated.content


async def test_a_batch_is_one_embedding_call_and_one_transaction(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    calls: list[int] = []
    service = backend_of(memory).embeddings
    original = service.embed_batch

    async def counting(texts: Any) -> Any:
        calls.append(len(texts))
        return await original(texts)

    service.embed_batch = counting  # type: ignore[method-assign]
    items = [
        {"content": f"Jon visited city number {i} in {1990 + i}", "user_id": "jon"}
        for i in range(20)
    ]
    items.append({"content": "Jon visited city number 0 in 1990", "user_id": "jon"})
    results = await memory.add_many(items)
    # One call for the 21 texts and the names and claims the graph extracted from them
    # ("Jon", said by all: embedded once).
    assert calls == [21 + 1]
    assert [r.content for r in results[:20]] == [i["content"] for i in items[:20]]
    assert results[20].dedup.action == "duplicate_exact" and results[20].id == results[0].id
    assert count(raw) == 20


async def test_a_batch_is_deduplicated_against_the_store_as_one_by_one_would_be(
    memory: AsyncMemory,
) -> None:
    """What each item of a batch is folded into, or not, is what adding it alone finds: the
    owner's own memories (not another user's, not another app's, not a conversation's turns)."""
    penicillin = await memory.add("Alice is allergic to penicillin", user_id="alice")
    cats = await memory.add("Bob has 2 cats at home", user_id="alice")
    await memory.add("Alice likes green tea every morning", user_id="alice", app_id="work")
    await memory.add_messages(
        [{"role": "user", "content": "Alice lives in a flat in Paris"}],
        user_id="alice",
        conversation_id="c1",
    )
    await memory.add("Alice lives in a flat in Paris", user_id="carol")
    batch = [
        {"content": "Alice is allergic to penicillin.", "user_id": "alice"},
        {"content": "Bob has 3 cats at home", "user_id": "alice"},
        {"content": "Alice likes green tea every morning.", "user_id": "alice"},
        {"content": "Alice lives in a flat in Paris.", "user_id": "alice"},
        {"content": "The tax return is due in April", "user_id": "alice"},
        {"content": "Alice is allergic to penicillin.", "user_id": "dan"},
    ]
    results = await memory.add_many(batch)
    decided = [(r.dedup.action, r.dedup.existing_id) for r in results]
    assert decided == [
        ("duplicate_exact", penicillin.id),
        ("replace", cats.id),
        ("stored_new", None),
        ("stored_new", None),
        ("stored_new", None),
        ("stored_new", None),
    ]


async def test_a_batch_looks_up_its_near_copies_in_a_few_statements(
    memory: AsyncMemory,
) -> None:
    """Dedup asks the store about a batch together, not an item at a time: a batch of 60 new
    texts sends as many statements as a batch of 10 (the first batch counts the owner's
    memories and notes the audit settings: it is not compared)."""
    statements: list[str] = []
    adding = asyncio.current_task()

    def counted(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if asyncio.current_task() is adding:  # not the background jobs' statements
            statements.append(statement)

    engine = backend_of(memory).engine.sync_engine
    await memory.add_many([{"content": t, "user_id": "eve"} for t in made_up_texts(20, seed=1)])
    sent = []
    for size, seed in ((10, 2), (10, 3), (60, 4)):
        statements.clear()
        event.listen(engine, "before_cursor_execute", counted)
        try:
            results = await memory.add_many(
                [{"content": t, "user_id": "eve"} for t in made_up_texts(size, seed)]
            )
        finally:
            event.remove(engine, "before_cursor_execute", counted)
        assert {r.dedup.action for r in results} <= {"stored_new", "keep_both"}
        sent.append(len(statements))
    assert sent[2] == sent[1], sent


async def test_an_invalid_item_fails_the_whole_batch(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    with pytest.raises(PIIRejected) as info:
        await memory.add_many(
            [
                {"content": "fine", "user_id": "k"},
                {"content": f"card {CARD}", "user_id": "k", "pii_policy": "reject"},
            ]
        )
    assert info.value.details["index"] == 1
    with pytest.raises(InvalidInput):
        await memory.add_many([])
    assert count(raw) == 0


async def test_long_texts_are_stored_at_once_and_finished_by_the_worker(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="local", run_worker=True))
    text = "Lena keeps a travel diary. " * 60
    result = await memory.add(text, user_id="lena", wait=True)
    assert result.embedded
    found = await memory.search("travel diary", user_id="lena")
    assert [h.id for h in found.results] == [result.id]
    await memory.close()


async def test_background_adds_are_enriched_now_and_deduplicated_by_the_worker(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    from memvault import NotFound
    from memvault.worker import Worker

    kept = await memory.add("Quinn rides a blue bike to school", user_id="quinn")
    late = await memory.add("Quinn rides a blue bike to school", user_id="quinn", background=True)
    other = await memory.add("Quinn's exam is on Friday", user_id="quinn", background=True)
    assert late.dedup.action == "pending" and not late.embedded
    assert late.importance is not None and late.sources["importance"] == "rules"
    assert await Worker(backend_of(memory)).run_once() == 2
    with pytest.raises(NotFound):
        await memory.get(late.id, user_id="quinn")
    assert [h.actor for h in await memory.history(late.id, user_id="quinn")][-1] == "dedup"
    assert (await memory.get(kept.id, user_id="quinn")).embedded
    settled = await memory.get(other.id, user_id="quinn")
    assert settled.embedded and settled.memory_type == "temporal"
    assert count(raw) == 2


async def test_the_worker_settles_a_claimed_batch_as_one_by_one_would(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    """Background adds claimed together are settled together: two copies of one text keep
    one memory (each finds the other stored; the second finds the first already folded),
    and every kept memory is learned from."""
    from memvault.worker import Worker

    first, second = [
        await memory.add("I moved to Lisbon last spring", user_id="rui", background=True)
        for _ in range(2)
    ]
    other = await memory.add("My sister Ana works at Acme", user_id="rui", background=True)
    assert await Worker(backend_of(memory)).run_once() == 3
    stored = {row[0] for row in raw.execute("SELECT id FROM memories WHERE user_id = 'rui'")}
    assert len(stored & {first.id, second.id}) == 1 and other.id in stored
    assert all([(await memory.get(i, user_id="rui")).embedded for i in stored])
    facts = {(f.predicate, f.object or f.value) for f in await memory.facts(user_id="rui")}
    assert {("lives_in", "Lisbon"), ("works_for", "Acme")} <= facts, facts


async def test_waiting_on_a_background_duplicate_answers_with_the_memory_it_joined(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="local", run_worker=True))
    kept = await memory.add("Vera's locker code changed last week", user_id="vera")
    late = await memory.add(
        "Vera's locker code changed last week", user_id="vera", background=True, wait=True
    )
    assert late.id == kept.id and late.dedup.action == "duplicate_exact"
    assert late.dedup.existing_id == kept.id
    await memory.close()


async def test_add_messages_stores_each_turn_with_its_place_in_the_conversation(
    memory: AsyncMemory,
) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    results = await memory.add_messages(
        [
            {"role": "user", "name": "Caroline", "content": "I went to a support group yesterday"},
            {"role": "assistant", "content": "That sounds like a big step"},
            {"role": "user", "name": "Caroline", "content": "I went to a support group yesterday"},
        ],
        user_id="caroline",
        session_id="s1",
        occurred_at=when,
    )
    assert [r.metadata for r in results] == [
        {"role": "user", "speaker": "Caroline", "turn": 0, "session_id": "s1"},
        {"role": "assistant", "speaker": "assistant", "turn": 1, "session_id": "s1"},
        {"role": "user", "speaker": "Caroline", "turn": 2, "session_id": "s1"},
    ]
    assert len({r.id for r in results}) == 3  # verbatim: a repeated turn is its own memory
    assert all(r.occurred_at == when and r.source == "conversation" for r in results)
    with pytest.raises(InvalidInput):
        await memory.add_messages([], user_id="caroline")
