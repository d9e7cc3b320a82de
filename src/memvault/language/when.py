"""Time expressions in a question, resolved offline against a reference time.

"What did I cook last week?" should look at last week's memories. This finds the first
expression it can resolve — relative days and periods ("yesterday", "last month", "3 weeks
ago", "last Friday", "this summer"), calendar dates ("in May 2023", "8 May", "2023-05-08",
"in 2022"), and "before" / "after" / "since" one of those — and turns it into a half-open
range ``[after, before)`` on ``occurred_at``. Anything it cannot pin to the calendar ("before
the trip") yields ``None``: the search then runs as if no time was named. Forms ahead of the
reference ("tomorrow", "next Friday", "next week", "in 3 days") resolve forwards.

The same reading serves memories: ``read_dates`` finds every date expression of a statement
once, in the direction its tense gives (history backwards: "on Friday I went" is the last
Friday; a plan forwards: "dinner on Friday", "we're going in March" are the ones ahead; with no
cue a weekday is the next one and a day or month the nearest), and both the event's date
(``event_time``: "Last Tuesday I started at Acme", stored today, happened last Tuesday) and
the memory's expiry (``pipeline.rules``' ``valid_until``) come from that one reading. So there is
one date parser for questions and for content, and a phrase names the same day for both uses.

Regular expressions, not dateparser: a question is short, the vocabulary of time is small,
and a parser that reads "may", "a second", "$80 a month" or "1/72 scale" as dates would filter
good answers away and give memories expiries they do not have. Deterministic, pure, and never
raises.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal

from memvault.text import MONTHS

_MONTHS = MONTHS
_WEEKDAYS = {calendar.day_name[n].lower(): n for n in range(7)}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
# Northern-hemisphere meteorological seasons: (first month, months long).
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_NUMBER = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + ")"
_SEASON = r"(?P<season>" + "|".join(_SEASONS) + ")"
# Questions about what is latest, with no period named: they rank by recency.
# Which way a statement's dates lie: history resolves backwards ("on Friday" is the one
# before), a plan forwards. "moved to Friday" is a rescheduling, not a relocation.
_PAST = re.compile(
    r"\b(was|were|did|had|went|yesterday|graduated|started|finished|visited|bought|met|lived|"
    r"worked|studied|have been|has been|last\s+(week|month|year|night|time|weekend|summer|"
    r"winter|spring|autumn|fall|\w+day))\b|\bmoved\b(?!\s+(to|until|till|back to)\s+"
    r"(next|this|the\s+\d|\d|\w+day\b|tomorrow|today|tonight|jan|feb|mar|apr|may|jun|jul|aug|"
    r"sep|oct|nov|dec))",
    re.IGNORECASE,
)
_FUTURE = re.compile(
    r"\b(will|going to|gonna|plan|planning|until|till|til|through|thru|by(?! the way)|next|"
    r"upcoming|tomorrow|tonight|starting)\b",
    re.IGNORECASE,
)
Direction = Literal["past", "future"] | None
_RECENT = (
    r"\b(?:recently|lately|these days|(?:any|the|latest)\s+news|what(?:'s| is| has been) new"
    r"|latest\s+(?:news|updates?|developments?))\b"
)


@dataclass(frozen=True)
class TimeRange:
    """``[after, before)`` in UTC; either end may be open. ``expression`` is the matched text."""

    after: datetime | None
    before: datetime | None
    expression: str
    # The question asks what is latest ("any news recently?") rather than naming a period.
    recent: bool = False

    def contains(self, moment: datetime) -> bool:
        return (self.after is None or moment >= self.after) and (
            self.before is None or moment < self.before
        )


def _g(m: re.Match[str], name: str) -> str:
    """A named group's text; "" when the pattern has no such group or it did not match."""
    return m.groupdict().get(name) or ""


def _start(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def _days(first: date, last_exclusive: date) -> tuple[datetime, datetime]:
    return _start(first), _start(last_exclusive)


def _month_range(year: int, month: int, months: int = 1) -> tuple[datetime, datetime]:
    end_year, end_month = divmod(month - 1 + months, 12)
    return _start(date(year, month, 1)), _start(date(year + end_year, end_month + 1, 1))


def _shift_months(day: date, months: int) -> date:
    year, month = divmod(day.month - 1 + months, 12)
    year += day.year
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text]


