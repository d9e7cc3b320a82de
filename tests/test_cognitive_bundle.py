"""The remember() bundle as an agent pastes it: each text once, what happened lately, strategies
as steps, entities with something behind them, through the library and over REST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory
from memvault.admin import AsyncAdmin
from memvault.cognitive.kinds import Turn
from tests.conftest import backend_of

TRIP: list[dict[str, Any]] = [
    {"role": "user", "content": "I want to spend a week in Lisbon in May."},
    {"role": "assistant", "content": "Lisbon in May is lovely: warm, and before the crowds."},
    {"role": "user", "content": "Find me a hotel in Alfama, close to the river."},
    {"role": "assistant", "content": "Memmo Alfama has river views and a rooftop pool."},
    {"role": "user", "content": "Book the Memmo Alfama for the first week of May."},
]


def _tokens(memory: AsyncMemory, text: str) -> int:
    return len(backend_of(memory).embeddings.primary.tokenizer().spans(text))


def _body(prompt: str) -> list[str]:
    return [line for line in prompt.splitlines() if not line.startswith("## ")]


async def _trip(memory: AsyncMemory) -> str:
    convo = await memory.start_conversation(user_id="kate", title="Lisbon")
    turns: list[Turn | dict[str, Any]] = [*TRIP]
    await memory.add_turns(convo.id, turns, user_id="kate", wait=True)
    return str(convo.id)


@pytest.mark.parametrize("budget", [60, 120, 1000])
async def test_a_session_turn_is_not_recalled_again_under_relevant_memories(
    memory: AsyncMemory, budget: int
) -> None:
    convo = await _trip(memory)
    bundle = await memory.remember(
        "the hotel in Lisbon", user_id="kate", conversation_id=convo, budget_tokens=budget
    )
    prompt = bundle.as_prompt()
    said = [turn["content"] for turn in TRIP]
    assert not {i.content for i in bundle.episodic} & set(said)
    for text in said:
        assert prompt.count(text) <= 1
    assert len(_body(prompt)) == len(set(_body(prompt)))
    # The budget is spent on what is shown, each text once, and counted exactly.
    assert bundle.tokens == _tokens(memory, prompt) <= budget
    if budget == 1000:
        assert all(text in prompt for text in said)
        assert bundle.diagnostics.duplicates_dropped >= len(said)


async def test_a_fact_and_the_memory_it_came_from_are_one_item_the_fact_first(
    memory: AsyncMemory,
) -> None:
    said = "I live in Munich and I work for Acme."
    stored = await memory.add(said, user_id="kate", wait=True)
    bundle = await memory.remember("where does kate work?", user_id="kate")
    prompt = bundle.as_prompt()
    assert prompt.count(said) == 1
    assert str(stored.id) not in {i.id for i in bundle.episodic}
    lines = prompt.splitlines()
    carrier = lines.index(f"  source: {said}")
    assert lines[carrier - 1].startswith("- [fact, ")
    fact = next(i for i in bundle.facts if i.detail.get("sources"))
    assert [s["content"] for s in fact.detail["sources"]] == [said]
    # Both facts learned from it name it; the text is shown under the first only.
    assert sum(str(stored.id) in f.detail["memory_ids"] for f in bundle.facts) == 2
    assert bundle.tokens == _tokens(memory, prompt)
    # Reading it counts as reading the memory it came from.
    await backend_of(memory).access.flush()
    assert (await memory.get(stored.id, user_id="kate")).access_count == 1


async def test_what_happened_shows_finished_goals_and_tool_outcomes(memory: AsyncMemory) -> None:
    convo = await _trip(memory)
    goal = await memory.add_goal("Book a hotel in Lisbon", user_id="kate")
    await memory.add_goal("Learn some Portuguese", user_id="kate")
    await memory.complete_goal(goal.id, user_id="kate", result="booked Memmo Alfama")
    await memory.record_tool_use(
        "hotel_search",
        user_id="kate",
        conversation_id=convo,
        tool_input={"city": "Lisbon", "area": "Alfama"},
        tool_output=[{"name": "Memmo Alfama", "price": 240}, {"name": "Solar do Castelo"}],
        success=True,
    )
    await memory.record_tool_use(
        "pay", user_id="kate", conversation_id=convo, success=False, error="card declined"
    )
    await memory.record_tool_use(
        "book_hotel",
        user_id="kate",
        conversation_id=convo,
        tool_output={"hotel": "Memmo Alfama", "confirmation": "MA-2291", "log": "x" * 5_000},
        success=True,
    )
    for n in range(6):  # other sessions' calls, later than this one's
        await memory.record_tool_use(
            "weather", user_id="kate", tool_output=f"sunny {n}", success=True
        )

    bundle = await memory.remember("my Lisbon trip", user_id="kate", conversation_id=convo)
    prompt = bundle.as_prompt()
    assert [(g.description, g.result) for g in bundle.finished_goals] == [
        ("Book a hotel in Lisbon", "booked Memmo Alfama")
    ]
    assert [g.description for g in bundle.goals] == ["Learn some Portuguese"]
    # This session's calls first (the latest first), then the user's latest; five at most.
    assert [(o.tool_name, o.success) for o in bundle.tool_outcomes] == [
        ("book_hotel", True),
        ("pay", False),
        ("hotel_search", True),
        ("weather", True),
        ("weather", True),
    ]
    assert [o.summary for o in bundle.tool_outcomes][-2:] == ["sunny 5", "sunny 4"]
    booked = bundle.tool_outcomes[0]
    assert "MA-2291" in booked.summary and len(booked.summary) <= 200
    section = prompt.split("## What happened\n", 1)[1].split("\n## ", 1)[0].splitlines()
    assert section[0].startswith("- [goal completed ")
    assert section[0].endswith("Book a hotel in Lisbon -> booked Memmo Alfama")
    assert section[1].startswith("- [tool book_hotel succeeded ") and "MA-2291" in section[1]
    assert section[2].startswith("- [tool pay failed ") and section[2].endswith(": card declined")
    assert len(section) == 6
    assert bundle.tokens == _tokens(memory, prompt) <= bundle.budget_tokens

    # Asked as of before any of it happened, nothing had.
    before = await memory.remember(
        "my Lisbon trip",
        user_id="kate",
        conversation_id=convo,
        reference_time=datetime.now(UTC) - timedelta(days=1),
    )
    assert before.finished_goals == [] and before.tool_outcomes == []
    assert "## What happened" not in before.as_prompt()
    # Another user's calls and goals are not theirs to see.
    other = await memory.remember("my Lisbon trip", user_id="erin")
    assert other.finished_goals == [] and other.tool_outcomes == []


async def test_strategies_read_as_numbered_steps_with_their_record(memory: AsyncMemory) -> None:
    given = await memory.learn_strategy(
        "Book a hotel", user_id="kate", tool_sequence=["hotel_search", "book_hotel"]
    )
    for success in (True, True, True, False):
        await memory.reinforce_strategy(given.id, user_id="kate", success=success)
    bundle = await memory.remember("book a hotel", user_id="kate", include=["procedural"])
    assert (
        "- [strategy, _global] Book a hotel: 1. hotel_search 2. book_hotel "
        "(3 succeeded, 1 failed)" in bundle.as_prompt().splitlines()
    )


async def test_a_learned_strategy_names_its_steps_once(memory: AsyncMemory) -> None:
    convo = await _trip(memory)
    for tool in ("hotel_search", "book_hotel"):
        await memory.record_tool_use(tool, user_id="kate", conversation_id=convo, success=True)
    run = await AsyncAdmin.of(memory).run_scheduled("patterns")
    assert run.counts["learned"] == 1
    # A description that only restates the steps (as the did) is not said twice.
    await memory.learn_strategy(
        "hotel_search -> book_hotel", user_id="erin", tool_sequence=["hotel_search", "book_hotel"]
    )
    for user in ("kate", "erin"):
        bundle = await memory.remember(
            "hotel_search book_hotel", user_id=user, include=["procedural"]
        )
        [line] = [x for x in _body(bundle.as_prompt()) if x.startswith("- [strategy, ")]
        assert line.count("hotel_search") == 1 and line.count("book_hotel") == 1
        assert line.endswith(": 1. hotel_search 2. book_hotel (no outcomes recorded yet)")


async def test_entities_are_shown_only_with_something_behind_them(memory: AsyncMemory) -> None:
    await memory.add(
        "Quick question: I talked to Priya about the roadmap.", user_id="kate", wait=True
    )
    await memory.add("I live in Munich.", user_id="kate", wait=True)
    bundle = await memory.remember("Priya roadmap Munich", user_id="kate")
    shown = [i.content for i in bundle.entities]
    # Munich has a fact about it; Priya is mentioned once, and "Quick" is no name at all.
    assert any(c.startswith("Munich") for c in shown)
    assert not any(c.startswith(("Priya", "Quick")) for c in shown)
    assert bundle.diagnostics.entities_below_bar >= 1

    await memory.add("I got the roadmap draft from Priya.", user_id="kate", wait=True)
    again = await memory.remember("Priya roadmap Munich", user_id="kate")
    assert any(i.content.startswith("Priya") for i in again.entities)  # mentioned twice now
    assert "- [entity, _global] Priya" in again.as_prompt()


def test_over_rest_the_bundle_shows_each_text_once_and_what_happened(client: TestClient) -> None:
    user = {"user_id": "kate"}
    convo = client.post("/v1/conversations", json={**user, "title": "Lisbon"})
    assert convo.status_code in (200, 201), convo.text
    cid = convo.json()["id"]
    turns = client.post(f"/v1/conversations/{cid}/turns?wait=true", json={**user, "turns": TRIP})
    assert turns.status_code in (200, 201), turns.text
    goal = client.post("/v1/goals", json={**user, "description": "Book a hotel in Lisbon"}).json()
    done = client.post(
        f"/v1/goals/{goal['id']}/complete", json={**user, "result": "booked Memmo Alfama"}
    )
    assert done.status_code == 200, done.text
    call = client.post(
        "/v1/tools/invocations",
        json={
            **user,
            "tool_name": "book_hotel",
            "conversation_id": cid,
            "tool_output": {"hotel": "Memmo Alfama", "confirmation": "MA-2291"},
            "success": True,
        },
    )
    assert call.status_code in (200, 201), call.text
    strategy = client.post(
        "/v1/strategies",
        json={
            **user,
            "description": "Book a hotel",
            "tool_sequence": ["hotel_search", "book_hotel"],
        },
    ).json()
    for success in (True, False):
        client.post(f"/v1/strategies/{strategy['id']}/reinforce", json={**user, "success": success})

    answer = client.post(
        "/v1/remember", json={**user, "query": "book the hotel in Lisbon", "conversation_id": cid}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    prompt = body["prompt"]
    for turn in TRIP:
        assert prompt.count(turn["content"]) == 1
    assert not {i["content"] for i in body["episodic"]} & {t["content"] for t in TRIP}
    assert len(_body(prompt)) == len(set(_body(prompt)))
    assert "## What happened" in prompt and "-> booked Memmo Alfama" in prompt
    assert body["finished_goals"][0]["result"] == "booked Memmo Alfama"
    assert body["tool_outcomes"][0]["tool_name"] == "book_hotel"
    assert "MA-2291" in body["tool_outcomes"][0]["summary"]
    assert "Book a hotel: 1. hotel_search 2. book_hotel (1 succeeded, 1 failed)" in prompt
    assert body["diagnostics"]["duplicates_dropped"] >= len(TRIP)
    assert body["tokens"] <= body["budget_tokens"]


async def test_a_turn_of_another_conversation_is_shown_under_the_fact_learned_from_it(
    memory: AsyncMemory,
) -> None:
    said = "I live in Munich and I work for Acme."
    earlier = await memory.start_conversation(user_id="kate", title="moving")
    await memory.add_turns(
        earlier.id, [{"role": "user", "content": said}], user_id="kate", wait=True
    )
    convo = await _trip(memory)
    bundle = await memory.remember("where do I live?", user_id="kate", conversation_id=convo)
    prompt = bundle.as_prompt()
    assert prompt.count(said) == 1
    [carrier] = [f for f in bundle.facts if f.detail.get("sources")]
    [source] = carrier.detail["sources"]
    assert (source["content"], source["conversation_id"], source["turn_index"]) == (
        said,
        str(earlier.id),
        0,
    )
    assert said not in {i.content for i in bundle.episodic}
    assert bundle.tokens == _tokens(memory, prompt)


async def test_the_sessions_active_goal_is_shown_once(memory: AsyncMemory) -> None:
    convo = await _trip(memory)
    await memory.add_goal("Book a hotel in Lisbon", user_id="kate")
    await memory.set_active_goal(convo, "Book a hotel in Lisbon", user_id="kate")
    bundle = await memory.remember("hotel", user_id="kate", conversation_id=convo)
    prompt = bundle.as_prompt()
    assert prompt.count("Book a hotel in Lisbon") == 1
    assert "- Book a hotel in Lisbon (priority 5)" in prompt.splitlines()
