"""Memory CRUD through the library: round trips, pagination, filters, history, TTL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memvault import AsyncMemory, ContentTooLong, InvalidInput, NotFound
from memvault.admin import AsyncAdmin


async def test_add_then_get_returns_what_was_stored(memory: AsyncMemory) -> None:
    added = await memory.add(
        "Alice prefers aisle seats",
        user_id="alice",
        app_id="travel",
        project_id="p1",
        environment="prod",
        channel="chat",
        source="conversation",
        tags=["pref", "flight"],
        metadata={"confidence": 0.9},
    )
    got = await memory.get(added.id, user_id="alice")
    assert got.model_dump() == {
        k: v for k, v in added.model_dump().items() if k in got.model_dump()
    }
    assert got.content == "Alice prefers aisle seats"
    assert (got.app_id, got.project_id, got.environment, got.channel, got.source) == (
        "travel",
        "p1",
        "prod",
        "chat",
        "conversation",
    )
    assert got.tags == ["flight", "pref"]
    assert got.metadata == {"confidence": 0.9}
    assert got.memory_type == "persistent" and got.tier == "hot" and got.embedded


async def test_defaults_for_app_and_channel(memory: AsyncMemory) -> None:
    added = await memory.add("a fact", user_id="u")
    assert (added.app_id, added.channel, added.project_id) == ("default", "_global", None)


async def test_update_content_writes_history_and_queues_reembedding(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    added = await memory.add("Bob lives in Paris", user_id="bob")
    raw.execute("UPDATE memories SET embedded = true WHERE id = %s", (added.id,))
    updated = await memory.update(added.id, user_id="bob", content="Bob lives in Lyon")
    assert updated.content == "Bob lives in Lyon"
    assert updated.embedded is False
    assert updated.updated_at > added.updated_at
    history = await memory.history(added.id, user_id="bob")
    assert [(h.action, h.old_content, h.new_content) for h in history] == [
        ("ADD", None, "Bob lives in Paris"),
        ("UPDATE", "Bob lives in Paris", "Bob lives in Lyon"),
    ]


async def test_metadata_only_update_merges_and_keeps_embedding(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    added = await memory.add("x", user_id="u", metadata={"a": 1, "b": 2})
    raw.execute("UPDATE memories SET embedded = true WHERE id = %s", (added.id,))
    updated = await memory.update(added.id, user_id="u", metadata={"b": None, "c": 3})
    assert updated.metadata == {"a": 1, "c": 3}
    assert updated.embedded is True
    assert updated.content == "x"
    last = (await memory.history(added.id, user_id="u"))[-1]
    assert (last.old_metadata, last.new_metadata) == ({"a": 1, "b": 2}, {"a": 1, "c": 3})
    assert last.old_content is None and last.new_content is None


async def test_update_needs_something_to_change(memory: AsyncMemory) -> None:
    added = await memory.add("x", user_id="u")
    with pytest.raises(InvalidInput):
        await memory.update(added.id, user_id="u")


async def test_update_moves_the_expiry_in_place(memory: AsyncMemory) -> None:
    """A refreshed TTL is the same memory with a later expiry: same id, same content."""
    soon = datetime.now(UTC) + timedelta(minutes=5)
    added = await memory.add("a short-lived note", user_id="u", expires_at=soon)
    later = datetime.now(UTC) + timedelta(hours=2)
    updated = await memory.update(added.id, user_id="u", expires_at=later)
    assert (updated.id, updated.content, updated.expires_at) == (added.id, added.content, later)
    assert (await memory.get(added.id, user_id="u")).expires_at == later
    with pytest.raises(InvalidInput):
        await memory.update(added.id, user_id="u", expires_at=datetime.now(UTC) - timedelta(1))
    assert (await memory.get(added.id, user_id="u")).expires_at == later


async def test_delete_removes_the_memory_but_keeps_a_tombstone_history(
    memory: AsyncMemory,
) -> None:
    added = await memory.add("temporary", user_id="u")
    await memory.delete(added.id, user_id="u")
    with pytest.raises(NotFound):
        await memory.get(added.id, user_id="u")
    with pytest.raises(NotFound):
        await memory.delete(added.id, user_id="u")
    actions = [(h.action, h.old_content) for h in await memory.history(added.id, user_id="u")]
    # Who did what and when stays; the deleted text does not (MEMVAULT_DELETION_HISTORY).
    assert actions == [("ADD", None), ("DELETE", None)]


async def test_delete_all_is_scoped_to_user_and_app(memory: AsyncMemory) -> None:
    for app in ("a", "a", "b"):
        await memory.add(f"in {app}", user_id="u", app_id=app, infer=False)
    keep = await memory.add("other user", user_id="v", app_id="a")
    assert await memory.delete_all(user_id="u", app_id="a") == 2
    remaining = await memory.list(user_id="u")
    assert [m.app_id for m in remaining.results] == ["b"]
    assert await memory.delete_all(user_id="u") == 1
    assert (await memory.get(keep.id, user_id="v")).content == "other user"


async def test_pagination_walks_every_memory_once_newest_first(memory: AsyncMemory) -> None:
    added = [await memory.add(f"memory {i}", user_id="u", infer=False) for i in range(23)]
    seen, cursor, pages = [], None, 0
    while True:
        page = await memory.list(user_id="u", limit=10, cursor=cursor)
        seen.extend(page.results)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 3
    assert [m.id for m in seen] == [m.id for m in reversed(added)]


async def test_page_size_is_capped(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        await memory.list(user_id="u", limit=101)
    with pytest.raises(InvalidInput):
        await memory.list(user_id="u", cursor="not-a-cursor")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"app_id": "shop"}, {"m1", "m2"}),
        ({"project_id": "p"}, {"m2"}),
        ({"environment": "staging"}, {"m3"}),
        ({"channel": "voice"}, {"m1"}),
        ({"source": "email"}, {"m3"}),
        ({"tags": ["red"]}, {"m1", "m3"}),
        ({"tags": ["red", "big"]}, {"m1"}),
        ({"metadata": {"k": "v"}}, {"m2", "m3"}),
        ({"metadata": {"k": "v", "n": 2}}, {"m3"}),
        ({"app_id": "shop", "metadata": {"k": "v"}}, {"m2"}),
        ({"tags_any": ["big", "nowhere"]}, {"m1"}),
        ({"channels": ["voice", "_global"]}, {"m1", "m2", "m3"}),
    ],
)
async def test_each_filter_selects_exactly_its_memories(
    memory: AsyncMemory, filters: dict[str, Any], expected: set[str]
) -> None:
    await memory.add("m1", user_id="u", app_id="shop", channel="voice", tags=["red", "big"])
    await memory.add("m2", user_id="u", app_id="shop", project_id="p", metadata={"k": "v"})
    await memory.add(
        "m3",
        user_id="u",
        environment="staging",
        source="email",
        tags=["red"],
        metadata={"k": "v", "n": 2},
    )
    await memory.add("m4", user_id="someone-else", app_id="shop", tags=["red"])
    page = await memory.list(user_id="u", **filters)
    assert {m.content for m in page.results} == expected
    # Search applies the same filters (through its kept statements, with these values).
    found = await memory.search("m1 m2 m3 m4", user_id="u", recipe="keyword", **filters)
    assert {h.content for h in found.results} == expected


async def test_created_range_filter(memory: AsyncMemory, raw: psycopg.Connection[Any]) -> None:
    old = await memory.add("old", user_id="u")
    new = await memory.add("new", user_id="u")
    raw.execute("UPDATE memories SET created_at = '2024-01-01T00:00:00Z' WHERE id = %s", (old.id,))
    cutoff = datetime(2025, 1, 1, tzinfo=UTC)
    after = await memory.list(user_id="u", created_after=cutoff)
    before = await memory.list(user_id="u", created_before=cutoff)
    assert [m.id for m in after.results] == [new.id]
    assert [m.id for m in before.results] == [old.id]


async def test_expired_memories_vanish_from_reads_and_cleanup_deletes_them(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    doomed = await memory.add("short-lived", user_id="u", expires_at=soon)
    kept = await memory.add("lasting", user_id="u")
    assert doomed.expires_at == soon
    raw.execute(
        "UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = %s", (doomed.id,)
    )
    with pytest.raises(NotFound):
        await memory.get(doomed.id, user_id="u")
    assert [m.id for m in (await memory.list(user_id="u")).results] == [kept.id]
    assert await AsyncAdmin.of(memory).purge_expired() == 1
    assert raw.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    assert (await memory.history(doomed.id, user_id="u"))[-1].actor == "ttl"


async def test_expiry_in_the_past_is_refused(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        await memory.add("x", user_id="u", expires_at=datetime(2020, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("content", ["", "   ", "\n\t "])
async def test_empty_content_is_refused(memory: AsyncMemory, content: str) -> None:
    with pytest.raises(InvalidInput):
        await memory.add(content, user_id="u")


async def test_content_limit(memory: AsyncMemory) -> None:
    await memory.add("x" * 32_000, user_id="u")
    with pytest.raises(ContentTooLong) as info:
        await memory.add("x" * 32_001, user_id="u")
    assert "x" * 50 not in str(info.value.details)


@pytest.mark.parametrize("bad_id", ["nope", "123", ""])
async def test_bad_ids_are_invalid_input(memory: AsyncMemory, bad_id: str) -> None:
    with pytest.raises(InvalidInput):
        await memory.get(bad_id, user_id="u")


async def test_validation_errors_never_echo_the_content(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput) as info:
        await memory.add("my secret plan", user_id="", tags=["ok"])
    assert "my secret plan" not in repr(info.value.details)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"tags_any": ["red", "blue"]}, {"f1", "f2"}),
        ({"categories": ["travel"]}, {"f1", "f3"}),
        ({"memory_type": "temporal"}, {"f2"}),
        ({"tier": "cold"}, {"f3"}),
        ({"min_importance": 7}, {"f1", "f3"}),
        ({"occurred_after": datetime(2024, 1, 1, tzinfo=UTC)}, {"f1", "f2"}),
        ({"occurred_before": datetime(2024, 1, 1, tzinfo=UTC)}, {"f3"}),
        ({"categories": ["travel"], "min_importance": 9, "tier": "cold"}, {"f3"}),
    ],
)
async def test_enrichment_and_time_filters(
    memory: AsyncMemory,
    raw: psycopg.Connection[Any],
    filters: dict[str, Any],
    expected: set[str],
) -> None:
    rows = {
        "f1": ("{red}", "{travel,food}", "persistent", "hot", 7, "2024-06-01"),
        "f2": ("{blue}", "{work}", "temporal", "warm", 3, "2024-03-01"),
        "f3": ("{}", "{travel}", "persistent", "cold", 9, "2023-05-01"),
    }
    for name, (tags, categories, kind, tier, importance, when) in rows.items():
        record = await memory.add(name, user_id="u", infer=False)
        raw.execute(
            "UPDATE memories SET tags = %s, categories = %s, memory_type = %s, tier = %s, "
            "importance = %s, occurred_at = %s WHERE id = %s",
            (tags, categories, kind, tier, importance, when, record.id),
        )
    listed = await memory.list(user_id="u", **filters)
    assert {m.content for m in listed.results} == expected
    found = await memory.search("f", user_id="u", recipe="vector", **filters)
    assert {h.content for h in found.results} == expected


async def test_text_without_a_utf8_form_is_refused(memory: AsyncMemory) -> None:
    with pytest.raises(InvalidInput):
        await memory.add("broken \ud800 text", user_id="u")
    with pytest.raises(InvalidInput):
        await memory.add("fine text", user_id="bad \udfff user")


async def test_a_card_with_its_code_and_expiry_is_redacted_and_never_dates_the_memory(
    memory: AsyncMemory,
) -> None:
    added = await memory.add(
        "My card is 4111 1111 1111 1111, exp 12/27, CVV 123", user_id="u", infer=False
    )
    assert "4111" not in added.content and "123" not in added.content
    assert added.pii.found == {"credit_card": 1, "card_security_code": 1}
    assert added.valid_until is None and added.memory_type == "persistent"


async def test_editing_the_content_enriches_it_again(memory: AsyncMemory) -> None:
    added = await memory.add("I love sushi and ramen", user_id="u")
    assert "food_preference" in added.categories and added.memory_type == "persistent"
    updated = await memory.update(
        added.id, user_id="u", content="Dentist appointment tomorrow at 3pm"
    )
    assert "health" in updated.categories and "food_preference" not in updated.categories
    assert updated.memory_type == "temporal" and updated.valid_until is not None
    stored = await memory.get(added.id, user_id="u")
    assert (stored.categories, stored.valid_until, stored.importance) == (
        updated.categories,
        updated.valid_until,
        updated.importance,
    )


async def test_an_edit_that_changes_nothing_records_nothing(memory: AsyncMemory) -> None:
    added = await memory.add("Bob lives in Paris", user_id="bob", metadata={"a": 1})
    same = await memory.update(
        added.id, user_id="bob", content="Bob lives in Paris", metadata={"a": 1, "gone": None}
    )
    assert same.updated_at == added.updated_at and same.metadata == {"a": 1}
    assert [h.action for h in await memory.history(added.id, user_id="bob")] == ["ADD"]
    # Same text, new metadata: only the metadata change is recorded, the text is kept.
    await memory.update(added.id, user_id="bob", content="Bob lives in Paris", metadata={"a": 2})
    history = await memory.history(added.id, user_id="bob")
    assert [(h.action, h.old_content, h.new_content) for h in history] == [
        ("ADD", None, "Bob lives in Paris"),
        ("UPDATE", None, None),
    ]
    assert (history[-1].old_metadata, history[-1].new_metadata) == ({"a": 1}, {"a": 2})


async def test_metadata_postgres_cannot_store_is_refused_and_nothing_is_stored(
    memory: AsyncMemory,
) -> None:
    for metadata in ({"key\x00": 1}, {"a": ["x\x00"]}, {"a": {"b": "\ud800"}}):
        with pytest.raises(InvalidInput):
            await memory.add("a note", user_id="u", metadata=metadata)
        with pytest.raises(InvalidInput):
            await memory.search("a note", user_id="u", metadata=metadata)
    assert (await memory.list(user_id="u")).results == []
