"""The write pipeline's judgement calls made offline: no LLM, no network, deterministic.

Used when no LLM is configured, and as the fallback when one fails, so every function here is
pure, fast (well under 2 ms a call once dateparser is warm; its very first call loads its
language data and takes a few hundred ms) and never raises on any input text.

* ``decide_duplicate`` — for a pair in the 0.70-0.98 cosine band: *replace* when the new text
  updates the same fact (a changed number or date, a negation flip, an update word with a
  substituted value), *merge* when one adds compatible detail to the other, *keep_both* when
  they are about different subjects or things.
* ``enrich`` — importance 1-10, persistent or temporal (with ``valid_until`` resolved against
  the reference time, in UTC), and 1-4 snake_case topics.
* ``normalise_category`` — one spelling per topic, so tags from the rules and from an LLM meet.
"""

from __future__ import annotations

import calendar
import difflib
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any

from dateparser.search import search_dates  # type: ignore[import-untyped]

from memvault.pipeline.decisions import DedupDecision, Enrichment
from memvault.retrieval.when import event_time

# --- words -----------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP_WORDS = _words(
    """a an the and or but of to in on at for with by from as into onto about over under up out
    off this that these those it its is are was were be been being am do does did has have had
    will would shall should can could may might must i me my mine we us our ours you your yours
    he him his she her hers they them their theirs there here so very really just also too
    still again then than some any all each every which who whom whose what when where why how
    s t ve ll d re m"""
)
_NEGATIONS = _words("not no never none nobody nothing neither nor without stopped quit cannot")
# Words that say "this replaces what was true before" when they sit in the new memory.
_UPDATE_CUES = _words(
    """now anymore longer moved move changed change switched switch updated update instead
    actually nowadays currently became become correction rather"""
)
# Predicates that hold one value at a time: a different value means the old one is stale.
_FUNCTIONAL = _words(
    """live lives living lived based work works working worked job employer employed salary
    favourite favorite name age old birthday address phone email rent married
    engaged dating partner husband wife boyfriend girlfriend drive drives driving timezone
    title role position manager boss weighs weight height moved move relocated"""
)
# Stance verbs: one spelling each, and the negative ones become "not like" so that
# "I hate olives" and "I like olives" differ exactly by a negation.
_STANCE = {
    "love": "like", "loves": "like", "loved": "like", "enjoy": "like", "enjoys": "like",
    "adore": "like", "adores": "like", "likes": "like", "liked": "like", "fond": "like",
    "dislike": "not like", "dislikes": "not like", "hate": "not like", "hates": "not like",
    "detest": "not like", "detests": "not like", "loathe": "not like", "loathes": "not like",
    "favorite": "favourite", "color": "colour",
}  # fmt: skip
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "dozen": "12", "half": "0.5",
    "once": "1x", "twice": "2x", "first": "1st", "second": "2nd", "third": "3rd",
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
# People and places named through someone else: "Ben" and "Ben's father" are two people.
_RELATIONS = _words(
    """mother father mom mum dad sister brother son daughter wife husband partner boyfriend
    girlfriend friend colleague coworker boss manager neighbour neighbor cousin uncle aunt
    grandmother grandfather grandma grandpa niece nephew kid kids child children parent parents
    team family landlord doctor"""
)
_TIME_WORDS = frozenset((*_WEEKDAYS, "today", "tonight", "tomorrow", "yesterday"))
_PRONOUNS = _words("i we you he she they it")
_ARTICLES = _words("a an the")
# Verbs that end a sentence's subject ("Alice's meeting | is on Monday").
_VERBS = _words(
    """is are was were am has have had will would can could should does do did may might must
    likes like loves prefers prefer lives live works work owns own drives uses wants needs goes
    takes eats drinks plays speaks studies teaches runs starts started moved lost got gets
    hates enjoys visited visits keeps wears says said thinks knows"""
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u00b4": "'"})
_CONTRACTIONS = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bcan't\b", "can not"),
        (r"\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"\bain't\b", "is not"),
        (r"n't\b", " not"),
        (r"'m\b", " am"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"'s\b", " s"),  # possessive or "is": kept as a bare "s" that marks a name
        (r"\bgave up\b", "quit"),
        (r"\bno longer\b", "not longer"),
        # Spelling variants that tokenise differently.
        (r"\be-mail", "email"),
        (r"\btime zone", "timezone"),
        (r"\bweek-end", "weekend"),
    )
)
_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:[.,:]\d+)*", re.UNICODE)


