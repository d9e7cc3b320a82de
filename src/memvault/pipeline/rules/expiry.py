"""Persistent or temporal: when a memory stops being true (``valid_until``), in UTC."""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from dateparser.search import search_dates  # type: ignore[import-untyped]

from memvault.pipeline.rules.words import _words

_SEARCH_CHARS = 1000  # dateparser's search is superlinear; memories put dates up front
_DATEISH = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|week|weekend|month|year|noon|midnight|morning|"
    r"afternoon|evening|days?|weeks?|months?|(mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sep(t|tember)?|"
    r"oct(ober)?|nov(ember)?|dec(ember)?|\d{1,2}(st|nd|rd|th)|\d{1,2}\s*(am|pm)|"
    r"\d{1,4}[-/.]\d{1,2}([-/.]\d{1,4})?|(19|20)\d\d)\b",
    re.IGNORECASE,
)
# Recurring or biographical: a date in these is not an expiry.
_PERSISTENT_CUES = re.compile(
    r"\b(born|birthday|anniversary|every|each|always|usually|weekly|monthly|daily|yearly|"
    r"annually|(mon|tues|wednes|thurs|fri|satur|sun)days|since|ago|used to)\b",
    re.IGNORECASE,
)
# History, whose dates dateparser would move into the future ("in March" → next March). "moved
# to Friday" is a rescheduling, not a relocation, so it does not count.
_PAST = re.compile(
    r"\b(was|were|did|had|went|yesterday|graduated|started|finished|visited|bought|met|lived|"
    r"worked|studied|have been|has been|last\s+(week|month|year|night|time|weekend|summer|"
    r"winter|spring|autumn|fall|\w+day))\b|\bmoved\b(?!\s+(to|until|till|back to)\s+"
    r"(next|this|the\s+\d|\d|\w+day\b|tomorrow|today|tonight|jan|feb|mar|apr|may|jun|jul|aug|"
    r"sep|oct|nov|dec))",
    re.IGNORECASE,
)
_FUTURE = re.compile(
    r"\b(will|going to|gonna|plan|planning|until|till|til|through|thru|by|next|upcoming|"
    r"tomorrow|tonight|starting)\b",
    re.IGNORECASE,
)
_WEEKEND = re.compile(r"\b(this|next|the)\s+weekend\b", re.IGNORECASE)
_END_OF = re.compile(r"\bend of (the |this |next )?(week|month|year)\b", re.IGNORECASE)
_DURATION = re.compile(
    r"^(in|for|within)?\s*(the next\s+)?(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|"
    r"ten|a few|a couple of)\s+(minute|hour|day|week|fortnight|month|year)s?$",
    re.IGNORECASE,
)
_AMBIGUOUS_HITS = _words("may march sun sat wed mon fri now second date time day week month year")
# A state with no date ("I'm sick", "feeling stressed") is assumed to pass in a few days.
_MOOD = re.compile(
    r"\b(i am|i'm|im|feeling|feel|felt)\s+(a bit\s+|so\s+|very\s+|really\s+|quite\s+)?"
    r"(sick|ill|unwell|tired|exhausted|stressed|anxious|nervous|hungover|jet-?lagged|busy|"
    r"upset|sad|angry|excited|bored|hungry|sleepy|overwhelmed|down|sore)\b|"
    r"\b(have|got|has)\s+(a |the )?(cold|flu|fever|headache|migraine|hangover|sore throat)\b",
    re.IGNORECASE,
)
_NOW = re.compile(r"\b(right now|at the moment|currently|for now|these days)\b", re.IGNORECASE)
_MOOD_DAYS = 3
_CURRENT_DAYS = 7


