"""Cognitive memory through ``MemoryClient`` against a real server (uvicorn on 127.0.0.1): each
route of the client's table answers what the library answers, with the library's signature,
and errors come back typed."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator

import pytest

from memvault import AsyncMemory, AsyncMemoryClient, InvalidInput, MemoryClient, NotFound
from memvault.api import create_app
from memvault.cognitive.bundle import MemoryBundle
from memvault.cognitive.kinds import Goal, ToolInvocation
from memvault.config import Settings
from tests.serving import serving

COGNITIVE_METHODS = [
    "start_conversation",
    "list_conversations",
    "get_conversation",
    "add_turns",
    "set_context",
    "get_context_value",
    "delete_context_value",
    "get_context",
    "clear_session",
    "record_tool_use",
    "tool_stats",
    "learn_strategy",
    "find_strategies",
    "reinforce_strategy",
    "add_goal",
    "list_goals",
    "get_goal",
    "complete_goal",
    "get_profile",
    "update_profile",
    "remember",
]


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[MemoryClient]:
    with serving(create_app(make_settings())) as url, MemoryClient(url) as opened:
        yield opened


@pytest.mark.parametrize("name", COGNITIVE_METHODS)
def test_cognitive_client_methods_have_the_library_signatures(name: str) -> None:
    ours, theirs = getattr(AsyncMemoryClient, name), getattr(AsyncMemory, name)
    assert inspect.iscoroutinefunction(ours)
    assert inspect.signature(ours) == inspect.signature(theirs)
    assert typing.get_type_hints(ours) == typing.get_type_hints(theirs)
    assert callable(getattr(MemoryClient, name))


def test_remember_answers_the_bundle_and_its_prompt(client: MemoryClient) -> None:
    convo = client.start_conversation(user_id="ann", title="Lisbon trip")
    turns = client.add_turns(
        convo.id,
        [{"role": "user", "content": "I want to plan a trip to Lisbon in May"}],
        user_id="ann",
        wait=True,
    )
    assert [t.index for t in turns] == [0]
    goal = client.add_goal("book the Lisbon flights", user_id="ann", priority=8)
    bundle = client.remember("Lisbon trip", user_id="ann", conversation_id=str(convo.id))
    assert isinstance(bundle, MemoryBundle)
    assert [g.id for g in bundle.goals] == [goal.id]
    # The session's turn is shown once, under the session, not recalled again.
    assert bundle.working is not None
    assert any("Lisbon in May" in turn["content"] for turn in bundle.working.turns)
    assert not any("Lisbon in May" in item.content for item in bundle.episodic)
    assert bundle.as_prompt().count("Lisbon in May") == 1
    assert client.get_conversation(convo.id, user_id="ann").turns == turns
    assert [c.id for c in client.list_conversations(user_id="ann")] == [convo.id]
    with pytest.raises(InvalidInput):
        client.remember("", user_id="ann")


def test_goals_are_added_blocked_and_completed(client: MemoryClient) -> None:
    first = client.add_goal("ship v1", user_id="ann", priority=7)
    after = client.add_goal("launch", user_id="ann", blocked_by=[first.id])
    assert isinstance(first, Goal) and first.status == "active"
    assert [g.id for g in client.list_goals(user_id="ann", status="blocked")] == [after.id]
    done = client.complete_goal(first.id, user_id="ann", result="shipped")
    assert (done.status, done.result) == ("completed", "shipped") and done.completed_at
    assert client.get_goal(after.id, user_id="ann").status == "active"
    with pytest.raises(NotFound):
        client.complete_goal(after.id, user_id="bob")
    with pytest.raises(InvalidInput):
        client.get_goal("not-a-goal-id", user_id="ann")


def test_working_context_is_set_read_and_cleared(client: MemoryClient) -> None:
    client.set_context("s1", "city", {"name": "Lisbon"}, user_id="ann", ttl_seconds=60)
    client.set_context("s1", "a:b c%", [1, 2], user_id="ann")  # a key the path must quote
    assert client.get_context_value("s1", "city", user_id="ann") == {"name": "Lisbon"}
    assert client.get_context_value("s1", "a:b c%", user_id="ann") == [1, 2]
    context = client.get_context("s1", user_id="ann")
    assert context.values == {"a:b c%": [1, 2], "city": {"name": "Lisbon"}}
    assert client.get_context("s1", user_id="ann", channel="proj").values == {}
    with pytest.raises(NotFound):  # another user's session holds nothing
        client.get_context_value("s1", "city", user_id="bob")
    assert client.delete_context_value("s1", "city", user_id="ann") is None
    with pytest.raises(NotFound):
        client.get_context_value("s1", "city", user_id="ann")
    assert client.clear_session("s1", user_id="ann") == 1
    assert client.get_context("s1", user_id="ann").values == {}


def test_tool_use_is_recorded_and_strategies_are_learned(client: MemoryClient) -> None:
    convo = client.start_conversation(user_id="ann")
    used = client.record_tool_use(
        "send_mail",
        user_id="ann",
        conversation_id=convo.id,
        tool_input={"to": "carla.ruiz@example.com"},
        success=True,
        latency_ms=120.0,
    )
    assert isinstance(used, ToolInvocation)
    assert used.tool_input == {"to": "[REDACTED:email]"} and used.pii == {"email": 1}
    client.record_tool_use("search", user_id="ann", conversation_id=convo.id, success=True)
    (stats, *_) = [s for s in client.tool_stats(user_id="ann") if s.tool_name == "send_mail"]
    assert (stats.uses, stats.success_rate, stats.avg_latency_ms) == (1, 1.0, 120.0)
    learned = client.learn_strategy("mail then search", user_id="ann", conversation_id=convo.id)
    assert learned.tool_sequence == ["send_mail", "search"]
    found = client.find_strategies("mail then search", user_id="ann")
    assert [s.id for s in found] == [learned.id]
    assert client.reinforce_strategy(learned.id, user_id="ann", success=True).success_count == 1
    with pytest.raises(NotFound):
        client.record_tool_use("search", user_id="bob", conversation_id=convo.id, success=True)


def test_the_profile_is_updated_and_read(client: MemoryClient) -> None:
    updated = client.update_profile(user_id="ann", communication_style="brief")
    assert updated.communication_style == "brief"
    assert client.get_profile(user_id="ann").communication_style == "brief"


def test_what_the_client_sends_is_what_the_library_takes(client: MemoryClient) -> None:
    with pytest.raises(InvalidInput):  # checked before anything is sent, as the library does
        client.add_goal("x", user_id="ann", priority=11)
    with pytest.raises(InvalidInput):
        client.set_context("s1", "k", 1, user_id="ann", ttl_seconds=0)
    with pytest.raises(InvalidInput):
        client.get_context("s1", user_id="ann", not_an_argument=1)
