"""Time expressions in questions, resolved against a fixed reference time."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.retrieval.when import parse_time

# A Wednesday afternoon.
REFERENCE = datetime(2023, 6, 14, 15, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "after", "before"),
    [
        ("what did I do yesterday?", day(2023, 6, 13), day(2023, 6, 14)),
        ("anything new today", day(2023, 6, 14), day(2023, 6, 15)),
        ("the day before yesterday", day(2023, 6, 12), day(2023, 6, 13)),
        ("what happened last week", day(2023, 6, 5), day(2023, 6, 12)),
        ("meetings this week", day(2023, 6, 12), day(2023, 6, 19)),
        ("plans for last weekend", day(2023, 6, 10), day(2023, 6, 12)),
        ("what did we discuss last month", day(2023, 5, 1), day(2023, 6, 1)),
        ("books I read last year", day(2022, 1, 1), day(2023, 1, 1)),
        ("what did we talk about in May 2023", day(2023, 5, 1), day(2023, 6, 1)),
        ("what did we talk about in May", day(2023, 5, 1), day(2023, 6, 1)),
        # A month still ahead this year means last year's.
        ("the trip in August", day(2022, 8, 1), day(2022, 9, 1)),
        ("the party on May 8th, 2023", day(2023, 5, 8), day(2023, 5, 9)),
        ("the party on 8 May", day(2023, 5, 8), day(2023, 5, 9)),
        ("notes from 2023-05-08", day(2023, 5, 8), day(2023, 5, 9)),
        ("what changed in 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("two days ago", day(2023, 6, 12), day(2023, 6, 13)),
        ("3 weeks ago", day(2023, 5, 21), day(2023, 5, 28)),
        ("last Friday", day(2023, 6, 9), day(2023, 6, 10)),
        # "Last Wednesday" on a Wednesday is a week ago.
        ("last Wednesday", day(2023, 6, 7), day(2023, 6, 8)),
        ("this summer", day(2023, 6, 1), day(2023, 9, 1)),
        ("last summer", day(2022, 6, 1), day(2022, 9, 1)),
        ("last winter", day(2022, 12, 1), day(2023, 3, 1)),
        ("in the last 3 days", day(2023, 6, 11), day(2023, 6, 15)),
        ("over the past month", day(2023, 5, 14), day(2023, 6, 15)),
        ("what have I been reading recently", day(2023, 5, 15), day(2023, 6, 15)),
        ("before May 2023", None, day(2023, 5, 1)),
        ("after 2022", day(2023, 1, 1), None),
        ("since last week", day(2023, 6, 5), None),
        ("until June 2", None, day(2023, 6, 3)),
    ],
)
def test_expressions_resolve_against_the_reference_time(
    query: str, after: datetime | None, before: datetime | None
) -> None:
    found = parse_time(query, REFERENCE)
    assert found is not None
    assert (found.after, found.before) == (after, before)


@pytest.mark.parametrize(
    "query",
    [
        "before the trip",  # an event, not a date: not resolvable offline
        "what may I eat",  # "may" the verb
        "I have 2 dogs and 1999 stamps",
        "meet at 5 pm",
        "what is my favourite colour",
    ],
)
def test_no_time_is_read_where_none_is_named(query: str) -> None:
    assert parse_time(query, REFERENCE) is None


def test_the_reference_time_moves_relative_expressions() -> None:
    later = parse_time("yesterday", datetime(2024, 1, 1, tzinfo=UTC))
    assert later is not None and later.after == day(2023, 12, 31)
    naive = parse_time("yesterday", datetime(2024, 1, 1))  # read as UTC
    assert naive is not None and naive.after == day(2023, 12, 31)


@given(
    st.dates(min_value=date(1990, 1, 1), max_value=date(2035, 12, 31)),
    st.sampled_from(["in", "during"]),
    st.booleans(),
)
def test_a_named_month_and_year_is_that_whole_month(
    moment: date, preposition: str, abbreviated: bool
) -> None:
    names = calendar.month_abbr if abbreviated else calendar.month_name
    query = f"what happened {preposition} {names[moment.month]} {moment.year}?"
    found = parse_time(query, REFERENCE)
    assert found is not None and found.after is not None and found.before is not None
    assert found.contains(datetime.combine(moment, datetime.min.time(), tzinfo=UTC))
    assert found.after.day == 1 and found.after.month == moment.month
    assert (found.before - timedelta(days=1)).month == moment.month


@given(st.integers(min_value=1, max_value=400), st.sampled_from(["day", "days"]))
def test_n_days_ago_is_that_day(n: int, unit: str) -> None:
    found = parse_time(f"{n} {unit} ago", REFERENCE)
    assert found is not None
    assert found.after == day(2023, 6, 14) - timedelta(days=n)
    assert found.before == found.after + timedelta(days=1)


@given(st.text(max_size=200), st.datetimes(timezones=st.just(UTC)))
def test_any_text_parses_without_raising(text: str, reference: datetime) -> None:
    found = parse_time(text, reference)
    if found is not None and found.after and found.before:
        assert found.after < found.before