def _expand(text: str) -> str:
    """NFKC, one apostrophe, contractions spelled out; case is kept (names are capitalised)."""
    text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _stem(word: str) -> str:
    """A few suffixes off, so lives/lived/living and cats/cat compare equal: crude, consistent."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _number(token: str) -> str | None:
    """'1,200' → '1200', 'three' → '3'; None when the token is no number."""
    if token[0].isdigit():
        return token.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", token) else token
    return _NUMBER_WORDS.get(token)


# --- analysing one memory for dedup ----------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    content: frozenset[str]  # stemmed content words, no stop words, numbers or update cues
    values: frozenset[str]  # numbers, weekdays, months: the slots an update changes
    entities: frozenset[str]  # capitalised names, lowercased
    subject: frozenset[str]  # the words before the verb, lowercased, no articles
    negated: bool
    update_cue: bool
    functional: bool


def _raw_tokens(text: str) -> list[str]:
    return _TOKEN.findall(_expand(text))


def _subject(tokens: list[str]) -> frozenset[str]:
    """Content words before the first verb (at most three): {alice, meeting} in "Alice's
    meeting is on Monday". Dates and numbers are left out: they are values, not subjects."""
    words: list[str] = []
    previous = ""
    for token in tokens[:6]:
        word = _STANCE.get(token.casefold(), token.casefold())
        if word in _PRONOUNS and not words:
            return frozenset([word])
        if words and (word in _VERBS or _verb_after_name(previous, token)):
            break
        previous = token
        if word in _ARTICLES or word == "s" or word in _TIME_WORDS or _number(word):
            continue
        words.append(word)
        if len(words) == 3:
            break
    return frozenset(words)


def _verb_after_name(previous: str, token: str) -> bool:
    """'Zoe bakes', 'Grace changed': a lowercase -s or -ed word right after a name."""
    return (
        previous[:1].isupper()
        and token.islower()
        and len(token) > 2
        and (token.endswith("ed") or (token.endswith("s") and not token.endswith("ss")))
    )


def _is_entity(token: str, position: int, tokens: list[str]) -> bool:
    lowered = token.casefold()
    if not token[:1].isupper() or lowered in _STOP_WORDS or lowered in _TIME_WORDS:
        return False
    if lowered in _MONTHS or lowered in _STANCE or lowered in _NEGATIONS:
        return False
    # A capital that only starts the sentence is a name when a verb or a possessive follows.
    following = tokens[1].casefold() if len(tokens) > 1 else ""
    return position > 0 or following in _VERBS or following == "s"


def _facts(text: str) -> _Facts:
    tokens = _raw_tokens(text)
    content: set[str] = set()
    values: set[str] = set()
    negations = 0
    cue = functional = False
    for token in tokens:
        lowered = token.casefold()
        for word in _STANCE.get(lowered, lowered).split():
            number = _number(word)
            if number is not None:
                values.add(number)
            elif word in _TIME_WORDS or (word in _MONTHS and (word != "may" or token == "May")):
                values.add(word)
            elif word in _NEGATIONS:
                negations += 1
            elif word in _UPDATE_CUES:
                cue = True
            elif word not in _STOP_WORDS:
                content.add(_stem(word))
            functional = functional or word in _FUNCTIONAL
    entities = frozenset(t.casefold() for i, t in enumerate(tokens) if _is_entity(t, i, tokens))
    return _Facts(
        content=frozenset(content),
        values=frozenset(values),
        entities=entities,
        subject=_subject(tokens),
        negated=negations % 2 == 1,
        update_cue=cue,
        functional=functional,
    )


def _swapped(a: frozenset[str], b: frozenset[str]) -> bool:
    """Each side has something the other lacks: a substitution, not an addition."""
    return bool(a - b) and bool(b - a)


def _containment(a: frozenset[str], b: frozenset[str]) -> float:
    smaller = min(len(a), len(b))
    return len(a & b) / smaller if smaller else 0.0


def _combined(existing: str, new: str) -> str:
    first = existing.strip()
    if first and first[-1] not in ".!?":
        first += "."
    return f"{first} {new.strip()}"


