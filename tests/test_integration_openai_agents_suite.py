"""The OpenAI Agents SDK's own session tests, ported for ``MemvaultSession``.

Each test names the peer test it ports: suite openai/openai-agents-python, file
``tests/memory/test_session.py`` (session) or ``tests/extensions/memory/
test_sqlalchemy_session.py`` (sqlalchemy), and the test. What they assert of a session is kept;
what they assert of their SQLite or SQLAlchemy internals (locks, connections, corrupt rows
written by hand, table names) is not: docs/integrations.md names those, and
``bench/peer_suites.py`` runs the peers' files themselves. A peer's database file is a memvault
user here: two sessions "on one file" are two sessions of one user.

One memvault store serves the module; each test uses users of its own."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, set_tracing_disabled
from agents.memory import SessionSettings
from agents.testing import ScriptedModel
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from memvault import AsyncMemory
from memvault.integrations.openai_agents import MemvaultSession


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture(scope="module")
def shared(module_memory: AsyncMemory) -> AsyncMemory:
    return module_memory


@pytest.fixture
def user() -> str:
    """The peer's database file: a user of its own."""
    return f"sdk-{uuid.uuid4().hex[:12]}"


def _said(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


def _reply(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="m",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


async def test_sqlite_session_memory_pop_item(shared: AsyncMemory, user: str) -> None:
    # session: test_sqlite_session_memory_pop_item, test_sqlite_session_memory_direct;
    # sqlalchemy: test_pop_from_empty_session
    session = MemvaultSession("pop_test", shared, user_id=user)
    assert await session.pop_item() is None
    await session.add_items(
        [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
    )
    assert len(await session.get_items()) == 3
    assert await session.pop_item() == {"role": "user", "content": "How are you?"}
    assert _said(await session.get_items()) == ["Hello", "Hi there!"]
    assert await session.pop_item() == {"role": "assistant", "content": "Hi there!"}
    assert await session.pop_item() == {"role": "user", "content": "Hello"}
    assert await session.pop_item() is None
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "again"}])
    await session.clear_session()
    assert await session.get_items() == []
    session.close()


async def test_session_memory_pop_different_sessions(shared: AsyncMemory, user: str) -> None:
    # session: test_session_memory_pop_different_sessions; sqlalchemy: test_session_isolation
    one = MemvaultSession("session_1", shared, user_id=user)
    two = MemvaultSession("session_2", shared, user_id=user)
    await one.add_items([{"role": "user", "content": "Session 1 message"}])
    await two.add_items(
        [
            {"role": "user", "content": "Session 2 message 1"},
            {"role": "user", "content": "Session 2 message 2"},
        ]
    )
    popped = await two.pop_item()
    assert popped is not None and popped["content"] == "Session 2 message 2"
    assert _said(await one.get_items()) == ["Session 1 message"]
    assert _said(await two.get_items()) == ["Session 2 message 1"]
    await two.clear_session()
    assert _said(await one.get_items()) == ["Session 1 message"]


async def test_sqlite_session_get_items_with_limit(shared: AsyncMemory, user: str) -> None:
    # session: test_sqlite_session_get_items_with_limit; sqlalchemy: test_get_items_with_limit,
    # test_get_items_limit_returns_fewer_when_history_exhausted
    session = MemvaultSession("count_test", shared, user_id=user)
    said = [f"{who} {n}" for n in (1, 2, 3) for who in ("Message", "Response")]
    await session.add_items(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(said)]
    )
    assert _said(await session.get_items()) == said
    assert _said(await session.get_items(limit=2)) == said[-2:]
    assert _said(await session.get_items(limit=4)) == said[-4:]
    assert _said(await session.get_items(limit=10)) == said
    assert await session.get_items(limit=0) == []


async def test_add_items_keep_their_order_and_text(shared: AsyncMemory, user: str) -> None:
    # session: test_sqlite_session_unicode_content,
    # test_sqlite_session_special_characters_and_sql_injection; sqlalchemy:
    # test_sqlalchemy_session_direct_ops, test_add_empty_items_list,
    # test_sqlalchemy_session_can_store_non_ascii_without_escaping
    session = MemvaultSession("special_chars_test", shared, user_id=user)
    said = [
        "こんにちは",
        "😊👍",
        "Привет",
        "O'Reilly",
        "DROP TABLE sessions;",
        '"SELECT * FROM users WHERE name = "admin";"',
        "Robert'); DROP TABLE students;--",
        "Normal message",
    ]
    await session.add_items([])
    assert await session.get_items() == []
    await session.add_items(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(said)]
    )
    assert _said(await session.get_items()) == said