def _utc(moment: datetime) -> datetime:
    """Naive times are read as UTC; aware ones are converted."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _end_of_day(day: date) -> datetime:
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def _end_of_period(moment: datetime, period: str) -> datetime:
    day = moment.date()
    if period == "week":
        return _end_of_day(day + timedelta(days=6 - day.weekday()))
    if period == "month":
        return _end_of_day(day.replace(day=calendar.monthrange(day.year, day.month)[1]))
    if period == "year":
        return _end_of_day(date(day.year, 12, 31))
    return _end_of_day(day)


def _search(text: str, reference: datetime) -> list[tuple[str, datetime, str]]:
    settings: dict[str, Any] = {
        "RELATIVE_BASE": reference.replace(tzinfo=None),
        "PREFER_DATES_FROM": "future",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
    }
    try:
        found = search_dates(text, languages=["en"], settings=settings, add_period=True)
    except Exception:  # a parser bug must never cost a memory its enrichment
        return []
    return [(str(hit[0]), _utc(hit[1]), str(hit[2])) for hit in found or []]


def _hit_end(text: str, hit: str, moment: datetime, period: str) -> datetime | None:
    """The end of the period one date expression names, or None when it names no expiry."""
    words = hit.strip().casefold()
    bare = words.removeprefix("in ").removeprefix("on ").removeprefix("the ")
    if words in _AMBIGUOUS_HITS or bare == "now" or (bare.isdigit() and len(bare) <= 2):
        return None  # "may", "now", "the 5": a modal, a moment, a count; not dates
    duration = _DURATION.match(words)
    if duration:
        # "for two weeks" / "in 3 days" is a span; a bare "8 hours" is a habit.
        before = text[: max(0, text.find(hit))].split()
        lead = duration.group(1) or (before[-1].casefold() if before else "")
        if lead not in ("in", "for", "within", "next"):
            return None
        period = "day"
    if bare.isdigit():
        period = "year"  # "until 2026": the whole year
    if period == "week" and re.search(r"\d|\b(two|three|four|a few)\b", words):
        period = "day"
    return _end_of_period(moment, period)


def _special_ends(text: str, reference: datetime) -> list[datetime]:
    """Expressions dateparser does not resolve to a period: weekends and 'end of the month'."""
    ends: list[datetime] = []
    weekend = _WEEKEND.search(text)
    if weekend:
        sunday = _end_of_period(reference, "week")
        ends.append(sunday + timedelta(days=7) if weekend.group(1).lower() == "next" else sunday)
    end_of = _END_OF.search(text)
    if end_of:
        base = reference
        unit = end_of.group(2).lower()
        if (end_of.group(1) or "").strip().lower() == "next":
            base = _end_of_period(reference, unit) + timedelta(days=1)  # first day of the next
        ends.append(_end_of_period(base, unit))
    return ends


# A payment card's expiry ("exp 12/27", "valid thru 08/26", or MM/YY right after the card) is a
# fact about the card, not a date when the memory stops being true.
_CARD_WORDS = re.compile(
    r"\b(card|visa|mastercard|amex|credit|debit)\b|REDACTED:credit_card", re.IGNORECASE
)
_MONTH_YEAR = r"(?:0?[1-9]|1[0-2])\s*/\s*(?:\d{4}|\d{2})\b"
_CARD_EXPIRY = re.compile(
    r"(?:\b(?:exp(?:iry|ires|ired|iration|\.)?(?:\s+date)?|valid\s+(?:thru|through|until)|"
    rf"good\s+thru)\s*(?:on\s+|:\s*)?|(?<=REDACTED:credit_card\])[\s,;]*){_MONTH_YEAR}",
    re.IGNORECASE,
)


def without_card_expiry(text: str) -> str:
    return _CARD_EXPIRY.sub(" ", text) if _CARD_WORDS.search(text) else text


def _valid_until(text: str, reference: datetime) -> datetime | None:
    """When a time-bound memory stops being true; None for a lasting one."""
    text = without_card_expiry(text)
    if _PERSISTENT_CUES.search(text):
        return None
    if _PAST.search(text) and not _FUTURE.search(text):
        return None  # history: "I moved to Berlin in March" (dateparser would say next March)
    ends = _special_ends(text, reference)
    if _DATEISH.search(text):
        for hit, moment, period in _search(text[:_SEARCH_CHARS], reference):
            end = _hit_end(text, hit, moment, period)
            if end is not None and end > reference:
                ends.append(end)
    if not ends:
        if _MOOD.search(text):
            ends.append(_end_of_day(reference.date() + timedelta(days=_MOOD_DAYS - 1)))
        elif _NOW.search(text):
            ends.append(_end_of_day(reference.date() + timedelta(days=_CURRENT_DAYS - 1)))
    # The furthest end: "from Monday until 5 June" is true until 5 June.
    return max(ends) if ends else None


# --- enrichment: topics and importance -------------------------------------------------------