_SAME_MEANING = 0.95


def _decision(action: str, reason: str, merged: str | None = None) -> DedupDecision:
    return DedupDecision.model_validate({"action": action, "merged_text": merged, "reason": reason})


def decide_duplicate(existing: str, new: str, similarity: float) -> DedupDecision:
    """For a pair in the 0.70-0.98 cosine band: merge | replace | keep_both, from token
    overlap and negation / number changes (offline)."""
    a, b = _facts(existing), _facts(new)
    if (
        a.subject
        and b.subject
        and (_swapped(a.subject, b.subject) or (a.subject ^ b.subject) & _RELATIONS)
    ):
        return _decision("keep_both", "different subject")
    only_a, only_b = a.content - b.content, b.content - a.content
    overlap = _containment(a.content, b.content)
    names_differ = _swapped(a.entities, b.entities)
    if _swapped(a.values, b.values) and overlap >= 0.5:
        if names_differ and not b.update_cue:
            return _decision("keep_both", "different names and values")
        return _decision("replace", "same fact, changed number or date")
    if a.negated != b.negated:
        if overlap >= 0.67 and len(only_a) <= 1 and len(only_b) <= 1:
            return _decision("replace", "same fact, negation flipped")
        return _decision("keep_both", "opposite polarity about different things")
    single_valued = a.functional and b.functional
    if (
        only_a
        and only_b
        and (
            (b.update_cue and (overlap >= 0.5 or single_valued))
            or (single_valued and overlap >= 0.5)
        )
    ):
        return _decision("replace", "same fact, changed value")
    if overlap < 0.34:
        return _decision("keep_both", "little content in common")
    if not only_a and not only_b:
        longer = new if len(new.strip()) > len(existing.strip()) else existing
        return _decision("merge", "same content, reworded", longer.strip())
    if not only_a:
        return _decision("merge", "new memory adds detail", new.strip())
    if not only_b:
        return _decision("merge", "existing memory already says more", existing.strip())
    if names_differ:
        return _decision("keep_both", "different names")
    # Both add words: "likes tennis" / "likes squash" is a second fact, so only texts that
    # mean nearly the same anyway are combined, and never a one-for-one swap ("left-handed" /
    # "right-handed"): keeping both loses nothing.
    if similarity >= _SAME_MEANING and max(len(only_a), len(only_b)) > 1:
        return _decision("merge", "compatible details", _combined(existing, new))
    return _decision("keep_both", "different details")


# --- enrichment: persistent or temporal -----------------------------------------------------

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

