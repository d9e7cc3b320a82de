"""A date in a memory's text becomes when it happened, unless the caller said when."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from memvault import Settings
from memvault.pipeline.rules import enrich
from memvault.service import AsyncMemory


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


def last_tuesday_noon(now: datetime) -> datetime:
    back = (now.weekday() - 1) % 7 or 7
    day = (now - timedelta(days=back)).date()
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


async def test_a_dated_event_sets_occurred_at_and_says_so(memory: AsyncMemory) -> None:
    before = datetime.now(UTC)
    added = await memory.add("Last Tuesday I started a new job at Acme", user_id="ann")
    after = datetime.now(UTC)
    assert added.sources["occurred_at"] == "rules"
    assert added.occurred_at in {last_tuesday_noon(before), last_tuesday_noon(after)}
    stored = await memory.get(added.id, user_id="ann")
    assert stored.occurred_at == added.occurred_at


async def test_a_given_occurred_at_is_never_overwritten(memory: AsyncMemory) -> None:
    given = datetime(2023, 6, 14, 9, tzinfo=UTC)
    added = await memory.add("Yesterday I flew to Lisbon", user_id="ann", occurred_at=given)
    assert added.occurred_at == given
    assert added.sources["occurred_at"] == "given"


async def test_a_statement_without_a_date_keeps_the_time_it_was_stored(
    memory: AsyncMemory,
) -> None:
    added = await memory.add("I like jazz", user_id="ann")
    assert "occurred_at" not in added.sources
    assert abs(added.occurred_at - added.created_at) < timedelta(seconds=5)


async def test_a_time_bound_question_finds_the_event_by_its_own_date(memory: AsyncMemory) -> None:
    recent = await memory.add("Two days ago I started a new job at Acme", user_id="ann")
    await memory.add("Two months ago I started a pottery class", user_id="ann")
    found = await memory.search(
        "what did I start in the past week?", user_id="ann", time_mode="filter"
    )
    assert [hit.id for hit in found.results] == [recent.id]


async def test_recency_ranks_only_when_the_question_asks_what_is_latest(
    memory: AsyncMemory,
) -> None:
    now = datetime.now(UTC)
    old = await memory.add(
        "The garden roses need pruning", user_id="ann", occurred_at=now - timedelta(days=40)
    )
    new = await memory.add(
        "The garden roses have aphids", user_id="ann", occurred_at=now - timedelta(days=2)
    )

    def boost_gap(hits: list[Any]) -> float:
        """How much more than relevance the newer memory gained over the older one."""
        by_id = {h.id: h.score - h.scores["relevance"] for h in hits}
        return by_id[new.id] - by_id[old.id]

    plain = await memory.search("garden roses", user_id="ann", track_access=False)
    latest = await memory.search("any news about the garden roses?", user_id="ann")
    assert boost_gap(plain.results) < 0.05  # a tie-breaker
    assert boost_gap(latest.results) > 0.3
    assert latest.results[0].id == new.id
    assert latest.diagnostics.time is not None


async def test_a_date_phrase_gives_the_same_day_for_when_and_until(memory: AsyncMemory) -> None:
    """A write reads a date for two uses, when its event happens (``occurred_at``) and when it
    stops being true (``valid_until``): the same phrase must name the same day for both."""
    for text in (
        "I fly to Lisbon on 14 June 2031",
        "The conference is on 2031-06-20",
        "Dentist appointment on 3 March 2031",
        "Our offsite is in July 2031",
    ):
        added = await memory.add(text, user_id="ann", infer=False)
        assert added.valid_until is not None and added.sources["occurred_at"] == "rules", text
        assert added.occurred_at is not None and added.occurred_at <= added.valid_until, text
        if "July" not in text:  # a month: the event at its middle, true until its end
            assert added.occurred_at.date() == added.valid_until.date(), text
        else:
            assert (added.occurred_at.month, added.valid_until.month) == (7, 7), text


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("We're going hiking this Saturday", date(2024, 5, 11)),
        ("Dinner with Sam on Friday", date(2024, 5, 10)),
        ("We're going to Japan in March", date(2025, 3, 16)),
        ("I'm in Paris until 5 June", None),  # an open bound: no event day, an expiry
    ],
)
def test_a_relative_phrase_is_read_once_for_when_and_until(text: str, day: date | None) -> None:
    """Relative phrases resolve one way for both uses: a plan's "this Saturday", "on Friday"
    and "in March" are the ones ahead, and the memory holds until that day is over."""
    said = datetime(2024, 5, 8, 9, tzinfo=UTC)  # a Wednesday
    read = enrich(text, said)
    assert read.valid_until is not None and read.valid_until > said, text
    if day is None:
        assert read.event_at is None, text
        return
    assert read.event_at is not None and read.event_at.date() == day, text
    assert read.valid_until.date() == (date(2025, 3, 31) if "March" in text else day), text


def test_history_reads_its_dates_backwards_and_does_not_expire() -> None:
    said = datetime(2024, 5, 8, 9, tzinfo=UTC)  # a Wednesday
    read = enrich("This Saturday we went hiking", said)
    assert read.event_at is not None and read.event_at.date() == date(2024, 5, 4)
    assert read.valid_until is None and read.memory_type == "persistent"