async def test_sqlite_session_concurrent_access(shared: AsyncMemory, user: str) -> None:
    # session: test_sqlite_session_concurrent_access (writes from threads, each with a loop of
    # its own; 10 items there, 6 here); sqlalchemy:
    # test_concurrent_pop_item_returns_each_row_once
    session = MemvaultSession("concurrent_test", shared, user_id=user)
    items = [{"role": "user", "content": f"Message {i}"} for i in range(6)]

    def add_item(item: dict[str, Any]) -> None:
        asyncio.run(session.add_items([item]))

    def add_all() -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as executor:
            list(executor.map(add_item, items))

    # The threads' calls run on the loop that owns the memory (this one): it must not be
    # blocked while they wait (the peer's SQLiteSession does its work in threads instead).
    await asyncio.to_thread(add_all)
    assert set(_said(await session.get_items())) == {f"Message {i}" for i in range(6)}
    other = MemvaultSession("concurrent_test", shared, user_id=user)
    popped = await asyncio.gather(*(s.pop_item() for s in [session, other] * 3))
    assert sorted(_said(popped)) == sorted(f"Message {i}" for i in range(6))
    assert await session.get_items() == []


async def test_session_settings(shared: AsyncMemory, user: str) -> None:
    # session: test_session_settings_default, test_session_settings_constructor,
    # test_session_settings_constructor_normalizes_dictionary,
    # test_session_settings_rejects_unknown_dictionary_fields,
    # test_get_items_uses_session_settings_limit,
    # test_get_items_explicit_limit_overrides_session_settings
    default = MemvaultSession("default_settings_test", shared, user_id=user)
    assert isinstance(default.session_settings, SessionSettings)
    assert default.session_settings.limit is None
    given = MemvaultSession("c", shared, user_id=user, session_settings=SessionSettings(limit=5))
    assert given.session_settings.limit == 5
    as_dict = MemvaultSession("d", shared, user_id=user, session_settings={"limit": 0})
    assert isinstance(as_dict.session_settings, SessionSettings)
    assert as_dict.session_settings.limit == 0
    assert as_dict.session_settings.resolve({"limit": 4}).limit == 4  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        MemvaultSession("e", shared, user_id=user, session_settings={"limitt": 1})
    limited = MemvaultSession("f", shared, user_id=user, session_settings=SessionSettings(limit=3))
    await limited.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)])
    assert _said(await limited.get_items()) == ["Message 2", "Message 3", "Message 4"]
    assert _said(await limited.get_items(limit=2)) == ["Message 3", "Message 4"]


async def test_session_memory_with_runner(shared: AsyncMemory, user: str) -> None:
    # session: test_session_memory_basic_functionality_parametrized,
    # test_session_memory_different_sessions_parametrized,
    # test_session_memory_appends_list_input_by_default ("run"; "run_sync" and "run_streamed"
    # store the same through the same session calls); sqlalchemy: test_runner_integration
    session = MemvaultSession("runner", shared, user_id=user)
    other = MemvaultSession("runner-2", shared, user_id=user)
    model = ScriptedModel([[_reply("San Francisco")], [_reply("California")], [_reply("Hi")]])
    agent = Agent(name="test", model=model)
    first = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    assert first.final_output == "San Francisco"
    second = await Runner.run(agent, "What state is it in?", session=session)
    assert second.final_output == "California"
    # The second turn was run with the first in its input.
    assert model.last_call is not None and "Golden Gate Bridge" in str(model.last_call.input)
    stored = await session.get_items()
    assert [i.get("role") for i in stored] == ["user", "assistant", "user", "assistant"]
    await Runner.run(agent, [{"role": "user", "content": "list input"}], session=other)
    assert [i.get("content") for i in await other.get_items()][:1] == ["list input"]
    assert len(await session.get_items()) == 4