_TOPIC_WORDS: dict[str, str] = {
    "security": """password passwords passcode passphrase pin ssh 2fa otp credential
        credentials login""",
    "health": """allergy allergies allergic anaphylaxis epipen doctor doctors dentist gp
        medication medications medicine pill pills sick ill hospital diabetes diabetic asthma
        blood pain surgery therapy therapist headache migraine injury injured pregnant
        symptom symptoms vaccine vaccinated health flu fever insulin physio cancer
        knee diagnosis diagnosed prescription celiac coeliac intolerant lactose""",
    "food_preference": """food foods eat eats eating ate drink drinks coffee tea sushi pizza
        vegetarian vegan cuisine restaurant restaurants meal meals breakfast lunch dinner spicy
        dessert chocolate meat fish wine beer milk cook cooking recipe recipes gluten snack
        snacks fruit vegetables pasta curry cheese peanut peanuts nut nuts shellfish latte
        espresso cake bread olives seafood""",
    "travel": """flight flights fly flying trip trips travel travels traveling travelling hotel
        hotels airport vacation holiday holidays passport visa train trains seat seats luggage
        abroad booking itinerary airline layover cruise""",
    "work": """work works working job jobs office boss manager colleague colleagues coworker
        meeting meetings project projects deadline deadlines client clients company career
        promotion team employer interview startup engineer developer designer standup shift
        contract freelance""",
    "family": """mother father mom mum dad sister sisters brother brothers son sons daughter
        daughters kid kids child children parent parents grandma grandmother grandpa
        grandfather uncle aunt cousin family baby nephew niece twins""",
    "relationship": """girlfriend boyfriend partner friend friends dating married wedding
        anniversary divorce divorced engaged fiance fiancee husband wife""",
    "pet": """dog dogs cat cats puppy kitten pet pets hamster parrot rabbit vet""",
    "hobby": """hobby hobbies guitar piano violin chess painting reading books novel novels
        hiking running marathon football soccer tennis yoga gym climbing photography
        gardening gaming knitting cycling swimming fishing surfing skiing drawing""",
    "entertainment": """movie movies film films music song songs band bands series netflix
        podcast podcasts concert album anime""",
    "education": """school university college degree course courses class classes exam exams
        study studying student teacher phd thesis learning learn lesson lessons homework""",
    "finance": """money bank salary rent mortgage loan budget invest investing investment stock
        stocks savings tax taxes credit debt pay paid price cost costs expense expenses
        insurance pension bitcoin""",
    "location": """live lives living moved address city apartment flat house home
        neighbourhood neighborhood town country based relocate relocated""",
    "technology": """computer laptop phone software app apps python javascript typescript rust
        code coding programming vim emacs linux macos iphone android server api database git
        editor keyboard""",
    "shopping": """buy bought shop shopping ordered store purchase gift gifts brand""",
    "personal_info": """name named called birthday born age nationality pronouns citizen
        email""",
    "schedule": """appointment appointments calendar schedule reminder remind""",
    "small_talk": """weather rain raining sunny snow snowing hot chilly hello hi thanks lol""",
    "preference": """prefer prefers preferred preference favourite favorite like likes love
        loves hate hates dislike dislikes""",
}
_KEYWORDS: dict[str, str] = {
    word: topic for topic, words in reversed(_TOPIC_WORDS.items()) for word in words.split()
}
# Secrets named in two words ("API key"): single words like "key" or "token" say too little.
_SECRET_PHRASE = re.compile(
    r"\b(api|access|secret|private|ssh|auth|bearer)[\s_-]+(key|token)s?\b", re.IGNORECASE
)
_TOPIC_ORDER = {topic: index for index, topic in enumerate(_TOPIC_WORDS)}
_BASE_IMPORTANCE = {
    "security": 9, "health": 8, "family": 7, "personal_info": 7, "relationship": 6,
    "finance": 6, "work": 5, "education": 5, "pet": 5, "location": 5, "food_preference": 5,
    "preference": 5, "travel": 5, "schedule": 5, "technology": 4, "hobby": 4,
    "entertainment": 4, "shopping": 3, "small_talk": 2, "general": 3,
}  # fmt: skip
_CRITICAL = re.compile(
    r"\b(allerg\w*|anaphyla\w*|epipen|emergency|seizure\w*|suicid\w*|overdose)\b", re.IGNORECASE
)
_EMPHASIS = re.compile(
    r"\b(remember|important|always|never|must|critical|urgent|don't forget|do not forget)\b|!",
    re.IGNORECASE,
)
_MAX_TOPICS = 4


def _topics(text: str, temporal: bool) -> list[str]:
    counts: dict[str, int] = {}
    for token in _TOKEN.findall(text.casefold()):
        topic = _KEYWORDS.get(token)
        if topic is not None:
            counts[topic] = counts.get(topic, 0) + 1
    if _SECRET_PHRASE.search(text):
        counts["security"] = counts.get("security", 0) + 2
    if temporal:
        counts["schedule"] = counts.get("schedule", 0) + 1
    ranked = sorted(counts, key=lambda topic: (-counts[topic], _TOPIC_ORDER[topic]))
    topics = list(dict.fromkeys(normalise_category(t) for t in ranked[:_MAX_TOPICS]))
    return topics or ["general"]


def _importance(text: str, topics: list[str]) -> int:
    score = max(_BASE_IMPORTANCE.get(topic, 4) for topic in topics)
    if _CRITICAL.search(text):
        score = max(score, 9)
    if _EMPHASIS.search(text):
        score += 2
    if "small_talk" in topics and set(topics) <= {"small_talk", "schedule"}:
        score = min(score, 2)  # weather and greetings, even dated ones
    if len(_TOKEN.findall(text)) < 3 and topics == ["general"]:
        score = min(score, 2)
    return max(1, min(10, score))


