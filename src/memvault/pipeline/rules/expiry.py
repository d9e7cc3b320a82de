"""Persistent or temporal: when a memory stops being true (``valid_until``), in UTC."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from memvault.language.when import DateReading

# Recurring or biographical: a date in these is not an expiry.
_PERSISTENT_CUES = re.compile(
    r"\b(born|birthday|anniversary|every|each|always|usually|weekly|monthly|daily|yearly|"
    r"annually|(mon|tues|wednes|thurs|fri|satur|sun)days|since|ago|used to)\b",
    re.IGNORECASE,
)
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


def _valid_until(text: str, reading: DateReading, reference: datetime) -> datetime | None:
    """When a time-bound memory stops being true; None for a lasting one. ``reading`` is the
    text's dates as ``retrieval.when`` read them, the reading its event time comes from too."""
    if _PERSISTENT_CUES.search(text):
        return None
    if reading.direction == "past":
        return None  # history: "I moved to Berlin in March" is over, whenever March was
    # A period is true until its last second; the furthest end wins: "from Monday until
    # 5 June" is true until 5 June.
    ends = [e.before - timedelta(seconds=1) for e in reading.expressions if not e.looking_back]
    ends = [end for end in ends if end > reference]
    if not ends:
        if _MOOD.search(text):
            ends.append(_end_of_day(reference.date() + timedelta(days=_MOOD_DAYS - 1)))
        elif _NOW.search(text):
            ends.append(_end_of_day(reference.date() + timedelta(days=_CURRENT_DAYS - 1)))
    return max(ends) if ends else None


# --- enrichment: topics and importance -------------------------------------------------------
