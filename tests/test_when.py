"""Time expressions in questions, resolved against a fixed reference time."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.language.when import event_time, parse_time

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
        ("where did I go last August", day(2022, 8, 1), day(2022, 9, 1)),
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
        ("what is planned for tomorrow", day(2023, 6, 15), day(2023, 6, 16)),
        ("the launch next week", day(2023, 6, 19), day(2023, 6, 26)),
        ("the dentist next Friday", day(2023, 6, 16), day(2023, 6, 17)),
        # "Next Wednesday" on a Wednesday is a week ahead.
        ("next Wednesday", day(2023, 6, 21), day(2023, 6, 22)),
        ("what happened this past week", day(2023, 6, 7), day(2023, 6, 15)),
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


@pytest.mark.parametrize(
    ("query", "recent"),
    [
        ("any news recently?", True),
        ("what's new with Ana", True),
        ("the latest news from work", True),
        ("what has she been up to lately", True),
        ("what happened in the past week", False),
        ("what did we do yesterday", False),
    ],
)
def test_a_question_about_what_is_latest_is_told_apart_from_a_period(
    query: str, recent: bool
) -> None:
    found = parse_time(query, REFERENCE)
    assert found is not None and found.recent is recent


def test_a_word_like_latest_alone_is_no_time() -> None:
    assert parse_time("where are the latest design mock-ups?", REFERENCE) is None


# --- event dates in statements: when what a memory tells of happened (or will) ---------------


def noon(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("Yesterday we went hiking in the Alps", noon(2023, 6, 13)),
        ("Last Tuesday I started a new job at Acme", noon(2023, 6, 13)),
        ("last Friday I had a job interview", noon(2023, 6, 9)),
        ("On Monday I had a cold", noon(2023, 6, 12)),
        ("I saw the dentist last Wednesday", noon(2023, 6, 7)),
        ("The day before yesterday my sister called", noon(2023, 6, 12)),
        ("Last night we watched Dune", noon(2023, 6, 13)),
        ("Tomorrow I will call my mum", noon(2023, 6, 15)),
        ("The day after tomorrow is the exam", noon(2023, 6, 16)),
        ("Next Friday is my dentist appointment", noon(2023, 6, 16)),
        ("next Wednesday we fly out", noon(2023, 6, 21)),
        ("The product launch is next week", noon(2023, 6, 22)),
        ("Last week I started running again", noon(2023, 6, 8)),
        ("We went camping last weekend", day(2023, 6, 11)),
        ("We are camping next weekend", day(2023, 6, 18)),
        ("Last month I got a promotion", noon(2023, 5, 16)),
        ("next month we move house", noon(2023, 7, 16)),
        ("Last year I ran a marathon", datetime(2022, 7, 2, 12, tzinfo=UTC)),
        ("two days ago I lost my keys", noon(2023, 6, 12)),
        ("3 weeks ago my cat got sick", noon(2023, 5, 24)),
        ("a couple of days ago it snowed", noon(2023, 6, 12)),
        ("in two weeks we go on holiday", noon(2023, 6, 28)),
        ("in 3 days the contract ends", noon(2023, 6, 17)),
        ("I flew to Rome on 3 May", noon(2023, 5, 3)),
        ("I fly to Rome on 3 July", noon(2023, 7, 3)),
        # The nearest 20 November is the one ahead, not the one 7 months back.
        ("The party is on 20 November", noon(2023, 11, 20)),
        ("My sister's wedding is on July 8th", noon(2023, 7, 8)),
        ("We married on 29 February 2020", noon(2020, 2, 29)),
        ("I was born on 1990-02-03", noon(1990, 2, 3)),
        ("I moved to Berlin in 2019", datetime(2019, 7, 2, 12, tzinfo=UTC)),
        ("In May 2022 I graduated", noon(2022, 5, 16)),
        ("last summer we went to Spain", datetime(2022, 7, 17, tzinfo=UTC)),
        ("I finished the course in March", noon(2023, 3, 16)),
        # "last" with a month is behind, with no tense cue and in a plan alike.
        ("Last August a friend of mine got married", noon(2022, 8, 16)),
        ("I'll go back to the hostel I liked last January", noon(2023, 1, 16)),
    ],
)
def test_an_event_date_in_a_statement_resolves_against_when_it_was_said(
    statement: str, expected: datetime
) -> None:
    assert event_time(statement, REFERENCE) == expected


@pytest.mark.parametrize(
    "statement",
    [
        "I love pizza",
        "I have been busy this week",  # the span holds the moment it was said
        "Recently I took up yoga",
        "This morning I ran 5k",
        "Today is my day off",
        "Since May I have been running",  # an open bound names no moment
        "Before 2020 I lived in Paris",
        "I may go to the gym",
        "Meet me at 5 pm",
    ],
)
def test_statements_without_a_datable_event_keep_their_own_time(statement: str) -> None:
    assert event_time(statement, REFERENCE) is None


def test_event_dates_move_with_the_time_they_were_said() -> None:
    said = datetime(2024, 1, 3, 9, tzinfo=UTC)  # a Wednesday
    assert event_time("yesterday I got the keys", said) == noon(2024, 1, 2)
    assert event_time("yesterday I got the keys", said.replace(tzinfo=None)) == noon(2024, 1, 2)
    # "on 30 December" said on 3 January was four days before, in the year before.
    assert event_time("we landed on 30 December", said) == noon(2023, 12, 30)


@given(st.text(max_size=200), st.datetimes(timezones=st.just(UTC)))
def test_any_statement_reads_without_raising(text: str, reference: datetime) -> None:
    event_time(text, reference)
