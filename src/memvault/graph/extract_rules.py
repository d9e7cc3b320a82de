"""The offline extractor: names as entities and a small set of sentence shapes as facts, with
dates read by the project's one date parser (``retrieval.when``). No LLM, no network,
deterministic, and it never raises on any text.

Modest by design: it finds "Dana moved to Lyon last month" and "I'm a nurse at St Mary's",
not "Lyon is home for Dana these days". What it does find, it dates, tenses (current, past,
future), grades (explicit, implied for "I think", uncertain for "maybe") and marks as a
correction when the sentence says so ("actually…", "not X but Y").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from memvault.graph import patterns as p
from memvault.graph.claims import (
    SELF,
    Certainty,
    EntityMention,
    EntityType,
    Extraction,
    FactClaim,
    RelationClaim,
    Temporal,
    canonical_predicate,
)
from memvault.retrieval.when import event_time, parse_time
from memvault.text import normalise

# Speakers that are roles, not people: the user is the memory's owner; an assistant's "I" is
# not the owner, but its "you" is.
USER_ROLES = frozenset({"user", "human", "me", "owner"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "bot", "system", "tool", "agent", "model"})

_LONGEST = 600
_NOT_AFTER_ABBREVIATION = "".join(rf"(?<!\b{a}\.)" for a in p.ABBREVIATIONS.split("|"))
_SENTENCE_END = re.compile(
    rf"(?<=[.!?]){_NOT_AFTER_ABBREVIATION}\s+|\n+|\s+[-\u2013\u2014]\s+|;\s+"
)
_OPENER = re.compile(r"(?:^|[.!?:\"\n(]\s*)$")
_COMMON_SUFFIX = re.compile(r"(?:ing|ed|ly|ness)$", re.IGNORECASE)
_MOTION = p.words(
    "moved move moving went go going travel travelled traveled flew fly drove trip back "
    "relocated relocating headed heading came return returned"
)
_PERSON_AFTER = re.compile(
    r"^(?:'s\s+(?:birthday|wife|husband|sister|brother|mother|father)"
    r"|\s+(?:said|says|told|and I)\b)"
)
_RELATION_OF = {"works_for": "WORKS_FOR", "lives_in": "LOCATED_IN"}
_CLAUSE = re.compile(r",?\s+(?:and|but|then|so)\s+(?=[a-z])")
_LEAD = re.compile(rf"^\W*(?P<lead>{p.NAME}|[Hh]e\b|[Ss]he\b)")
_BE = re.compile(r"\b(?:am|is|are|was|were|been|be)\b")
# What follows "became a" or "is a … at" without being a job.
_NOT_A_JOB = p.words(
    """job position role offer lot bit fan father mother dad mom mum parent grandfather
    grandmother grandparent aunt uncle citizen vegetarian vegan member resident widow widower
    homeowner friend regular"""
)


@dataclass
class _Reading:
    """What is known while reading one text, sentence by sentence."""

    me: str | None  # who "I" is; None: an assistant's own statements are not facts
    you: str | None  # who "you" is
    reference: datetime
    types: dict[str, EntityType] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # case-folded → first spelling
    last_person: str | None = None
    facts: list[FactClaim] = field(default_factory=list)
    relations: list[RelationClaim] = field(default_factory=list)

    def mention(self, name: str, kind: EntityType) -> str:
        """Record ``name`` (first spelling wins) and its type (first known type wins)."""
        if name == SELF:
            return name
        key = name.casefold()
        name = self.names.setdefault(key, name)
        if self.types.get(name, "other") == "other":
            self.types[name] = kind
        if kind == "person":
            self.last_person = name
        return name


def extract_offline(text: str, *, speaker: str | None, reference_time: datetime) -> Extraction:
    """What the rules can read in ``text``; see the module docstring."""
    if reference_time.tzinfo is None:
        reference_time = reference_time.replace(tzinfo=UTC)
    reading = _start(speaker, reference_time)
    clean = normalise(text)
    whole_text_corrects = bool(p.CORRECTION.match(clean.lstrip()))
    for sentence in _sentences(clean):
        _names(sentence, reading)
        _facts(sentence, reading, whole_text_corrects)
    entities = tuple(EntityMention(name, reading.types[name]) for name in reading.names.values())
    return Extraction(
        entities=entities, facts=tuple(reading.facts), relations=tuple(reading.relations)
    )


def _start(speaker: str | None, reference: datetime) -> _Reading:
    role = (speaker or "").strip()
    if not role or role.casefold() in USER_ROLES:
        return _Reading(me=SELF, you=None, reference=reference)
    if role.casefold() in ASSISTANT_ROLES:
        return _Reading(me=None, you=SELF, reference=reference)
    reading = _Reading(me=role, you=None, reference=reference)
    reading.mention(role, "person")
    reading.last_person = None  # "he" never means the speaker
    return reading


def _sentences(text: str) -> list[str]:
    """Sentences, and a run-on "sentence" (a pasted log, a list without stops) in pieces of
    at most ``_LONGEST`` characters, so no text costs more than its length times a constant."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(p.expand_contractions(text)):
        while len(sentence) > _LONGEST:
            cut = sentence.rfind(" ", 0, _LONGEST)
            cut = cut if cut > 0 else _LONGEST
            pieces.append(sentence[:cut])
            sentence = sentence[cut:]
        pieces.append(sentence)
    return [s.strip() for s in pieces if s.strip()]


