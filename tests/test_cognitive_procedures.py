"""Procedural memory, goals, profiles and the promotion rule."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import AsyncMemory, InvalidInput, NotFound
from memvault.cognitive.profile import profile_update_from_facts
from memvault.cognitive.strategies import scrub, strategy_score, success_weight
from memvault.graph.promotion import PromotionThresholds, is_prominent

# --- tool use -----------------------------------------------------------------------------------


async def test_tool_use_is_pii_filtered_sealed_and_counted(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    convo = await memory.start_conversation(user_id="ann", channel="proj")
    used = await memory.record_tool_use(
        "send_mail",
        user_id="ann",
        channel="proj",
        conversation_id=convo.id,
        turn_index=0,
        tool_input={"to": "carla.ruiz@example.com", "body": "see you at 5"},
        tool_output="sent",
        success=True,
        latency_ms=120.0,
    )
    assert used.tool_input == {"to": "[REDACTED:email]", "body": "see you at 5"}
    assert used.pii == {"email": 1}
    await memory.record_tool_use(
        "send_mail", user_id="ann", channel="proj", success=False, latency_ms=80.0, error="timeout"
    )
    await memory.record_tool_use("search", user_id="ann", success=True)
    stats = {(s.tool_name, s.channel): s for s in await memory.tool_stats(user_id="ann")}
    mail = stats[("send_mail", "proj")]
    assert (mail.uses, mail.success_rate, mail.avg_latency_ms) == (2, 0.5, 100.0)
    assert stats[("search", "_global")].avg_latency_ms is None
    assert [s.tool_name for s in await memory.tool_stats(user_id="ann", channel="_global")] == [
        "search"
    ]
    for (blob,) in raw.execute("SELECT ciphertext FROM tool_invocations"):
        assert b"see you" not in blob and b"timeout" not in blob
    with pytest.raises(NotFound):
        await memory.record_tool_use(
            "search", user_id="bob", conversation_id=convo.id, success=True
        )


def test_scrub_keeps_the_shape_and_redacts_numbers_sent_as_numbers() -> None:
    found: dict[str, int] = {}
    value = {"card": 4111111111111111, "n": 42, "list": ["call 415-555-0100"], "ok": True}
    out = scrub(value, "redact", found)
    assert out["n"] == 42 and out["ok"] is True
    assert "4111" not in str(out["card"]) and "555-0100" not in out["list"][0]
    assert scrub(value, "allow", {}) == value


# --- strategies ---------------------------------------------------------------------------------


async def test_strategies_learned_from_a_conversation_and_ranked_by_success(
    memory: AsyncMemory,
) -> None:
    convo = await memory.start_conversation(user_id="ann")
    for tool, ok in (
        ("search_flights", True),
        ("search_flights", True),
        ("pay", False),
        ("book", True),
    ):
        await memory.record_tool_use(tool, user_id="ann", conversation_id=convo.id, success=ok)
    learned = await memory.learn_strategy(
        "book a flight for a trip", user_id="ann", conversation_id=convo.id
    )
    assert learned.tool_sequence == ["search_flights", "book"]
    twin = await memory.learn_strategy(
        "book a flight for a trip", user_id="ann", tool_sequence=["ask_agent"]
    )
    other = await memory.learn_strategy(
        "water the garden plants", user_id="ann", tool_sequence=["valve"], channel="home"
    )
    for _ in range(3):
        await memory.reinforce_strategy(twin.id, user_id="ann", success=False)
    reinforced = await memory.reinforce_strategy(learned.id, user_id="ann", success=True)
    assert (reinforced.success_count, reinforced.failure_count) == (1, 0)
    assert reinforced.last_used is not None

    found = await memory.find_strategies("book flights for my holiday", user_id="ann")
    assert [s.id for s in found] == [learned.id, twin.id]  # the channel 'home' is not recalled
    assert found[0].similarity == pytest.approx(found[1].similarity)
    assert found[0].score == pytest.approx(found[0].similarity * 2 / 3)
    in_home = await memory.find_strategies("water plants", user_id="ann", channel="home")
    assert in_home[0].id == other.id and in_home[0].channel == "home"
    assert await memory.find_strategies("book flights", user_id="bob") == []
    with pytest.raises(NotFound):
        await memory.reinforce_strategy(learned.id, user_id="bob", success=True)
    with pytest.raises(InvalidInput):
        await memory.learn_strategy("nothing to learn from", user_id="ann")
    empty = await memory.start_conversation(user_id="ann")
    with pytest.raises(InvalidInput):
        await memory.learn_strategy("nothing", user_id="ann", conversation_id=empty.id)


@given(st.floats(0, 1), st.integers(0, 1000), st.integers(0, 1000), st.integers(1, 1000))
def test_a_success_never_lowers_a_strategy_and_a_failure_never_raises_it(
    similarity: float, successes: int, failures: int, more: int
) -> None:
    base = strategy_score(similarity, successes, failures)
    assert strategy_score(similarity, successes + more, failures) >= base
    assert strategy_score(similarity, successes, failures + more) <= base
    assert 0 < success_weight(successes, failures) < 1


# --- goals --------------------------------------------------------------------------------------


async def test_goal_lifecycle_subgoals_and_blocking(memory: AsyncMemory) -> None:
    trip = await memory.add_goal("plan the Lisbon trip", user_id="ann", priority=8)
    visa = await memory.add_goal("renew passport", user_id="ann", parent_id=trip.id)
    flights = await memory.add_goal(
        "book flights", user_id="ann", parent_id=trip.id, blocked_by=[visa.id], priority=9
    )
    assert flights.status == "blocked" and flights.blocked_by == [visa.id]
    assert flights.parent_id == trip.id
    assert [g.id for g in await memory.list_goals(user_id="ann", status="blocked")] == [flights.id]
    assert [g.id for g in await memory.list_goals(user_id="ann", status="active")] == [
        trip.id,
        visa.id,
    ]
    done = await memory.complete_goal(visa.id, user_id="ann", result="renewed on 2 May")
    assert done.status == "completed" and done.completed_at is not None
    assert done.result == "renewed on 2 May"
    assert (await memory.get_goal(flights.id, user_id="ann")).status == "active"
    dropped = await memory.complete_goal(trip.id, user_id="ann", status="abandoned")
    assert dropped.status == "abandoned"
    assert {g.id for g in await memory.list_goals(user_id="ann")} == {trip.id, visa.id, flights.id}
    for call in (
        memory.get_goal(trip.id, user_id="bob"),
        memory.complete_goal(trip.id, user_id="bob"),
        memory.add_goal("sneaky", user_id="bob", parent_id=trip.id),
        memory.add_goal("sneaky", user_id="bob", blocked_by=[trip.id]),
        memory.for_tenant("other").get_goal(trip.id, user_id="ann"),
    ):
        with pytest.raises(NotFound):
            await call
    with pytest.raises(InvalidInput):
        await memory.complete_goal(trip.id, user_id="ann", status="active")
    with pytest.raises(InvalidInput):
        await memory.add_goal("x", user_id="ann", priority=11)


async def test_a_goal_blocked_by_an_abandoned_goal_is_unblocked(memory: AsyncMemory) -> None:
    first = await memory.add_goal("first", user_id="ann")
    second = await memory.add_goal("second", user_id="ann", blocked_by=[first.id])
    await memory.complete_goal(first.id, user_id="ann", status="abandoned")
    assert (await memory.get_goal(second.id, user_id="ann")).status == "active"


# --- profile ------------------------------------------------------------------------------------


async def test_profile_merges_project_over_global(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await memory.update_profile(
        user_id="ann",
        preferences={"units": "metric", "tone": "warm"},
        expertise=["python"],
        communication_style="brief",
    )
    await memory.update_profile(user_id="ann", channel="work", preferences={"tone": "formal"})
    mine = await memory.get_profile(user_id="ann", channel="work")
    assert mine.preferences == {"units": "metric", "tone": "formal"}
    assert (mine.expertise, mine.communication_style, mine.channel) == (["python"], "brief", "work")
    updated = await memory.update_profile(user_id="ann", preferences={"units": None})
    assert updated.preferences == {"tone": "warm"} and updated.expertise == ["python"]
    assert (await memory.get_profile(user_id="bob")).preferences == {}
    for (blob,) in raw.execute("SELECT ciphertext FROM user_profiles"):
        assert b"metric" not in blob and b"formal" not in blob


async def test_profile_from_extracted_facts(memory: AsyncMemory) -> None:
    facts = [
        ("ann", "prefers", "window seats"),
        ("ann", "dislikes", "red-eye flights"),
        ("ann", "expert_in", "rust"),
        ("ann", "communication_style", "bullet points"),
        ("ann", "lives_in", "Porto"),
    ]
    assert profile_update_from_facts([facts[-1]]) == {}
    profile = await memory.update_profile_from_facts(facts, user_id="ann")
    assert profile.preferences == {"window seats": True, "red-eye flights": False}
    assert (profile.expertise, profile.communication_style) == (["rust"], "bullet points")


# --- promotion ----------------------------------------------------------------------------------

RULE = PromotionThresholds()


@pytest.mark.parametrize(
    ("confidence", "accesses", "conversations", "promoted"),
    [
        (0.85, 5, 2, True),  # exactly at every threshold
        (0.849, 5, 2, False),
        (0.851, 5, 2, True),
        (0.85, 4, 2, False),
        (0.85, 6, 2, True),
        (0.85, 5, 1, False),
        (0.85, 5, 3, True),
        (1.0, 100, 1, False),
        (0.5, 100, 10, False),
    ],
)
def test_promotion_at_and_around_each_threshold(
    confidence: float, accesses: int, conversations: int, promoted: bool
) -> None:
    assert is_prominent(confidence, accesses, conversations, RULE) is promoted


def test_promotion_thresholds_are_settings(make_settings: Any) -> None:
    rule = PromotionThresholds.of(
        make_settings(
            promotion_min_confidence=0.5,
            promotion_min_access_count=1,
            promotion_min_conversations=1,
        )
    )
    assert is_prominent(0.5, 1, 1, rule) and not is_prominent(0.49, 1, 1, rule)


async def test_a_turn_index_past_the_column_is_invalid_input_not_a_server_error(
    memory: AsyncMemory,
) -> None:
    with pytest.raises(InvalidInput):  # found by tests/test_openapi_fuzz.py as a 500
        await memory.record_tool_use("search", user_id="ann", turn_index=2**31, success=True)
    used = await memory.record_tool_use("search", user_id="ann", turn_index=2**31 - 1, success=True)
    assert used.turn_index == 2**31 - 1
