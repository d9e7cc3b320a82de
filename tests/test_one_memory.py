"""One memory: a conversation is stored once, under the caller's own id, kept verbatim, learned
from at once, seen by working memory and consolidated incrementally — through the library and
over REST."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory
from memvault.errors import Conflict, NotFound
from memvault.lifecycle import jobs
from tests.conftest import backend_of

MOVE = "I moved from Berlin to Munich last year. I work at Acme."
RESTATED = "I live in Munich and I work for Acme."


def _transcript(api: TestClient, conversation: str, user: str) -> list[str]:
    response = api.get(f"/v1/conversations/{conversation}", params={"user_id": user})
    assert response.status_code == 200, response.text
    return [t["content"] for t in response.json()["turns"]]


def test_dedup_never_rewrites_what_a_user_said(client: TestClient) -> None:
    sent = client.post(
        "/v1/messages?wait=true",
        json={
            "user_id": "kate",
            "conversation_id": "kate-chat",
            "messages": [{"role": "user", "content": MOVE}],
        },
    )
    assert sent.status_code == 201, sent.text
    turn = sent.json()["results"][0]
    assert turn["conversation_id"] == "kate-chat" and turn["turn_index"] == 0
    added = client.post("/v1/memories?wait=true", json={"user_id": "kate", "content": RESTATED})
    assert added.status_code == 201, added.text
    assert added.json()["dedup"]["action"] != "replace"
    assert added.json()["id"] != turn["id"]
    assert _transcript(client, "kate-chat", "kate") == [MOVE]
    # A statement sent to another conversation (with infer) lands there, touching no turn.
    other = client.post(
        "/v1/messages?wait=true",
        json={
            "user_id": "kate",
            "session_id": "other-session",
            "infer": True,
            "messages": [{"role": "user", "content": RESTATED}],
        },
    )
    assert other.status_code == 201, other.text
    assert _transcript(client, "other-session", "kate") == [RESTATED]
    assert _transcript(client, "kate-chat", "kate") == [MOVE]
    # The turn itself cannot be edited: what was said stays as said.
    edit = client.patch(
        f"/v1/memories/{turn['id']}", params={"user_id": "kate"}, json={"content": "x"}
    )
    assert edit.status_code == 409, edit.text
    assert _transcript(client, "kate-chat", "kate") == [MOVE]


async def test_a_repeated_turn_is_kept_as_a_turn_of_its_own(memory: AsyncMemory) -> None:
    said = [{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}]
    stored = await memory.add_messages(said, user_id="ann", conversation_id="c1", infer=True)
    assert len({r.id for r in stored}) == 2
    again = await memory.add_messages(said[:1], user_id="ann", conversation_id="c1", wait=True)
    assert again[0].turn_index == 2 and again[0].dedup.action == "stored_new"
    convo = await memory.get_conversation("c1", user_id="ann")
    assert convo.turns is not None and [t.content for t in convo.turns] == ["ok", "ok", "ok"]


def test_messages_are_one_conversation_api_under_the_callers_id(client: TestClient) -> None:
    user = {"user_id": "sam"}
    first = client.post(
        "/v1/messages",
        json={
            **user,
            "conversation_id": "sess-42",
            "messages": [{"role": "user", "content": "hi"}],
        },
    )
    assert first.status_code == 201, first.text
    second = client.post(
        "/v1/messages",
        json={
            **user,
            "session_id": "sess-42",
            "messages": [
                {"role": "assistant", "content": "hello, how can I help?", "model": "m1"},
                {"role": "user", "content": "plan my trip to Lisbon"},
            ],
        },
    )
    assert [r["turn_index"] for r in second.json()["results"]] == [1, 2]
    convo = client.get("/v1/conversations/sess-42", params=user).json()
    assert convo["id"] == "sess-42" and convo["turn_count"] == 3
    assert [t["index"] for t in convo["turns"]] == [0, 1, 2]
    assert convo["turns"][1]["model"] == "m1"
    # The older route appends to the same conversation, by the same id.
    more = client.post(
        "/v1/conversations/sess-42/turns",
        json={**user, "turns": [{"role": "user", "content": "in May"}]},
    )
    assert more.status_code == 201 and more.json()["results"][0]["index"] == 3
    working = client.get("/v1/working/sess-42", params=user).json()
    assert [t["content"] for t in working["turns"]][-2:] == ["plan my trip to Lisbon", "in May"]
    bundle = client.post(
        "/v1/remember", json={**user, "query": "trip", "conversation_id": "sess-42"}
    ).json()
    assert "in May" in bundle["prompt"]
    tool = client.post(
        "/v1/tools/invocations",
        json={**user, "conversation_id": "sess-42", "tool_name": "flights", "success": True},
    )
    assert tool.status_code == 201 and tool.json()["conversation_id"] == "sess-42"
    listed = client.get("/v1/conversations", params=user).json()["results"]
    assert [c["id"] for c in listed] == ["sess-42"]
    # Without an id, the turns start a conversation of their own and say which.
    fresh = client.post(
        "/v1/messages", json={**user, "messages": [{"role": "user", "content": "x"}]}
    )
    new_id = fresh.json()["results"][0]["conversation_id"]
    assert new_id and new_id != "sess-42"
    assert client.get(f"/v1/conversations/{new_id}", params=user).json()["turn_count"] == 1
    clash = client.post(
        "/v1/messages",
        json={**user, "conversation_id": "a", "session_id": "b", "messages": [first_msg()]},
    )
    assert clash.status_code == 422


def first_msg() -> dict[str, str]:
    return {"role": "user", "content": "hello"}


def test_refused_turns_leave_no_conversation_behind(client: TestClient) -> None:
    refused = client.post(
        "/v1/messages",
        json={
            "user_id": "pat",
            "conversation_id": "long-chat",
            "messages": [first_msg(), {"role": "user", "content": "x" * 40_000}],
        },
    )
    assert refused.status_code in (413, 422), refused.text
    missing = client.get("/v1/conversations/long-chat", params={"user_id": "pat"})
    assert missing.status_code == 404
    assert client.get("/v1/memories", params={"user_id": "pat"}).json()["results"] == []


async def test_facts_are_there_when_the_write_returns(memory: AsyncMemory) -> None:
    await memory.add_messages(
        [{"role": "user", "content": "My sister Maria lives in Porto. I work at Acme."}],
        user_id="lea",
        conversation_id="lea-1",
        wait=True,
    )
    facts = await memory.facts(user_id="lea")
    assert any(f.object == "Acme" for f in facts), facts
    bundle = await memory.remember("where do I work", user_id="lea", include=["facts"])
    assert bundle.semantic, bundle


async def test_turns_added_after_a_consolidation_are_consolidated_by_the_next(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    talk = [{"role": "user", "content": "Dave works at Initech."}]
    await memory.add_messages(talk, user_id="ann", conversation_id="long", wait=True)
    # Offline, extraction at write is the consolidation: nothing waits.
    assert (await memory.get_conversation("long", user_id="ann")).consolidated_turns == 1
    health = await memory.memory_health(user_id="ann")
    assert "consolidation_lag" not in {f.kind for f in health.findings}
    more = [{"role": "user", "content": "Erin moved to Oslo."}]
    await memory.add_messages(more, user_id="ann", conversation_id="long", wait=True)
    # As if the second turn had been stored without its extraction (a long turn, an older
    # store): its facts gone, the watermark below it.
    raw.execute("DELETE FROM entities")
    raw.execute("UPDATE conversations SET consolidated_turns = 1")
    health = await memory.memory_health(user_id="ann")
    lag = next(f for f in health.findings if f.kind == "consolidation_lag")
    assert lag.count == 1 and lag.action is not None
    assert lag.action.body["action"] == "consolidate"
    done = await memory.health_action(lag.action.body)
    assert done.changed == 1
    convo = await memory.get_conversation("long", user_id="ann")
    assert convo.consolidated_turns == 2
    assert any(f.object == "Oslo" for f in await memory.facts(user_id="ann"))
    health = await memory.memory_health(user_id="ann")
    assert "consolidation_lag" not in {f.kind for f in health.findings}
    again = await jobs.run_job(backend_of(memory), "consolidate")
    assert again.counts["conversations"] == 0


async def test_a_deleted_turn_leaves_working_memory_and_the_count(memory: AsyncMemory) -> None:
    said = [
        {"role": "user", "content": "my locker code is 4471"},
        {"role": "user", "content": "book a table for two"},
    ]
    stored = await memory.add_messages(said, user_id="wt", conversation_id="w1")
    await memory.delete(stored[0].id, user_id="wt")
    context = await memory.get_context("w1", user_id="wt")
    assert [t["content"] for t in context.turns] == ["book a table for two"]
    convo = await memory.get_conversation("w1", user_id="wt")
    assert convo.turn_count == 1 and convo.turns is not None and len(convo.turns) == 1
    bundle = await memory.remember("locker code", user_id="wt", conversation_id="w1")
    assert "4471" not in bundle.as_prompt()
    # Indices are never reused: the next turn comes after the deleted one.
    (next_turn,) = await memory.add_messages(said[1:], user_id="wt", conversation_id="w1")
    assert next_turn.turn_index == 2


async def test_start_conversation_takes_the_callers_id(memory: AsyncMemory) -> None:
    convo = await memory.start_conversation(
        user_id="ann", conversation_id="trip-planning", title="Trip"
    )
    assert convo.id == "trip-planning" and convo.title == "Trip"
    await memory.add_messages([first_msg()], user_id="ann", conversation_id="trip-planning")
    got = await memory.get_conversation("trip-planning", user_id="ann")
    assert got.title == "Trip" and got.turn_count == 1
    try:
        await memory.start_conversation(user_id="ann", conversation_id="trip-planning")
    except Conflict:
        pass
    else:
        raise AssertionError("a second conversation by the same id was made")


async def test_a_correction_supersedes_the_fact_and_keeps_both_turns(memory: AsyncMemory) -> None:
    for said in ("I live in Berlin.", "Actually I moved to Hamburg."):
        await memory.add_messages(
            [{"role": "user", "content": said}], user_id="kim", conversation_id="k", wait=True
        )
    current = await memory.facts(user_id="kim", predicate="lives_in")
    assert [f.object for f in current] == ["Hamburg"]
    history = await memory.facts(user_id="kim", predicate="lives_in", include_superseded=True)
    assert {f.object for f in history} == {"Berlin", "Hamburg"}
    convo = await memory.get_conversation("k", user_id="kim")
    assert convo.turns is not None
    assert [t.content for t in convo.turns] == ["I live in Berlin.", "Actually I moved to Hamburg."]


def test_a_conversation_is_deleted_at_its_own_address(client: TestClient) -> None:
    user = {"user_id": "del"}
    client.post(
        "/v1/messages?wait=true",
        json={
            **user,
            "conversation_id": "gone",
            "messages": [{"role": "user", "content": "I work at Initech."}],
        },
    )
    client.post(
        "/v1/messages",
        json={**user, "conversation_id": "kept", "messages": [{"role": "user", "content": "hi"}]},
    )
    client.post(
        "/v1/tools/invocations",
        json={**user, "conversation_id": "gone", "tool_name": "t", "success": True},
    )
    client.put("/v1/working/gone/context/k", json={**user, "value": "v"})
    receipt = client.delete("/v1/conversations/gone", params=user)
    assert receipt.status_code == 200, receipt.text
    body = receipt.json()
    assert body["scope"] == "conversation" and body["memories"] == 1
    assert body["counts"]["conversations"] == 1 and body["counts"]["tool_invocations"] == 1
    assert client.get("/v1/conversations/gone", params=user).status_code == 404
    assert client.get("/v1/working/gone", params=user).json()["values"] == {}
    assert client.get("/v1/tools/stats", params=user).json()["results"] == []
    assert client.get("/v1/facts", params=user).json()["results"] == []
    contents = [m["content"] for m in client.get("/v1/memories", params=user).json()["results"]]
    assert contents == ["hi"]
    assert client.get("/v1/conversations/kept", params=user).json()["turn_count"] == 1
    again = client.delete("/v1/conversations/gone", params=user)
    assert again.status_code == 404


async def test_a_turn_and_its_memory_commit_together(
    memory: AsyncMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.db import cognitive as cognitive_db

    async def refused(*_: object) -> None:
        raise RuntimeError("the turn row could not be written")

    monkeypatch.setattr(cognitive_db, "insert_turns", refused)
    with pytest.raises(RuntimeError):
        await memory.add_messages([first_msg()], user_id="tx", conversation_id="atomic")
    assert (await memory.list(user_id="tx")).results == []
    with pytest.raises(NotFound):
        await memory.get_conversation("atomic", user_id="tx")


async def test_a_correction_of_where_one_lives_keeps_where_one_lived_before(
    memory: AsyncMemory,
) -> None:
    said = ["I moved from Berlin to Munich last year.", "Actually I moved to Hamburg."]
    for text in said:
        await memory.add_messages(
            [{"role": "user", "content": text}], user_id="ivy", conversation_id="i", wait=True
        )
    current = await memory.facts(user_id="ivy", predicate="lives_in")
    assert [f.object for f in current] == ["Hamburg"]
    moved = current[0].recorded_at.replace(year=current[0].recorded_at.year - 1, month=1, day=1)
    before = await memory.facts(user_id="ivy", predicate="lives_in", valid_at=moved)
    assert [f.object for f in before] == ["Berlin"]