# --- entities --------------------------------------------------------------------------------


def _names(sentence: str, reading: _Reading) -> None:
    for match in p.NAME_PATTERN.finditer(sentence):
        name = _trim(match[0])
        if name is None or _looks_like_an_opener(sentence, match, name):
            continue
        titled = match[0].split()[0].casefold().rstrip(".") in p.TITLES
        reading.mention(name, "person" if titled else _context_type(sentence, match, name))


def _trim(raw: str) -> str | None:
    """A name without the capitalised function words around it ("Actually Dana" → "Dana")."""
    words = raw.split()
    while words and words[0].casefold().rstrip(".") in p.STOP_WORDS:
        words.pop(0)
    while words and words[-1].casefold().rstrip(".") in p.STOP_WORDS:
        words.pop()
    name = " ".join(words)
    return name if name and len(name) <= 200 else None


def _looks_like_an_opener(sentence: str, match: re.Match[str], name: str) -> bool:
    """A lone capitalised word opening a sentence is usually just a word ("Moving was hard")."""
    at_start = bool(_OPENER.search(sentence[: match.start()])) and name == match[0]
    return at_start and " " not in name and bool(_COMMON_SUFFIX.search(name))


def _context_type(sentence: str, match: re.Match[str], name: str) -> EntityType:
    before = sentence[: match.start()].split()
    previous = before[-1].casefold() if before else ""
    earlier = before[-2].casefold() if len(before) > 1 else ""
    if name.casefold() in p.DATABASE_NAMES:
        return "tool"
    if previous in p.TITLES or previous.rstrip(".") in p.TITLES:
        return "person"
    if previous == "project" or re.match(r"\s+(?:project|app|codebase)\b", sentence[match.end() :]):
        return "project"
    if _PERSON_AFTER.match(sentence[match.end() :]):
        return "person"
    if previous in ("at", "for"):
        return "organisation"
    if previous in ("in", "from") or (previous == "to" and earlier in _MOTION):
        return "place"
    return "other"


# --- facts -----------------------------------------------------------------------------------


def _facts(sentence: str, reading: _Reading, whole_text_corrects: bool) -> None:
    corrects = whole_text_corrects or bool(
        p.CORRECTION.search(sentence)
        or p.NOT_BUT.search(sentence)
        or p.TRAILING_NOT.search(sentence)
    )
    plain = p.TRAILING_NOT.sub("", p.NOT_BUT.sub("", sentence))
    certainty = _certainty(plain)
    sentence_when = _sentence_time(plain, reading.reference)
    seen: set[tuple[str, str]] = set()
    lead: str | None = None
    for clause in _CLAUSE.split(plain):
        # "Dana works at Acme and lives in Lyon": the second clause's subject is the first's.
        if lead is not None and clause[:1].islower():
            clause = f"{lead} {clause}"
        when = _sentence_time(clause, reading.reference) or sentence_when
        for shape in p.SHAPES:
            if not shape.cue.search(clause):
                continue
            for match in shape.regex.finditer(clause):
                claim = _claim(shape, match, clause, reading, certainty, when, corrects)
                if claim is None:
                    continue
                for fact in (claim, *_employer(shape, match, claim, reading)):
                    if (fact.subject, fact.predicate) not in seen:
                        seen.add((fact.subject, fact.predicate))
                        reading.facts.append(fact)
                        _relate(fact, reading)
        lead = _lead(clause)