def enrich(text: str, reference_time: datetime) -> Enrichment:
    """importance 1-10, persistent|temporal with valid_until resolved against reference_time,
    and normalised snake_case categories (offline)."""
    reference = _utc(reference_time)
    try:
        valid_until = _valid_until(
            unicodedata.normalize("NFKC", text).translate(_APOSTROPHES), reference
        )
    except OverflowError:  # a period ending past year 9999: no usable expiry
        valid_until = None
    topics = _topics(text, valid_until is not None)
    return Enrichment(
        importance=_importance(text, topics),
        memory_type="temporal" if valid_until is not None else "persistent",
        valid_until=valid_until,
        categories=topics,
        event_at=event_time(text, reference),
    )


# --- categories ------------------------------------------------------------------------------

_VOCABULARY = (
    "food_preference", "health", "travel", "work", "family", "relationship", "hobby",
    "schedule", "finance", "location", "education", "pet", "shopping", "technology",
    "personal_info", "security", "entertainment", "preference", "small_talk", "general",
)  # fmt: skip
_ABBREVIATIONS = {
    "pref": "preference", "prefs": "preference", "tech": "technology", "edu": "education",
    "info": "info", "misc": "general", "fin": "finance", "loc": "location", "med": "medical",
}  # fmt: skip
_CANONICAL = {
    "food": "food_preference", "diet": "food_preference", "dietary_preference":
    "food_preference", "food_and_drink": "food_preference", "cuisine": "food_preference",
    "dietary_restriction": "food_preference", "food_like": "food_preference",
    "job": "work", "career": "work", "employment": "work", "professional": "work",
    "office": "work", "work_life": "work",
    "medical": "health", "medicine": "health", "wellness": "health", "fitness": "health",
    "allergy": "health", "health_and_fitness": "health",
    "trip": "travel", "travelling": "travel", "traveling": "travel", "vacation": "travel",
    "money": "finance", "financial": "finance", "banking": "finance", "finance_and_money":
    "finance",
    "kid": "family", "child": "family", "parent": "family", "family_member": "family",
    "animal": "pet",
    "software": "technology", "programming": "technology", "computer": "technology",
    "coding": "technology",
    "school": "education", "study": "education", "university": "education",
    "learning": "education",
    "interest": "hobby", "leisure": "hobby", "pastime": "hobby",
    "calendar": "schedule", "appointment": "schedule", "event": "schedule", "plan": "schedule",
    "reminder": "schedule",
    "home": "location", "address": "location", "residence": "location", "place": "location",
    "personal": "personal_info", "identity": "personal_info", "bio": "personal_info",
    "profile": "personal_info", "personal_detail": "personal_info",
    "personal_information": "personal_info",
    "romance": "relationship", "dating": "relationship", "partner": "relationship",
    "password": "security", "credential": "security",
    "movie": "entertainment", "music": "entertainment",
    "like": "preference", "opinion": "preference",
    "weather": "small_talk", "chitchat": "small_talk", "chit_chat": "small_talk",
    "other": "general", "miscellaneous": "general", "uncategorized": "general",
    "uncategorised": "general", "none": "general",
}  # fmt: skip
_UNCHANGED_PLURALS = _words(
    "news series species politics physics mathematics economics maths lens gas bus"
)
_MAX_CATEGORY_CHARS = 64


def _singular(word: str) -> str:
    if word in _UNCHANGED_PLURALS or len(word) < 4:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=4096)
def normalise_category(raw: str) -> str:
    """snake_case, ASCII, singular, near-spellings cluster: 'Food Preferences', 'food-preference',
    'food_prefs' → 'food_preference' (use a small canonical table + simple stemming)."""
    ascii_text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode()
    ascii_text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", ascii_text)  # camelCase → camel_Case
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    kept: list[str] = []
    for word in words:
        # Cut at word boundaries (a cut word would singularise again on a second pass).
        word = _singular(_ABBREVIATIONS.get(word, word)[:_MAX_CATEGORY_CHARS])
        if len("_".join([*kept, word])) > _MAX_CATEGORY_CHARS:
            break
        kept.append(word)
    joined = "_".join(kept)
    if not joined:
        return "general"
    if joined in _CANONICAL:
        return _CANONICAL[joined]
    if len(joined) >= 5 and joined not in _VOCABULARY:
        # Near-spellings ("food_preferance", "helth") join their topic; 0.88 keeps
        # "wealth" away from "health".
        close = difflib.get_close_matches(joined, _VOCABULARY, n=1, cutoff=0.88)
        if close:
            return close[0]
    return joined
