"""Episodic memory: conversations whose turns are searchable memories, in order, in a channel,
found by time and by meaning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memvault import AsyncMemory, InvalidInput, NotFound

TALK = [
    {"role": "user", "content": "I want to plan a trip to Lisbon in May"},
    {
        "role": "assistant",
        "content": "Lisbon in May is warm; shall I look at flights?",
        "model": "m1",
    },
    {"role": "user", "content": "Yes, and find a hotel near Alfama"},
]


async def test_turns_are_memories_linked_in_order(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    convo = await memory.start_conversation(user_id="ann", title="Lisbon trip")
    first = await memory.add_turns(convo.id, TALK[:2], user_id="ann")
    second = await memory.add_turns(convo.id, TALK[2:], user_id="ann", wait=True)
    assert [t.index for t in first + second] == [0, 1, 2]

    got = await memory.get_conversation(convo.id, user_id="ann")
    assert got.title == "Lisbon trip" and got.turn_count == 3
    assert got.turns is not None
    assert [t.content for t in got.turns] == [t["content"] for t in TALK]
    assert [t.followed_by for t in got.turns] == [1, 2, None]
    assert got.turns[1].model == "m1" and got.turns[1].token_count > 5
    # Each turn is an ordinary memory of the conversation's session...
    record = await memory.get(got.turns[2].memory_id, user_id="ann")
    assert record.metadata["session_id"] == str(convo.id) and record.metadata["turn"] == 2
    # ...and the turn row holds no words of its own, the title is sealed.
    columns = {
        r[0]
        for r in raw.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'conversation_turns'"
        )
    }
    assert not columns & {"content", "ciphertext"}
    (title,) = raw.execute("SELECT ciphertext FROM conversations").fetchone() or (b"",)
    assert b"Lisbon" not in title


async def test_deleting_a_turns_memory_removes_the_turn(memory: AsyncMemory) -> None:
    convo = await memory.start_conversation(user_id="ann")
    turns = await memory.add_turns(convo.id, TALK, user_id="ann")
    await memory.delete(turns[1].memory_id, user_id="ann")
    got = await memory.get_conversation(convo.id, user_id="ann")
    assert got.turns is not None
    assert [t.index for t in got.turns] == [0, 2]
    assert got.turns[0].followed_by == 2


async def test_recent_turns_by_channel_and_time(memory: AsyncMemory) -> None:
    old = datetime.now(UTC) - timedelta(days=3)
    project = await memory.start_conversation(user_id="ann", channel="proj")
    home = await memory.start_conversation(user_id="ann")
    await memory.add_turns(project.id, TALK[:1], user_id="ann")
    await memory.add_turns(home.id, TALK[1:2], user_id="ann")
    await memory.add_turns(home.id, TALK[2:], user_id="ann", occurred_at=old)

    recent = await memory.recent_turns(user_id="ann", channels=["proj", "_global"], hours=24)
    assert [t.content for t in recent] == [TALK[1]["content"], TALK[0]["content"]]
    assert {t.channel for t in recent} == {"proj", "_global"}
    assert [t.content for t in await memory.recent_turns(user_id="ann", hours=100)] == [
        TALK[1]["content"],
        TALK[2]["content"],
    ]
    assert await memory.recent_turns(user_id="bob", hours=100) == []
    with pytest.raises(InvalidInput):
        await memory.recent_turns(user_id="ann", hours=0)


async def test_search_within_a_time_window_and_channels(memory: AsyncMemory) -> None:
    may = datetime(2025, 5, 10, tzinfo=UTC)
    june = datetime(2025, 6, 10, tzinfo=UTC)
    convo = await memory.start_conversation(user_id="ann", channel="travel")
    await memory.add_turns(convo.id, TALK[:1], user_id="ann", occurred_at=may, wait=True)
    other = await memory.start_conversation(user_id="ann")
    await memory.add_turns(
        other.id,
        [{"role": "user", "content": "Book the Lisbon flight"}],
        user_id="ann",
        occurred_at=june,
        wait=True,
    )
    hits = await memory.search_turns("Lisbon", user_id="ann", channel="travel")
    assert {(h.channel, h.conversation_id) for h in hits} == {
        ("travel", convo.id),
        ("_global", other.id),
    }
    windowed = await memory.search_turns(
        "Lisbon", user_id="ann", channel="travel", after=june - timedelta(days=1)
    )
    assert [(h.content, h.turn_index) for h in windowed] == [("Book the Lisbon flight", 0)]
    # The global channel alone does not see a project's turns.
    only_global = await memory.search_turns("Lisbon", user_id="ann")
    assert {h.channel for h in only_global} == {"_global"}


async def test_conversations_list_and_belong_to_their_owner(memory: AsyncMemory) -> None:
    a = await memory.start_conversation(user_id="ann", channel="proj")
    b = await memory.start_conversation(user_id="ann")
    await memory.start_conversation(user_id="ann", channel="other")
    listed = await memory.list_conversations(user_id="ann", channel="proj")
    assert {c.id for c in listed} == {a.id, b.id}
    await memory.archive_conversation(b.id, user_id="ann")
    assert {c.id for c in await memory.list_conversations(user_id="ann", channel="proj")} == {a.id}
    for call in (
        memory.get_conversation(a.id, user_id="bob"),
        memory.for_tenant("other").get_conversation(a.id, user_id="ann"),
        memory.get_conversation("not-a-uuid", user_id="ann"),
    ):
        with pytest.raises(NotFound):
            await call
    # Ids are per user: bob's turns under ann's id make bob's own conversation, not ann's.
    await memory.add_turns(a.id, TALK[:1], user_id="bob")
    assert (await memory.get_conversation(a.id, user_id="ann")).turn_count == 0
    assert (await memory.get_conversation(a.id, user_id="bob")).turn_count == 1
    with pytest.raises(InvalidInput):
        await memory.get_conversation("", user_id="ann")


async def test_search_takes_several_channels(memory: AsyncMemory) -> None:
    for channel in ("a", "b", "_global"):
        await memory.add(
            f"the meeting notes of {channel}", user_id="ann", channel=channel, infer=False
        )
    found = await memory.search("meeting notes", user_id="ann", channels=["a", "_global"])
    assert {h.channel for h in found.results} == {"a", "_global"}
    listed = await memory.list(user_id="ann", channels=["b"])
    assert [m.content for m in listed.results] == ["the meeting notes of b"]


async def test_a_turn_with_an_empty_index_text_is_kept_but_never_found(
    memory: AsyncMemory,
) -> None:
    call = '{"arguments":{"city":"Lisbon"},"name":"weather"}'
    await memory.add_messages(
        [
            {"role": "user", "content": "What is the weather in Lisbon?"},
            {"role": "assistant", "content": call, "index_text": ""},
        ],
        user_id="ann",
        conversation_id="tools",
        wait=True,
    )
    got = await memory.get_conversation("tools", user_id="ann")
    assert [t.content for t in got.turns or []] == ["What is the weather in Lisbon?", call]
    found = [h.content for h in (await memory.search("Lisbon weather", user_id="ann")).results]
    assert found == ["What is the weather in Lisbon?"]


async def test_episodic_search_and_remember_build_the_same_turn_hit(memory: AsyncMemory) -> None:
    convo = await memory.start_conversation(user_id="ann", conversation_id="trip-chat")
    await memory.add_turns(convo.id, TALK, user_id="ann", wait=True)
    (hit, *_) = await memory.search_turns("hotel near Alfama", user_id="ann")
    bundle = await memory.remember("hotel near Alfama", user_id="ann")
    recalled = next(i for i in bundle.episodic if i.content == hit.content)
    assert (hit.conversation_id, hit.turn_index, hit.session_id) == ("trip-chat", 2, "trip-chat")
    assert recalled.conversation_id == hit.conversation_id