def _lead(clause: str) -> str | None:
    """The clause's subject as written ("I", "Dana"), for the clause after "and"."""
    match = _LEAD.match(clause)
    return _trim(match["lead"]) if match else None


def _employer(
    shape: p.Shape, match: re.Match[str], title: FactClaim, reading: _Reading
) -> list[FactClaim]:
    """ "I am a nurse at St Mary's" says where as well as what: works_for beside job_title."""
    raw = match.groupdict().get("obj")
    name = _trim(raw) if shape.predicate == "job_title" and raw else None
    if name is None:
        return []
    employer = reading.mention(name, "organisation")
    claim = _sentence_of(title.subject, "works_for", employer, title.temporal)
    return [replace(title, predicate="works_for", object=employer, value=None, claim=claim)]


def _certainty(sentence: str) -> Certainty:
    if p.UNCERTAIN.search(sentence):
        return "uncertain"
    if p.IMPLIED.search(sentence):
        return "implied"
    return "explicit"


def _sentence_time(sentence: str, reference: datetime) -> datetime | None:
    """The moment a sentence dates its event at: "since May 2023" is the start of May, "last
    month" the middle of last month (``event_time``), and a span still running when it was
    said ("in June", said on 25 June) the middle of its part so far."""
    span = parse_time(sentence, reference)
    if span is not None and span.after is not None and span.before is None:
        return span.after
    moment = event_time(sentence, reference)
    if moment is not None or span is None or span.after is None or span.recent:
        return moment
    if span.after < reference < (span.before or reference):
        return span.after + (reference - span.after) / 2
    return None


def _claim(
    shape: p.Shape,
    match: re.Match[str],
    sentence: str,
    reading: _Reading,
    certainty: Certainty,
    when: datetime | None,
    corrects: bool,
) -> FactClaim | None:
    groups = match.groupdict()
    aux = (groups.get("aux") or "").casefold()
    if shape.needs_be and not _BE.search(aux):
        return None
    subject = _subject(groups, shape, reading)
    predicate = _predicate(shape, groups)
    if subject is None or predicate is None:
        return None
    when = None if shape.timeless else _done_by(when, match[0], reading.reference)
    temporal = _tense(shape, aux, match[0], sentence, when, reading.reference)
    if shape.timeless and temporal is not None:
        temporal = "current"  # "I was born on…" is no past birthday
    if temporal is None:  # negated: "I don't live in Paris" states no fact to store
        return None
    target = _object(shape, groups, reading)
    if target is None:
        return None
    obj, value = target
    valid_from, valid_until = _validity(shape, predicate, temporal, sentence, when, reading)
    return FactClaim(
        subject=subject,
        predicate=predicate,
        claim=_sentence_of(subject, predicate, obj or value or "", temporal),
        object=obj,
        value=value,
        certainty=certainty,
        temporal=temporal,
        valid_from=valid_from,
        valid_until=valid_until,
        corrects=corrects,
    )


def _subject(groups: dict[str, str | None], shape: p.Shape, reading: _Reading) -> str | None:
    if groups.get("own"):
        return _pronoun(groups["own"] or "", reading)
    raw = groups.get("owner") or groups.get("subj") or groups.get("subj2")
    if raw is None:
        return None
    pronoun = _pronoun(raw, reading)
    if pronoun is not None or raw.casefold() in {
        "i",
        "you",
        "he",
        "she",
        "my",
        "his",
        "her",
        "your",
    }:
        if shape.subject_type == "project":
            return None
        return pronoun
    name = _trim(raw)
    if name is None:
        return None
    if name.casefold() in {"i", "you"}:
        return _pronoun(name, reading)
    return reading.mention(name, shape.subject_type)


def _pronoun(word: str, reading: _Reading) -> str | None:
    word = word.casefold()
    if word in ("i", "my"):
        return reading.me
    if word in ("you", "your"):
        return reading.you
    if word in ("he", "she", "his", "her"):
        return reading.last_person
    return None


