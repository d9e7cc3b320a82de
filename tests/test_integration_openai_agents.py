"""MemvaultSession against the OpenAI Agents SDK's session behaviour (the SDK's own session
tests, tests/test_session.py for SQLiteSession, are the reference: items come back in order and
exactly, ``limit`` keeps the latest in order, ``pop_item`` removes the newest, sessions are
separate, ``clear_session`` empties one), and under a real ``Runner`` run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session, SessionSettings
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from memvault import AsyncMemory
from memvault.config import Settings
from memvault.integrations.openai_agents import MemvaultSession


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    # The SDK exports traces to OpenAI by default; these runs are offline.
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash", pii_policy="allow"))
    yield opened
    await opened.close()


async def test_items_round_trip_in_order_and_exactly(memory: AsyncMemory) -> None:
    session = MemvaultSession("s1", memory, user_id="u")
    assert isinstance(session, Session)
    assert await session.get_items() == []
    items: list[Any] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"c":"Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "4 degrees"},
        {"content": "reordered keys", "role": "user"},
        {"role": "user", "content": [{"type": "input_text", "text": "parts"}]},
        {"role": "user", "content": "  padded  "},
    ]
    await session.add_items(items[:2])
    await session.add_items(items[2:])
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[-2:]
    assert await session.get_items(limit=0) == []
    # A plain message is a plain turn of the conversation, found like any turn.
    conversation = await memory.get_conversation("s1", user_id="u")
    assert [t.role for t in conversation.turns or []][:2] == ["user", "assistant"]
    assert (conversation.turns or [])[0].content == "Hello"


async def test_pop_item_and_clear_session(memory: AsyncMemory) -> None:
    session = MemvaultSession("s2", memory, user_id="u")
    other = MemvaultSession("s3", memory, user_id="u")
    await session.add_items([{"role": "user", "content": f"message {i}"} for i in range(3)])
    await other.add_items([{"role": "user", "content": "elsewhere"}])
    assert await session.pop_item() == {"role": "user", "content": "message 2"}
    assert await session.get_items() == [
        {"role": "user", "content": "message 0"},
        {"role": "user", "content": "message 1"},
    ]
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.clear_session()  # clearing an empty session is not an error
    assert await other.get_items() == [{"role": "user", "content": "elsewhere"}]
    await session.add_items([{"role": "user", "content": "again"}])
    assert await session.get_items() == [{"role": "user", "content": "again"}]


class ScriptedModel(Model):
    """Answers each call with the next scripted text; records the input it was given."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        text = self.replies.pop(0)
        message = ResponseOutputMessage(
            id=f"msg_{len(self.inputs)}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        raise NotImplementedError


async def test_a_runner_run_is_stored_as_turns_and_searchable(memory: AsyncMemory) -> None:
    model = ScriptedModel(["Noted: you live in Lisbon.", "You live in Lisbon."])
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = MemvaultSession("run-1", memory, user_id="alice")
    await Runner.run(agent, "I live in Lisbon.", session=session)
    second = await Runner.run(agent, "Where do I live?", session=session)
    assert second.final_output == "You live in Lisbon."
    # The second call saw the first exchange, read back from memvault.
    seen = model.inputs[1]
    assert seen[0] == {"role": "user", "content": "I live in Lisbon."}
    assert seen[1]["type"] == "message" and seen[1]["content"][0]["text"].startswith("Noted")
    conversation = await memory.get_conversation("run-1", user_id="alice")
    assert (conversation.turns or [])[0].content == "I live in Lisbon."
    hits = await memory.search("Lisbon", user_id="alice")
    assert "I live in Lisbon." in [h.content for h in hits.results]


# Ported from the SDK's tests/memory/test_session_limit.py (SQLiteSession there).
async def test_session_settings_limit_bounds_the_history_a_run_sees(memory: AsyncMemory) -> None:
    model = ScriptedModel([f"Reply {i}" for i in range(1, 5)])
    agent = Agent(name="test", model=model)
    session = MemvaultSession("limit_test", memory, user_id="u")
    for i in range(1, 4):
        await Runner.run(agent, f"Message {i}", session=session)
    assert len(await session.get_items()) == 6
    await Runner.run(
        agent,
        "Message 4",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    last_input = model.inputs[-1]
    assert len(last_input) == 3
    assert last_input[0].get("content") == "Message 3"
    assert last_input[1].get("content")[0]["text"] == "Reply 3"
    assert last_input[2].get("content") == "Message 4"
    assert await session.get_items(limit=-1) == []
    assert len(await session.get_items(limit=100)) == 8


async def test_session_settings_as_a_dict_default_and_limit(memory: AsyncMemory) -> None:
    # The SDK's sessions coerce a dict (Runner reads ``.limit``) and default to SessionSettings().
    assert MemvaultSession("d0", memory, user_id="u").session_settings == SessionSettings()
    session = MemvaultSession("d1", memory, user_id="u", session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    await session.add_items([{"role": "user", "content": f"message {i}"} for i in range(4)])
    # get_items() without a limit honours the settings' limit; an explicit one wins.
    assert await session.get_items() == [
        {"role": "user", "content": "message 2"},
        {"role": "user", "content": "message 3"},
    ]
    assert len(await session.get_items(limit=3)) == 3
    model = ScriptedModel(["Reply"])
    await Runner.run(Agent(name="test", model=model), "Message 4", session=session)
    assert [i.get("content") for i in model.inputs[-1]] == ["message 2", "message 3", "Message 4"]


async def test_concurrent_pops_return_both_items(memory: AsyncMemory) -> None:
    # The SDK's session tests: concurrent pop_item calls each get an item, none fails.
    session = MemvaultSession("pops", memory, user_id="u")
    items = [{"role": "user", "content": f"message {i}"} for i in range(2)]
    await session.add_items(items)
    popped = await asyncio.gather(session.pop_item(), session.pop_item())
    assert sorted(popped, key=lambda i: i["content"]) == items
    assert await session.get_items() == []


async def test_tool_call_items_are_kept_but_never_search_hits(memory: AsyncMemory) -> None:
    session = MemvaultSession("tools", memory, user_id="u")
    items: list[Any] = [
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"c":"Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "4 degrees in Oslo"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is 4 degrees in Oslo."}],
        },
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    found = [h.content for h in (await memory.search("Oslo weather", user_id="u")).results]
    assert "What is the weather in Oslo?" in found
    # A message with parts is found by its words; a tool call or its output is not found.
    assert any("It is 4 degrees in Oslo." in text for text in found)
    assert not [text for text in found if '"arguments"' in text or "function_call" in text]
