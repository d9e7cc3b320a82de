"""Lifecycle jobs on cognitive memory, on a fixed clock: cleanup archives idle conversations
and purges expired working-memory rows; ``patterns`` learns strategies from conversations whose
tools worked, at its thresholds, with a dry run, and never the same sequence twice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest

from memvault.config import Settings
from memvault.lifecycle import jobs
from memvault.service import AsyncMemory
from tests.conftest import backend_of

NOW = datetime(2030, 6, 15, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


# --- cleanup ------------------------------------------------------------------------------------


async def test_cleanup_archives_conversations_idle_past_the_setting(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    assert backend_of(store).settings.conversation_archive_after_days == 90
    idle = NOW - 90 * DAY
    when = {
        "just_past": (idle - 2 * DAY, idle - timedelta(seconds=1)),
        "at_threshold": (idle - 2 * DAY, idle),  # idle exactly 90 days: kept
        "old_but_talking": (idle - 100 * DAY, NOW - DAY),
        "never_talked": (idle - timedelta(seconds=1), None),
        "new": (NOW - DAY, None),
    }
    ids: dict[str, UUID] = {}
    for name, (started, last) in when.items():
        ids[name] = (await store.start_conversation(user_id="u")).id
        raw.execute(
            "UPDATE conversations SET started_at = %s, last_turn_at = %s WHERE id = %s",
            (started, last, ids[name]),
        )

    def archived() -> set[str]:
        rows = raw.execute("SELECT id FROM conversations WHERE archived").fetchall()
        return {name for name, ident in ids.items() if (ident,) in rows}

    dry = await jobs.run_job(backend_of(store), "cleanup", dry_run=True, clock=at(NOW))
    assert dry.counts["conversations.would_archive"] == 2 and archived() == set()
    run = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert run.outcome == "ok" and run.counts["conversations.archived"] == 2
    assert archived() == {"just_past", "never_talked"}
    listed = {c.id for c in await store.list_conversations(user_id="u")}
    assert listed == {ids["at_threshold"], ids["old_but_talking"], ids["new"]}
    again = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert again.counts["conversations.archived"] == 0


async def test_cleanup_purges_expired_working_memory_rows(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    assert backend_of(store).settings.redis_url is None  # the UNLOGGED table holds them
    for key in ("gone", "kept"):
        await store.set_context("s", key, key, user_id="u")
    raw.execute(
        "UPDATE working_memory SET expires_at = CASE key WHEN 'gone' THEN %s ELSE %s END",
        (NOW - timedelta(seconds=1), NOW + timedelta(seconds=1)),
    )
    dry = await jobs.run_job(backend_of(store), "cleanup", dry_run=True, clock=at(NOW))
    assert dry.counts["working_memory.would_purge"] == 1
    run = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert run.counts["working_memory.purged"] == 1
    assert raw.execute("SELECT key FROM working_memory").fetchall() == [("kept",)]


# --- patterns -----------------------------------------------------------------------------------


async def _conversation(
    store: AsyncMemory, calls: list[tuple[str, bool]], user: str = "u", channel: str = "_global"
) -> UUID:
    convo = await store.start_conversation(user_id=user, channel=channel)
    for tool, success in calls:
        await store.record_tool_use(
            tool, user_id=user, channel=channel, conversation_id=convo.id, success=success
        )
    return convo.id


def _move_calls(raw: psycopg.Connection[Any], conversation_id: UUID, to: datetime) -> None:
    """The conversation's calls end at ``to``, a second apart, in the order they were made."""
    raw.execute(
        "UPDATE tool_invocations t SET created_at = %(to)s - interval '1 second' * o.rest "
        "FROM (SELECT id, count(*) OVER (ORDER BY created_at DESC, id DESC) - 1 AS rest "
        "FROM tool_invocations WHERE conversation_id = %(c)s) o WHERE t.id = o.id",
        {"to": to, "c": conversation_id},
    )


def _learned(raw: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return raw.execute(
        "SELECT source_conversation_id, tool_sequence, user_id, channel FROM strategies "
        "ORDER BY created_at, source_conversation_id"
    ).fetchall()


async def test_patterns_learns_from_conversations_whose_tools_worked_at_the_thresholds(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    s = backend_of(store).settings
    assert (s.patterns_min_steps, s.patterns_lookback_days, s.patterns_interval_s) == (
        2,
        7,
        3_600,
    )
    worked = await _conversation(store, [("search", True), ("fetch", True), ("sum", True)])
    two = await _conversation(store, [("search", True), ("fetch", True)], channel="proj")
    retried = await _conversation(store, [("search", False), ("search", True), ("fetch", True)])
    ended_badly = await _conversation(store, [("search", True), ("fetch", False)])
    one_tool = await _conversation(store, [("search", True), ("search", True)])
    old = await _conversation(store, [("search", True), ("fetch", True)])
    edge = await _conversation(store, [("search", True), ("fetch", True)])
    for convo in (worked, two, retried, ended_badly, one_tool):
        _move_calls(raw, convo, NOW - timedelta(hours=1))
    _move_calls(raw, old, NOW - 7 * DAY - timedelta(seconds=1))  # outside the lookback
    _move_calls(raw, edge, NOW - 7 * DAY)  # at it: still looked at

    dry = await jobs.run_job(backend_of(store), "patterns", dry_run=True, clock=at(NOW))
    assert (dry.outcome, dry.counts["would_learn"], dry.counts["conversations"]) == ("ok", 4, 6)
    assert _learned(raw) == []

    run = await jobs.run_job(backend_of(store), "patterns", clock=at(NOW))
    assert run.outcome == "ok" and run.counts["learned"] == 4
    learned = {row[0]: row[1:] for row in _learned(raw)}
    assert learned == {
        worked: (["search", "fetch", "sum"], "u", "_global"),
        two: (["search", "fetch"], "u", "proj"),
        retried: (["search", "fetch"], "u", "_global"),
        edge: (["search", "fetch"], "u", "_global"),
    }
    found = await store.find_strategies("search then fetch", user_id="u", limit=10)
    assert {tuple(f.tool_sequence) for f in found} == {
        ("search", "fetch", "sum"),
        ("search", "fetch"),
    }

    again = await jobs.run_job(backend_of(store), "patterns", clock=at(NOW))
    assert again.counts["learned"] == 0 and len(_learned(raw)) == 4  # idempotent

    # The conversation goes on and works further: its longer sequence is new, learned once.
    mail = await store.record_tool_use("mail", user_id="u", conversation_id=worked, success=True)
    raw.execute(
        "UPDATE tool_invocations SET created_at = %s WHERE id = %s",
        (NOW - timedelta(minutes=30), mail.id),
    )
    later = await jobs.run_job(backend_of(store), "patterns", clock=at(NOW))
    assert later.counts["learned"] == 1
    sequences = [r[1] for r in _learned(raw) if r[0] == worked]
    assert sequences == [["search", "fetch", "sum"], ["search", "fetch", "sum", "mail"]]


async def test_patterns_skips_a_sequence_already_learned_by_hand(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    convo = await _conversation(store, [("search", True), ("fetch", True)])
    _move_calls(raw, convo, NOW - timedelta(hours=1))
    await store.learn_strategy("look it up", user_id="u", conversation_id=convo)
    run = await jobs.run_job(backend_of(store), "patterns", clock=at(NOW))
    assert run.counts["learned"] == 0 and len(_learned(raw)) == 1


async def test_patterns_is_a_scheduled_job_with_a_dry_run() -> None:
    job = jobs.JOBS["patterns"]
    assert job.dry_run and job.interval_setting == "patterns_interval_s"