def _unit_span(unit: str, n: int, today: date) -> date:
    """The day ``n`` units before ``today``."""
    if unit == "day":
        return today - timedelta(days=n)
    if unit == "week":
        return today - timedelta(weeks=n)
    return _shift_months(today, -n * (12 if unit == "year" else 1))


# Each pattern resolves to a range given the match, the reference day and which way the text's
# dates lie (``None``: no cue either way); the earliest match wins, so at one place the longer,
# more specific form does.
Span = tuple[datetime, datetime]
_LAST = re.compile(r"last\b", re.I)
_BEEN = re.compile(r"\bbeen\b[^.,;!?]*$", re.I)
Resolver = Callable[[re.Match[str], date, Direction], Span | None]


def _iso(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    try:
        day = date(int(_g(m, "year")), int(_g(m, "m")), int(_g(m, "d")))
    except ValueError:
        return None
    return _days(day, day + timedelta(days=1))


def _this_or_other_year(month: int, day: int, today: date, direction: Direction) -> date:
    """A day and month without a year: the next such day for a plan, else the last one."""
    if direction == "future":
        nearest = date(today.year, month, day)
        return nearest if nearest >= today else date(today.year + 1, month, day)
    nearest = date(today.year, month, day)
    return nearest if nearest <= today else date(today.year - 1, month, day)


def _day_month_year(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    month = _MONTHS[_g(m, "month").lower()]
    try:
        if _g(m, "year"):
            day = date(int(_g(m, "year")), month, int(_g(m, "day")))
        else:
            day = _this_or_other_year(month, int(_g(m, "day")), today, direction)
    except ValueError:
        return None
    return _days(day, day + timedelta(days=1))


def _numeric(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    """ "until 12/27", month first as in US English, as most software writes it."""
    year = _g(m, "y")
    try:
        if year:
            day = date(
                int(year) + (2000 if len(year) == 2 else 0), int(_g(m, "m")), int(_g(m, "d"))
            )
        else:
            day = _this_or_other_year(int(_g(m, "m")), int(_g(m, "d")), today, direction)
    except ValueError:
        return None
    return _days(day, day + timedelta(days=1))


def _month_year(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    month = _MONTHS[_g(m, "month").lower()]
    if _g(m, "year"):
        return _month_range(int(_g(m, "year")), month)
    if direction == "future" and not _LAST.match(m[0]):
        return _month_range(today.year if month >= today.month else today.year + 1, month)
    return _month_range(today.year if month <= today.month else today.year - 1, month)


def _season(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    first = _SEASONS[_g(m, "season").lower()]
    if _g(m, "year"):
        year = int(_g(m, "year"))
    else:
        # The latest such season that has begun; "last" means the latest that is over, and a
        # plan's the one not over yet.
        year = today.year if date(today.year, first, 1) <= today else today.year - 1
        which = _g(m, "which").lower()
        if which == "last" and _month_range(year, first, 3)[1].date() > today:
            year -= 1
        elif (
            which != "last"
            and direction == "future"
            and _month_range(year, first, 3)[1].date() <= today
        ):
            year += 1
    return _month_range(year, first, 3)


def _year(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    return _month_range(int(_g(m, "year")), 1, 12)


def _ago(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    unit = _g(m, "unit").lower()
    point = _unit_span(unit, _number(_g(m, "n").lower()), today)
    # "3 weeks ago" is about then, give or take half a unit.
    slack = {"day": 0, "week": 3, "month": 15, "year": 182}[unit]
    return _days(point - timedelta(days=slack), point + timedelta(days=slack + 1))


def _past_n(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    unit = _g(m, "unit").lower()
    n = _number(_g(m, "n").lower()) if _g(m, "n") else 1
    return _days(_unit_span(unit, n, today), today + timedelta(days=1))


def _relative_period(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    which, unit = _g(m, "which").lower(), _g(m, "unit").lower()
    step = {"last": -1, "previous": -1, "next": 1}.get(which, 0)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        return _days(monday, monday + timedelta(weeks=1))
    if unit == "weekend":
        saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
        if step < 0 and saturday + timedelta(days=2) > today:  # the last one that is over
            saturday -= timedelta(weeks=1)
        elif step > 0 and saturday <= today:  # the next one still to begin
            saturday += timedelta(weeks=1)
        return _days(saturday, saturday + timedelta(days=2))
    if unit == "month":
        first = _shift_months(today.replace(day=1), step)
        return _month_range(first.year, first.month)
    return _month_range(today.year + step, 1, 12)


def _end_of(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    """ "the end of (next) month": its last day."""
    period = _relative_period(m, today, direction)
    if period is None:
        return None
    last = period[1].date() - timedelta(days=1)
    return _days(last, last + timedelta(days=1))


def _weekday(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    which, weekday = _g(m, "which").lower(), _WEEKDAYS[_g(m, "weekday").lower()]
    if which == "next":
        ahead = (weekday - today.weekday()) % 7 or 7
    elif which != "last" and direction != "past":
        ahead = (weekday - today.weekday()) % 7  # a plan's "on Friday": the one to come
    else:
        ahead = -((today.weekday() - weekday) % 7 or (7 if which == "last" else 0))
    day = today + timedelta(days=ahead)
    return _days(day, day + timedelta(days=1))


def _named_day(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    word = _g(m, "named").lower()
    offset = {
        "today": 0,
        "tonight": 0,
        "this morning": 0,
        "yesterday": -1,
        "last night": -1,
        "the day before yesterday": -2,
        "tomorrow": 1,
        "the day after tomorrow": 2,
    }
    day = today + timedelta(days=offset[word])
    return _days(day, day + timedelta(days=1))


def _recently(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    return _days(today - timedelta(days=30), today + timedelta(days=1))


def _ahead(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    """ "in 3 weeks": about then, give or take half a unit, as for "3 weeks ago"."""
    unit = _g(m, "unit").lower()
    point = _unit_span(unit, -_number(_g(m, "n").lower()), today)
    slack = {"day": 0, "week": 3, "month": 15, "year": 182}[unit]
    return _days(point - timedelta(days=slack), point + timedelta(days=slack + 1))


def _so_far(m: re.Match[str]) -> bool:
    """ "I've been working here for five years": how long it has lasted, not how long it will."""
    return _BEEN.search(m.string[: m.start()]) is not None


def _lasting(m: re.Match[str], today: date, direction: Direction) -> Span | None:
    """ "for two weeks", "within 3 days": the span from today on (back from today in history);
    hours and minutes end today."""
    unit = _g(m, "unit").lower()
    n = _number(_g(m, "n").lower())
    if unit in ("hour", "minute"):
        return _days(today, today + timedelta(days=1))
    if unit == "fortnight":
        unit, n = "week", 2 * n
    if direction == "past" or _so_far(m):
        return _days(_unit_span(unit, n, today), today + timedelta(days=1))
    return _days(today, _unit_span(unit, -n, today) + timedelta(days=1))


_PATTERNS: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(rf"\b{_YEAR}-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b"), _iso),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I), _day_month_year),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!\s*(?:am|pm|:))", re.I), _day_month_year),
    (re.compile(rf"\b(?:in|during|of|since|before|after|by|until)\s+(?:the\s+)?(?:(?P<which>last|this)\s+)?{_SEASON}(?:\s+(?:of\s+)?{_YEAR})?\b", re.I), _season),
    (re.compile(rf"\b(?P<which>last|this)\s+{_SEASON}(?:\s+{_YEAR})?\b", re.I), _season),
    (re.compile(rf"\b{_MONTH}(?:\s+of)?,?\s+{_YEAR}\b", re.I), _month_year),
    # A bare month name only after a preposition: "may" alone is usually a verb.
    (re.compile(rf"\b(?:in|during|since|before|after|by|until|last)\s+{_MONTH}\b(?!\s+\d)", re.I), _month_year),
    (re.compile(rf"\b(?:in|during|of|since|before|after|by|until)\s+{_YEAR}\b", re.I), _year),
    (re.compile(r"\b(?P<named>the day (?:before yesterday|after tomorrow)|yesterday|last night|today|tonight|this morning|tomorrow)\b", re.I), _named_day),
    (re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+ago\b", re.I), _ago),
    (re.compile(rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:last|past)\s+{_NUMBER}\s+{_UNIT}\b", re.I), _past_n),
    (re.compile(rf"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+(?P<n>)?{_UNIT}\b", re.I), _past_n),
    (re.compile(r"\b(?:the|this)\s+past\s+(?P<n>)?(?P<unit>day|week|month|year)\b", re.I), _past_n),
    (re.compile(rf"\bin\s+{_NUMBER}\s+{_UNIT}\b(?!\s+ago)", re.I), _ahead),
    (re.compile(r"\b(?P<which>last|previous|this|next)\s+(?P<unit>weekend|week|month|year)\b", re.I), _relative_period),
    (re.compile(rf"\b(?:(?P<which>last|this|on|next)\s+){_WEEKDAY}\b", re.I), _weekday),
    (re.compile(_RECENT, re.I), _recently),
]  # fmt: skip
# Statements name times questions hardly do: how long something lasts, a bare weekday ("moved
# to Friday", "through Friday"), the end of a period, a date in figures after a preposition.
_STATEMENT_PATTERNS = [
    *_PATTERNS,
    (re.compile(rf"\b(?:until|till|til|through|thru|to|from|by|before|after)\s+{_WEEKDAY}\b(?!')", re.I), _weekday),
    (re.compile(r"\b(?:the\s+)?end\s+of\s+(?:(?P<which>the|this|next)\s+)?(?P<unit>week|month|year)\b", re.I), _end_of),
    (re.compile(r"\bthe\s+(?P<unit>weekend)\b", re.I), _relative_period),
    (re.compile(r"\b(?:on|until|till|til|through|thru|by|before|from|due)\s+(?P<m>[01]?\d)/(?P<d>[0-3]?\d)(?:/(?P<y>\d{4}|\d{2}))?\b", re.I), _numeric),
    (re.compile(rf"\b(?:for|within|over)\s+(?:the\s+)?(?:next\s+)?{_NUMBER}\s+(?P<unit>minute|hour|day|week|fortnight|month|year)s?\b(?!\s+(?:now|so far|already))", re.I), _lasting),
    (re.compile(rf"\b(?:the\s+)?next\s+{_NUMBER}\s+(?P<unit>minute|hour|day|week|fortnight|month|year)s?\b", re.I), _lasting),
    (re.compile(rf"\bin\s+{_NUMBER}\s+(?P<unit>minute|hour)s?\b", re.I), _lasting),
]  # fmt: skip
# Every expression the patterns above read holds a digit, a word of time (a unit, "today",
# "tonight", "tomorrow", "this morning", a weekday, "recently", "lately", "news") or a month or
# season: a text with none names no date, and is known so in one search (most sentences name
# none, and trying every pattern on them was most of the offline extractor's date reading).
_MAY_NAME_A_DATE = re.compile(
    r"\d|day|week|month|year|hour|minute|fortnight|night|morning|tomorrow|recent|late|new"
    rf"|\b(?:{'|'.join(_MONTHS)}|{'|'.join(_SEASONS)})",
    re.I,
)
_LOOKING_BACK: frozenset[Resolver] = frozenset((_ago, _past_n, _recently))
_RECENT_PATTERN = re.compile(_RECENT, re.I)
# Questions about the present state of something that may have changed ("where do I keep it
# now?", "my current score"): the newest of the memories that answer is the one that holds.
_NOW = re.compile(
    r"\b(?:current(?:ly)?|now|nowadays|these days|at the moment|at present|presently|still"
    r"|any ?more|(?:the\s+)?(?:latest|most recent(?:ly)?|newest)|so far|up to date|to date)\b",
    re.I,
)
_BOUND = re.compile(r"\b(?P<word>before|after|since|until|by|prior to)\s+$", re.I)
_BOUND_WORD = re.compile(r"(?P<word>before|after|since|until|by)\b", re.I)


def _today(reference: datetime) -> date:
    if reference.tzinfo is None:
        reference = reference.replace(tzinfo=UTC)
    return reference.astimezone(UTC).date()


def _first(text: str, reference: datetime) -> tuple[int, re.Match[str], Span] | None:
    """The earliest resolvable expression in a question: (where, the match, its range)."""
    if _MAY_NAME_A_DATE.search(text) is None:
        return None
    today = _today(reference)
    found: list[tuple[int, re.Match[str], Span]] = []
    for pattern, resolve in _PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        try:
            span = resolve(match, today, "past")
        except (ValueError, OverflowError):
            span = None
        if span is not None:
            found.append((match.start(), match, span))
    return min(found, key=lambda f: (f[0], -len(f[1][0]))) if found else None


def parse_time(query: str, reference: datetime) -> TimeRange | None:
    """The first resolvable time expression in ``query``, as a range relative to
    ``reference`` (the moment the question is asked); ``None`` when there is none."""
    first = _first(query, reference)
    if first is None:
        return None
    start, match, (after, before) = first
    expression = match[0].strip()
    prefix = _BOUND.search(query[:start])
    bound = prefix or _BOUND_WORD.match(expression)
    if bound is None:
        return TimeRange(
            after, before, expression, recent=bool(_RECENT_PATTERN.fullmatch(expression))
        )
    if prefix is not None:
        expression = f"{prefix['word']} {expression}"
    word = bound["word"].lower()
    if word in ("before", "prior to"):
        return TimeRange(None, after, expression)
    if word in ("until", "by"):
        return TimeRange(None, before, expression)
    return TimeRange(before if word == "after" else after, None, expression)


def about_now(query: str) -> bool:
    """Whether ``query`` asks how things stand now (a value that may have changed), as
    opposed to naming a period or asking something timeless."""
    return _NOW.search(query) is not None


# A date without a year in a statement with no tense cue ("on 3 May") is the nearest such
# date, not the last.
_HALF_YEAR = timedelta(days=183)


@dataclass(frozen=True)
class DateExpression:
    """One date expression in a statement: ``[after, before)`` in UTC. ``bound`` when it is an
    open bound ("since May", "until 5 June"), which names no moment for the event."""

    start: int
    text: str
    after: datetime
    before: datetime
    bound: bool
    # It looks back from when it was said ("lately", "in the last 3 months", "2 weeks ago"):
    # a span of history, however recent, and no date a plan runs to.
    looking_back: bool = False


@dataclass(frozen=True)
class DateReading:
    """A statement's dates, read once: the way they lie (``"past"`` for history, ``"future"``
    for a plan, ``None`` without a cue) and every expression found, in order."""

    direction: Direction
    expressions: tuple[DateExpression, ...]


def direction_of(text: str) -> Direction:
    if _FUTURE.search(text):
        return "future"
    return "past" if _PAST.search(text) else None


def _nearest(match: re.Match[str], span: Span, reference: datetime) -> Span | None:
    """Without a tense cue a year-less date ("on 20 November") is the nearest one, so the last
    one moves a year on when it is more than half a year back."""
    after, before = span
    if not (_g(match, "month") or _g(match, "m")) or _g(match, "year") or _g(match, "y"):
        return span
    if _LAST.match(match[0]):
        return span  # "last August" is behind, however long ago
    if before > reference - _HALF_YEAR:
        return span
    try:
        return after.replace(year=after.year + 1), before.replace(year=before.year + 1)
    except ValueError:  # 29 February
        return None


def read_dates(text: str, reference: datetime) -> DateReading:
    """Every date expression in a statement, resolved once against ``reference`` (when it was
    said) in the direction its tense gives: what the event's time and the memory's expiry
    are both read from. Never raises."""
    if reference.tzinfo is None:
        reference = reference.replace(tzinfo=UTC)
    direction = direction_of(text)
    if _MAY_NAME_A_DATE.search(text) is None:
        return DateReading(direction, ())
    today = _today(reference)
    found: list[tuple[re.Match[str], Span, Resolver]] = []
    for pattern, resolve in _STATEMENT_PATTERNS:
        for match in pattern.finditer(text):
            try:
                span = resolve(match, today, direction)
                if span is not None and direction is None:
                    span = _nearest(match, span, reference)
            except (ValueError, OverflowError):
                span = None
            if span is not None:
                found.append((match, span, resolve))
    found.sort(key=lambda f: (f[0].start(), -len(f[0][0])))
    expressions: list[DateExpression] = []
    reached = 0
    for match, (after, before), resolved_by in found:
        if match.start() < reached:
            continue  # inside a longer expression already read
        reached = match.end()
        bound = bool(_BOUND.search(text[: match.start()]) or _BOUND_WORD.match(match[0]))
        back = resolved_by in _LOOKING_BACK or (resolved_by is _lasting and _so_far(match))
        expressions.append(DateExpression(match.start(), match[0], after, before, bound, back))
    return DateReading(direction, tuple(expressions))


def event_time(text: str, reference: datetime) -> datetime | None:
    """When the event a statement tells of happened (or will), read from its first date
    expression against ``reference`` (when it was said): the middle of the span it names.
    ``None`` when it names none, or only an open bound ("since May"), or a span that holds the
    reference itself ("this week", "recently", "today"): then the statement's own time is the
    best there is."""
    return event_time_of(read_dates(text, reference), reference)


def event_time_of(reading: DateReading, reference: datetime) -> datetime | None:
    """``event_time`` from a reading already made."""
    if reference.tzinfo is None:
        reference = reference.replace(tzinfo=UTC)
    if not reading.expressions:
        return None
    first = reading.expressions[0]
    if first.bound or first.after <= reference < first.before:
        return None
    return first.after + (first.before - first.after) / 2