def _predicate(shape: p.Shape, groups: dict[str, str | None]) -> str | None:
    if shape.predicate is not None:
        return shape.predicate
    if groups.get("rel"):
        return p.RELATIVES[(groups["rel"] or "").casefold()]
    if groups.get("what"):
        return canonical_predicate(f"favourite_{groups['what']}")
    return None


def _object(
    shape: p.Shape, groups: dict[str, str | None], reading: _Reading
) -> tuple[str | None, str | None] | None:
    """(object entity, literal value): exactly one is set; None when the match has neither."""
    if shape.object_type is not None and shape.predicate != "job_title" and groups.get("obj"):
        name = _trim(groups["obj"] or "")
        return None if name is None else (reading.mention(name, shape.object_type), None)
    value = (groups.get("val") or "").strip()
    if shape.predicate == "job_title":
        value = value.casefold()
        if not value or value.split()[-1] in _NOT_A_JOB:
            return None
    if shape.predicate == "birthday":
        value = _day_of(value, reading.reference)
    return (None, value) if value else None


def _day_of(text: str, reference: datetime) -> str:
    """A birthday as ``MM-DD`` (``YYYY-MM-DD`` when the year is said), whatever the wording."""
    span = parse_time(text, reference)
    if span is None or span.after is None:
        return text
    if re.search(r"\b(?:19|20)\d\d\b", text):
        return span.after.date().isoformat()
    return span.after.strftime("%m-%d")


def _done_by(when: datetime | None, matched: str, reference: datetime) -> datetime | None:
    """A date ahead for a verb in the past ("became a manager in May", said in March) is the
    same day a year earlier: ``event_time`` reads a year-less date as the nearest one."""
    if when is None or when <= reference or not p.PAST_VERB.search(matched):
        return when
    try:
        earlier = when.replace(year=when.year - 1)
    except ValueError:  # 29 February
        return None
    return earlier if earlier <= reference else None


def _tense(
    shape: p.Shape,
    aux: str,
    matched: str,
    sentence: str,
    when: datetime | None,
    reference: datetime,
) -> Temporal | None:
    past_cue = bool(p.PAST_CUES.search(aux) or p.PAST_CUES.search(sentence.casefold()))
    if p.NEGATION.search(aux):
        return "past" if past_cue else None
    if past_cue or shape.ends:
        return "past"
    if p.FUTURE_CUES.search(aux) or (when is not None and when > reference + timedelta(days=1)):
        return "future"
    if shape.event or p.PERFECT.search(aux):
        return "current"
    stative_past = p.STATIVE_PAST.search(aux) or re.search(r"\b(?:lived|worked|resided)\b", matched)
    return "past" if stative_past else "current"


def _validity(
    shape: p.Shape,
    predicate: str,
    temporal: Temporal,
    sentence: str,
    when: datetime | None,
    reading: _Reading,
) -> tuple[datetime | None, datetime | None]:
    """(valid_from, valid_until): a change dated by the sentence starts then; an undated
    change ("I just moved to Lyon") starts when it was said; an end ("left Acme") ends then."""
    if predicate in ("birthday", "age") and shape.predicate == predicate and not shape.event:
        return None, None
    if temporal == "past":
        ended_now = shape.ends or bool(p.ENDED.search(sentence.casefold()))
        return None, (when or reading.reference) if ended_now else when
    if when is not None:
        return when, None
    return (reading.reference, None) if shape.event else (None, None)


def _sentence_of(subject: str, predicate: str, target: str, temporal: Temporal) -> str:
    who = "The user" if subject == SELF else subject
    verb = {"current": "", "past": "(formerly) ", "future": "(from a future date) "}[temporal]
    return f"{who} {verb}{predicate.replace('_', ' ')} {target}".strip()


def _relate(claim: FactClaim, reading: _Reading) -> None:
    if claim.object is None:
        return
    kind = _RELATION_OF.get(claim.predicate)
    if kind is None and claim.predicate in p.RELATIVES.values():
        kind = "KNOWS"
    if kind is None:
        return
    properties = {} if kind != "KNOWS" else {"as": claim.predicate}
    reading.relations.append(
        RelationClaim(
            source=claim.subject,
            type=kind,
            target=claim.object,
            valid_from=claim.valid_from,
            valid_until=claim.valid_until,
            properties=properties,
        )
    )
