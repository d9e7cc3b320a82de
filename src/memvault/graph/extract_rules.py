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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache, lru_cache

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
from memvault.graph.extract_sense import (
    errand,
    generic,
    generic_purchase,
    no_person,
    no_taste,
    shared_head,
)
from memvault.language.when import event_time, parse_time
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
_MOTION = p.words(
    "moved move moving went go going travel travelled traveled flew fly drove trip back "
    "relocated relocating headed heading came return returned"
)
_PERSON_AFTER = re.compile(
    r"^(?:'s\s+(?:birthday|wife|husband|sister|brother|mother|father)"
    r"|\s+(?:said|says|told|and I)\b)"
)
# A verb right after a sentence's first word makes that word its subject, a name.
_ACTS = re.compile(
    r"\s+(?:[a-z]+ed|is|was|has|had|said|says|told|tells|went|goes|lives|works|loves|likes|"
    r"moves|wants|will|would|can|could|does|did|gets|thinks|thought|calls|asks|came|comes|"
    r"just|also|never|always)\b"
)
_RELATION_OF = {"works_for": "WORKS_FOR", "lives_in": "LOCATED_IN"}
_CLAUSE = re.compile(r",?\s+(?:and|but|then|so)\s+(?=[a-z])")
_LEAD = re.compile(rf"^\W*(?P<lead>{p.NAME}|[Hh]e\b|[Ss]he\b)")
_BE = re.compile(r"\b(?:am|is|are|was|were|been|be)\b")
# What follows "became a" or "is a … at" without being a job.
_NOT_A_JOB = p.words(
    """job position role offer lot bit fan father mother dad mom mum parent grandfather
    grandmother grandparent aunt uncle citizen vegetarian vegan member resident widow widower
    homeowner friend regular fan speaker person lover fanatic addict beginner mess genius
    idiot fool joke nightmare pain fact problem question thing way kid child adult teenager
    woman man girl boy guy lady human believer owl introvert extrovert perfectionist native
    local foreigner tourist visitor guest twin mum mom wife husband pescatarian vegan
    flexitarian sucker huge big bit little while supporter enthusiast follower very good
    great keen avid lifelong proud happy lucky really so quite pretty expert"""
)


# A sentence's first word in a gerund's form ("Moving Dana's things was hard") is capitalised
# for its place: read in lower case, it never joins the name after it. Names that end so
# ("Sterling") are rarer than gerunds; names ending in -ed or -ly (Fred, Emily) are not.
_OPENING_FORM = re.compile(r"^\W*[A-Z][a-z]+ing\b(?!')")
_NAME_SLOT = re.compile(
    r"\b(?P<lead>in|at|for|from|joined|left|visited|(?:moved|moving|relocated|relocating|flying|"
    r"heading|travelling|traveling|trip)\s+to)\s+(?P<words>[a-z][\w\-]*(?:\s+[a-z][\w\-]*){0,2})"
)
_NAME_THEN_TO = re.compile(
    r"(?P<lead>\bfrom\s+[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,2}\s+to)\s+"
    r"(?P<words>[a-z][\w\-]*(?:\s+[a-z][\w\-]*){0,2})"
)
_NOT_A_PLACE = p.words(
    """home work school uni college church bed night noon lunch dinner breakfast myself
    yourself years months weeks days hours minutes ages time times fun free sure least most
    all once first love peace hope money mind general advance fact town bit lot while
    example instance sale rent charge touch person public private good case"""
)
_PRONOUNS = frozenset({"i", "we", "you", "he", "she", "my", "our", "his", "her", "your"})
# A chat line that opens with a verb has left out its "I" ("Moved to Lyon last month").
_IMPLIED_AM = p.words(
    """heading flying planning moving going off driving travelling traveling starting visiting
    thinking hoping trying learning working living leaving based allergic married back"""
)
_IMPLIED = re.compile(
    r"^(?P<adv>(?:(?:just|recently|finally|also|actually|already|only)\s+)?)(?P<word>moved|"
    r"relocated|got|became|went|left|quit|took|bought|sold|began|started|grew|spent|flew|came|"
    r"joined|graduated|adopted|visited|finished|turned|switched|stopped|booked|been|love|"
    r"hate|enjoy|adore|prefer|" + "|".join(sorted(_IMPLIED_AM)) + r")\b",
    re.IGNORECASE,
)
_LATER_VERB = re.compile(r"\b(?:is|was|were|are|has|had|will|would|can|could|makes|made)\b")
_MOVING = re.compile(r"\b(?:moved|moving|relocated|relocating|move)\b", re.IGNORECASE)
_FINISHED = re.compile(r"\b(?:finished|completed|graduated|earned|got)\b", re.IGNORECASE)
_YEARLESS = re.compile(
    rf"\b(?:{p.MONTHS}|spring|summer|autumn|fall|winter|christmas|easter)\b", re.IGNORECASE
)
_FOR_MONTH = re.compile(rf"\bfor\s+(?=(?:{p.MONTHS})\b)", re.IGNORECASE)
_BEHIND = re.compile(r"\b(?:last|ago|yesterday|previous|earlier)\b", re.IGNORECASE)
_WEEKDAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)
_FAN = re.compile(
    r"^(?:not\s+)?(?:a\s+)?(?:(?:big|huge|massive|great|lifelong|die-hard)\s+)?fan\s+of\b", re.I
)
_STUDENT = frozenset({"student", "undergrad", "undergraduate", "pupil", "postgrad", "fresher"})
# An item that corrects ("not peanuts") or only illustrates ("especially anything by …").
_NOT_AN_ITEM = re.compile(
    r"(?i)(?:not|especially|particularly|mostly|mainly|like|such\s+as|including|even|"
    r"apart|except)\b"
)
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&|plus|as\s+well\s+as)\s+")
# A value that opens with one of these is no thing liked, owned or planned ("I love it when…").
_NOT_A_VALUE = p.words(
    """it that this these those them him her you me us what when how why where who which
    anything nothing everything something someone anyone everyone being to of not i"""
)
# A title that says the job is not held ("a retired pilot") or not yet ("an aspiring actor").
_NOT_NOW_A_JOB = frozenset(
    {"retired", "former", "ex", "aspiring", "future", "wannabe", "unemployed"}
)
# What an assistant restates of the user's own words: "you mentioned (that) you …".
_RESTATES = re.compile(
    r"(?i)\byou(?:\s+have|'ve)?\s+(?:said|mentioned|told\s+me|shared|noted)"
    r"(?:\s+(?:earlier|before|that))*\s+(?P<said>you\b[^,;.!?]+)"
)
_QUESTION = re.compile(r"\?\s*$")
# Where a sentence that ends as a question turns to asking: what stands before it, when it
# opens as a statement of the speaker's ("I am…", "My…", "We have…"), is stated.
_ASKED_AFTER = re.compile(
    r"(?i),?\s+(?:and\s+|so\s+|but\s+)?(?:(?:(?:I|we)\s+)?(?:was|were|am|are)\s+wondering|"
    r"(?:can|could|would|will|do|did)\s+you|any\s+(?:tips|ideas|suggestions|advice|"
    r"recommendations)|what|how|which|where|why|is\s+there|are\s+there|should\s+I)\b"
)
_STATES = re.compile(r"^\W*(?:I|We|My|Our)\b(?!\s+(?:wonder|was\s+wondering))")
_ASKING = re.compile(r"(?i)^\W*(?:(?:can|could|would|will)\s+you|please)\b")
_REQUESTING = re.compile(
    r"(?i)\bI(?:\s+would|'d)\s+like\s+(?:a|an|some)\b|\bI\s+(?:need|want)\s+(?:a|an|some)\b|"
    r"\bI\s+am\s+looking\s+for\b"
)
_DATED_VALUES = frozenset({"birthday", "age", "birth_year", "name"})
_NUMBERS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_BASE_FORM = {
    "going": "go",
    "getting": "get",
    "moving": "move",
    "having": "have",
    "taking": "take",
    "making": "make",
    "writing": "write",
    "changing": "change",
    "retiring": "retire",
    "proposing": "propose",
    "living": "live",
    "leaving": "leave",
    "giving": "give",
    "becoming": "become",
    "driving": "drive",
    "hiking": "hike",
    "baking": "bake",
    "using": "use",
}
_THING = re.compile(
    r"^(?:(?P<det>a|an|the|some|my|our|his|her)\s+)?(?:(?P<n>\d+|two|three|four|five|six|seven|"
    r"eight|nine|ten)\s+)?(?P<rest>\S.*)$",
    re.IGNORECASE,
)
_AFTER_HEAD = re.compile(r"\s+(?:with|in|from|for|at|on|that|which|who|to|of|by|,)\s+")


@dataclass
class _Reading:
    """What is known while reading one text, sentence by sentence."""

    me: str | None  # who "I" is; None: an assistant's own statements are not facts
    you: str | None  # who "you" is
    reference: datetime
    types: dict[str, EntityType] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # case-folded → first spelling
    last_person: str | None = None
    assistant: bool = False  # an assistant's turn: only its restatements are read
    sentence: str = ""  # the whole sentence being read, when a shape reads one clause
    asks: bool = False  # the text asks the listener something (a question, "can you…")
    requests: bool = False  # or asks for something ("I'd like a route", "I'm looking for…")
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
    lower_case = not any(ch.isupper() for ch in clean)
    sentences = _sentences(clean)
    reading.asks = any(_QUESTION.search(s) or _ASKING.match(s) for s in sentences)
    reading.requests = reading.asks or _REQUESTING.search(clean) is not None
    for sentence in sentences:
        if lower_case:
            sentence = _capitalised(sentence)
        sentence = _OPENING_FORM.sub(lambda m: m[0].lower(), sentence, count=1)
        _names(sentence, reading)
        if reading.assistant:
            restated = _RESTATES.search(sentence)
            if restated is not None:
                reading.you = SELF
                _facts(restated["said"], reading, whole_text_corrects)
                reading.you = None
            continue
        if _QUESTION.search(sentence):
            # A question asks, and states only what its possessives take for granted ("a toy
            # for my cat?") and what a statement before the asking says ("I'm planning a
            # trip to Peru and was wondering if you could…?").
            stated = _ASKED_AFTER.split(sentence, maxsplit=1)
            if len(stated) > 1 and _STATES.match(stated[0]):
                _facts(stated[0], reading, whole_text_corrects)
            _taken_for_granted(sentence, reading)
            continue
        _facts(sentence, reading, whole_text_corrects)
    entities = tuple(EntityMention(name, reading.types[name]) for name in reading.names.values())
    # A question's statement and its possessives are read apart, and may say a thing twice.
    facts = {
        (f.subject, f.predicate, (f.object or f.value or "").casefold()): f
        for f in reversed(reading.facts)
    }
    return Extraction(
        entities=entities,
        facts=tuple(reversed(facts.values())),
        relations=tuple(reading.relations),
    )


def _start(speaker: str | None, reference: datetime) -> _Reading:
    role = (speaker or "").strip()
    if not role or role.casefold() in USER_ROLES:
        return _Reading(me=SELF, you=None, reference=reference)
    if role.casefold() in ASSISTANT_ROLES:
        # An assistant's "I" is not the owner, and its "you" is advice or a guess ("you might
        # like…", "keep a regular bedtime"), not a fact: only what it restates of the user's
        # own words ("you mentioned you live in Leeds") is read, sentence by sentence.
        return _Reading(me=None, you=None, reference=reference, assistant=True)
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


def _capitalised(sentence: str) -> str:
    """A text typed all in lower case, with the words after "in", "at", "for", "moved to" …
    capitalised as the names they usually are there ("i work for google")."""

    def capital(match: re.Match[str]) -> str:
        words = match["words"].split()
        named = 0
        for word in words:
            if word in p.NOT_NAMES or word in _NOT_A_PLACE or word.endswith("ing"):
                break
            named += 1
        words[:named] = [w[:1].upper() + w[1:] for w in words[:named]]
        return f"{match['lead']} {' '.join(words)}"

    # "from leeds to york": once "Leeds" is a name, what follows its "to" is one too
    return _NAME_THEN_TO.sub(capital, _NAME_SLOT.sub(capital, sentence))


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
    while words and words[0].casefold().rstrip(".") in p.NOT_NAMES:
        words.pop(0)
    while words and words[-1].casefold().rstrip(".") in p.NOT_NAMES:
        words.pop()
    name = " ".join(words)
    return name if name and len(name) <= 200 else None


def _looks_like_an_opener(sentence: str, match: re.Match[str], name: str) -> bool:
    """A lone capitalised word opening a sentence is capitalised for its place, not as a name
    ("Quick question", "Got it", "Moving was hard"); it is one when a verb follows it ("Jon
    visited", "Dana said"), the text uses it mid-sentence or in a fact, or it names a tool."""
    at_start = bool(_OPENER.search(sentence[: match.start()])) and match[0].startswith(name)
    if not at_start or " " in name:
        return False
    after = sentence[match.end() :]
    known = name.casefold() in p.DATABASE_NAMES
    return not (known or _PERSON_AFTER.match(after) or _ACTS.match(after))


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


def _taken_for_granted(question: str, reading: _Reading) -> None:
    """What a question's possessives take for granted ("a toy for my cat?")."""
    reading.sentence = question
    when = _sentence_time(question, reading.reference)
    for shape in p.passing_cues().shapes(question):
        for match in shape.regex.finditer(question):
            for fact in _claims(shape, match, question, reading, "implied", when, False):
                reading.facts.append(fact)
                _relate(fact, reading)


def _facts(sentence: str, reading: _Reading, whole_text_corrects: bool) -> None:
    reading.sentence = sentence
    corrects = whole_text_corrects or bool(
        p.CORRECTION.search(sentence)
        or p.NOT_BUT.search(sentence)
        or p.TRAILING_NOT.search(sentence)
    )
    plain = _implied_subject(p.TRAILING_NOT.sub("", p.NOT_BUT.sub("", sentence)))
    certainty = _certainty(plain)
    # Dates are read only for a text some shape may match (reading them was a fifth of the
    # extractor's time, on sentences that state nothing).
    sentence_when = cache(lambda: _sentence_time(plain, reading.reference))
    seen: set[tuple[str, str, str]] = set()

    said_of: set[tuple[str, str]] = set()  # (subject, predicate) the clauses stated

    def read(shape: p.Shape, text: str, when: datetime | None, whole: bool = False) -> None:
        for match in shape.regex.finditer(text):
            for fact in _claims(shape, match, text, reading, certainty, when, corrects):
                if whole and (fact.subject, fact.predicate) in said_of:
                    continue  # the clause read it already, without the words after "and"
                key = (fact.subject, fact.predicate, (fact.object or fact.value or "").casefold())
                if any(k[:2] == key[:2] and k[2].startswith(f"{key[2]} ") for k in seen):
                    continue  # a clause cut short what the whole sentence read already
                if key not in seen:
                    said_of.add((fact.subject, fact.predicate))
                    seen.add(key)
                    reading.facts.append(fact)
                    _relate(fact, reading)

    # Only the shapes whose cue words the text holds can match it.
    cued = p.cues().shapes(plain)
    reactions: set[p.Shape] = set()
    for shape in cued:
        if shape.many:  # a list's "and" is no new clause
            read(shape, plain, sentence_when())
            if shape.predicate in _TASTES and any(
                _reaction(m["val"] or "") for m in shape.regex.finditer(plain)
            ):
                reactions.add(shape)  # "love the red and blue" is no taste for "red" either
    lead: str | None = None
    clauses = _CLAUSE.split(plain)
    for clause in clauses:
        # "Dana works at Acme and lives in Lyon": the second clause's subject is the first's.
        if lead is not None and clause[:1].islower():
            clause = f"{lead} {clause}"
        # A list shape read the whole sentence; here it reads a clause whose subject came
        # from the one before ("… and hates long meetings").
        shapes = [
            s
            for s in p.cues().shapes(clause)
            if (not s.many or len(clauses) > 1) and s not in reactions
        ]
        if shapes:
            when = _sentence_time(clause, reading.reference) or sentence_when()
            for shape in shapes:
                read(shape, clause, when)
        lead = _lead(clause)
    # What a clause split cut in two ("I was born and raised in Glasgow"), read whole; the
    # clauses went first, so a fact both find keeps its own clause's date.
    if len(clauses) > 1:
        for shape in cued:
            if not shape.many:
                read(shape, plain, sentence_when(), whole=True)


def _implied_subject(sentence: str) -> str:
    """A chat line that leaves out "I" ("Just moved to Denver!", "Heading to Rome in May") is
    read with it; a gerund that is the subject ("Moving to Lyon was hard") is left alone."""
    if sentence.rstrip().endswith("?"):
        return sentence
    if _FAN.match(sentence):
        opening = sentence[:1].lower() + sentence[1:]
        return f"I am {opening}" if re.match(r"(?i)not\b|a\b", sentence) else f"I am a {opening}"
    match = _IMPLIED.match(sentence)
    if match is None:
        return sentence
    rest = sentence[match.start("word") :]
    rest = rest[:1].lower() + rest[1:]
    adverb = match["adv"].strip().lower()
    adverb = f"{adverb} " if adverb else ""
    if match["word"].lower() == "been":
        return f"I have {adverb}{rest}"
    if match["word"].lower() in _IMPLIED_AM:
        if _LATER_VERB.search(sentence[match.end() :]):
            return sentence
        return f"I am {adverb}{rest}"
    return f"I {adverb}{rest}"


def _lead(clause: str) -> str | None:
    """The clause's subject as written ("I", "Dana"), for the clause after "and"."""
    match = _LEAD.match(clause)
    if match is None:
        return None
    words = match["lead"].split()
    if words[-1].casefold() in _PRONOUNS:
        return words[-1]
    return _trim(match["lead"])


def _claims(
    shape: p.Shape,
    match: re.Match[str],
    sentence: str,
    reading: _Reading,
    certainty: Certainty,
    when: datetime | None,
    corrects: bool,
) -> list[FactClaim]:
    """The facts one match states: one per value of a list, and those its other parts name
    (the title beside an employer, the town a move left, the field beside a degree)."""
    groups = match.groupdict()
    aux = (groups.get("aux") or "").casefold()
    if shape.needs_be and not _BE.search(aux):
        return []
    if shape.ahead and re.search(r"\b(?:was|were|had)\b", aux):
        return []  # "I was going to call you": a plan given up
    subject = _subject(groups, shape, reading)
    if subject is None:
        return []
    when = None if shape.timeless else _done_by(when, match[0], reading.reference)
    if shape.ahead:
        when = _still_ahead(sentence, reading.reference)
    temporal = _tense(shape, aux, match[0], sentence, when, reading.reference)
    if shape.timeless and temporal is not None:
        temporal = "current"  # "I was born on…" is no past birthday
    if temporal is None:  # negated: "I don't live in Paris" states no fact to store
        return []
    said = _Said(subject, temporal, certainty, corrects, when, sentence)
    facts = [
        said.fact(
            predicate, obj, value, *_validity(shape, predicate, temporal, sentence, when, reading)
        )
        for predicate, obj, value in _targets(shape, groups, sentence, reading)
    ]
    found = facts + _extras(shape, groups, said, facts, reading)
    return [f for f in found if _sure(f, match[0], sentence, reading)]


# --- precision: a fact the rules are unsure of is not written ------------------------------

# Words that point outside the sentence (or at the listener): a value holding one means
# nothing once stored alone ("check it out", "their work", "your meal").
_POINTING = p.words("it its this that these those them they their theirs you your yours such")
# Predicates whose value is an activity, so a verb may open it ("likes hiking", "plans to
# run a marathon"); any other value opening with a finite verb is a misread verb phrase
# ("owns bought a Tesla").
_ACTIVITY = frozenset({"plans_to", "hobby", "likes", "dislikes", "prefers"})
_DETERMINER = p.words("a an the my our his her some this that these those")
_IRREGULAR_PAST = p.words(
    """bought got sold made took went had found gave left brought kept built paid won lost
    began became came did drew drove ate fell felt flew forgot grew heard held knew led
    met ran rode said saw sent set sang sat spent stood taught told thought threw understood
    wore wrote"""
)
# What one "likes" in conversation without it being a taste: a proposal ("I like the idea of
# X", "I like that option", "I love the sound of it").
_APPROVAL = p.words(
    "idea ideas option options suggestion suggestions recommendation recommendations tip tips "
    "advice thought sound look plan approach list answer"
)
_PREPOSITIONS = p.words("in on at with for from to of by about into as than")
_ADVERB = re.compile(r"\w{3,}(?:ally|ously|ively|fully|lessly|ently|antly|edly)")
_AUXILIARIES = p.words(
    "is are was were am be been being has had does did will would can could should must"
)
# A relative clause's object stands before its verb ("what I love about it", "which I
# enjoy"), so the words after the verb are no object.
_RELATIVE = re.compile(r"(?i)\b(?:what|which|whatever)\s+$")


def _displaced(matched: str, sentence: str) -> bool:
    at = sentence.find(matched)
    return at > 0 and _RELATIVE.search(sentence[:at]) is not None


# Verbs of asking and knowing: "I'd like to know / ask / find out …" is a request, no plan.
_REQUEST = re.compile(
    r"(?i)^(?:know|ask|understand|hear|find\s+out|learn\s+more|see|check|confirm|say|"
    r"mention|share|thank|make\s+sure|get\s+(?:some|more|a\s+few)\s+(?:ideas|tips|advice|"
    r"info|information|recommendations))\b"
)
_WISH = re.compile(r"(?i)\b(?:want|wants|wanna|would\s+(?:like|love)|hope|hopes|hoping)\b")
# "thinking of / considering / wondering about" doing something is no plan yet.
_TENTATIVE = re.compile(r"(?i)\b(?:thinking|thought|considering|wondering|toying)\b")
# Where a sentence says the thing left was a job: otherwise "we left Leeds" is a move.
_WORK_CONTEXT = re.compile(
    r"(?i)\b(?:job|jobs|work|worked|working|company|firm|employer|boss|team|position|role|"
    r"office|notice|career|colleagues?|hired|fired|resigned|quit|redundant|laid\s+off|"
    r"Inc|Ltd|LLC|Corp|GmbH|plc)\b"
)

# A household leaves a town, not a job; and a sentence about home is about a place.
_HOUSEHOLD = re.compile(r"(?i)\s*(?:we|us|my\s+(?:family|wife|husband|partner)\s+and\s+I)\b")
_HOME_CONTEXT = re.compile(
    r"(?i)\b(?:move|moved|moving|relocat\w*|rent|rented|renting|live|lived|living|house|flat|"
    r"apartment|home|city|town|country|village|neighbou?rhood|emigrated)\b"
)


def _sure(fact: FactClaim, matched: str, sentence: str, reading: _Reading) -> bool:
    """Whether a fact the shapes read is one to store: not hedged, its value a thing (no verb
    phrase, nothing pointing outside the sentence), and a place never an employer."""
    if fact.certainty == "uncertain":
        return False  # "maybe I'll take a gap year", "I might move to Leeds"
    predicate = fact.predicate
    if predicate == "works_for" and fact.object is not None:
        if reading.types.get(fact.object) == "place":
            return False
        if (
            fact.temporal == "past"
            and not _WORK_CONTEXT.search(sentence)
            and (_HOUSEHOLD.match(matched) or _HOME_CONTEXT.search(sentence))
        ):
            return False  # "we left Leeds over the summer": a move, not a resignation
    if predicate == "job_title" and no_person(fact.subject):
        return False  # "the Lakeside Hotel is a four-star hotel": a place has no job
    value = fact.value if fact.value is not None else fact.object
    if value is None:
        return True
    words = value.casefold().split()
    if not words or any(w.strip(".,'\"") in _POINTING for w in words):
        return False
    first = words[0]
    finite = first in _IRREGULAR_PAST or (
        first.endswith("ed") and len(words) > 1 and words[1] in _DETERMINER
    )
    if finite and (predicate not in _ACTIVITY or first in _IRREGULAR_PAST):
        return False
    if first in _PREPOSITIONS or first in _AUXILIARIES:
        return False  # a preposition or a verb opens no thing ("likes in sports", "likes is")
    if len(words) == 1 and _ADVERB.fullmatch(first):
        return False  # "I've been playing professionally": how, not what
    if predicate in _TASTES and _displaced(matched, sentence):
        return False  # "that's what I like to hear": what is liked stands before the verb
    if predicate == "likes" and no_taste(value):
        return False  # "I love trying new things", "pushing myself": no kind of thing
    if predicate == "owns" and reading.requests and generic(value):
        return False  # "I got a new 4K TV… any recommendations?": the request's background
    if predicate == "prefers" and reading.requests:
        return False  # "I'd like a route… I prefer quiet ones": what is asked for, no taste
    if predicate == "plans_to" and (
        errand(value) or (reading.requests and generic_purchase(value))
    ):
        return False  # "planning to grab a coffee": the errand of the day, no lasting plan
    tentative = _REQUEST.match(value) or _TENTATIVE.search(matched)
    # "I'd like to add my vet bills to the budget. Can you show me how?": a wish beside a
    # request is the task the listener is asked to help with, no plan of the speaker's life.
    task = _WISH.search(matched) is not None and reading.asks
    return not (predicate == "plans_to" and (tentative or task))


@dataclass(frozen=True)
class _Said:
    """What the facts of one match share: who, when, how sure, whether it corrects."""

    subject: str
    temporal: Temporal
    certainty: Certainty
    corrects: bool
    when: datetime | None
    sentence: str

    def fact(
        self,
        predicate: str,
        obj: str | None,
        value: str | None,
        valid_from: datetime | None,
        valid_until: datetime | None,
        temporal: Temporal | None = None,
    ) -> FactClaim:
        temporal = temporal or self.temporal
        return FactClaim(
            subject=self.subject,
            predicate=predicate,
            claim=_sentence_of(self.subject, predicate, obj or value or "", temporal),
            object=obj,
            value=value,
            certainty=self.certainty,
            temporal=temporal,
            valid_from=valid_from,
            valid_until=valid_until,
            corrects=self.corrects,
        )


def _targets(
    shape: p.Shape, groups: dict[str, str | None], sentence: str, reading: _Reading
) -> list[tuple[str, str | None, str | None]]:
    """(predicate, object entity, literal value) for each thing the match states."""
    if groups.get("thing") is not None:
        return _things(
            _items(groups["thing"] or ""), (groups.get("verb") or "").casefold(), reading
        )
    predicate = _predicate(shape, groups)
    if predicate is None:
        return []
    if shape.object_type is not None and predicate != "job_title" and groups.get("obj"):
        name = _trim(groups["obj"] or "")
        if name is None:
            return []
        kind = shape.object_type
        if shape.ends and predicate == "works_for" and _MOVING.search(reading.sentence):
            predicate, kind = "lives_in", "place"  # "we left Chicago and moved to Portland"
        return [(predicate, reading.mention(name, kind), None)]
    raw = groups.get("val") or ""
    if shape is p.MAKE_AND_MODEL and not re.search(r"\d", raw):
        return []  # "my Sony A7R IV" is a thing owned; "my Mom", "my Spotify" are not
    if raw.split()[:1] and raw.split()[0].casefold() in _PREPOSITIONS:
        return []  # "like in chess, patience pays off": "like" was no verb
    if predicate in _TASTES and _reaction(raw):
        return []
    items = _items(raw) if shape.many else [raw]
    if predicate in _TASTES:
        # "classical like Bach": what follows "like" is an example of the taste, not it
        # …and a name given as an example of a taste is liked too ("like Bach")
        items = [_EXAMPLES.sub("", item) for item in _gerund_phrases(items)] + _named_examples(
            items
        )
    values = [v for v in (_value(predicate, i, reading) for i in items) if v]
    if predicate in _TASTES:
        values = shared_head(values)
    if groups.get("collected"):
        values = [f"collecting {v}" for v in values if v]
    return [_kind_of(predicate, v, reading) for v in values if v]


_COLLECTING = re.compile(r"(?i)^(?:to\s+)?collect(?:ing)?\s+(?P<what>\w.*)$")
_STAYING = re.compile(rf"^stay\s+(?:in|at)\s+(?:the\s+)?(?P<place>{p.NAME})$")


def _kind_of(predicate: str, value: str, reading: _Reading) -> tuple[str, str | None, str | None]:
    """What a taste or a plan is once its verb is read: liking to collect things is the
    hobby of collecting them; a plan to stay in a named place is a trip there."""
    collecting = _COLLECTING.match(value) if predicate == "likes" else None
    if collecting is not None:
        return "hobby", None, f"collecting {collecting['what']}"
    staying = _STAYING.match(value) if predicate == "plans_to" else None
    if staying is not None:
        return "travels_to", reading.mention(staying["place"], "place"), None
    return predicate, None, value


def _things(
    items: list[str], verb: str, reading: _Reading
) -> list[tuple[str, str | None, str | None]]:
    """Each item of "I have …": names right after a kind of animal are its names ("two dogs,
    Bella and Rocky"), and then the kind is no separate pet."""
    found: list[tuple[str, str | None, str | None]] = []
    animal: tuple[str, str | None, str | None] | None = None
    for item in items:
        name = _trim(item) if re.fullmatch(p.NAME, item) else None
        if animal is not None and name is not None:
            if animal in found:
                found.remove(animal)
            found.append(("has_pet", reading.mention(name, "other"), None))
            continue
        thing = _thing(item, verb, reading)
        animal = thing if thing is not None and thing[0] == "has_pet" and thing[2] else None
        if thing is not None:
            found.append(thing)
    return found


def _extras(
    shape: p.Shape,
    groups: dict[str, str | None],
    said: _Said,
    facts: list[FactClaim],
    reading: _Reading,
) -> list[FactClaim]:
    first = facts[0] if facts else None
    since, until = (first.valid_from, first.valid_until) if first else (None, None)
    extra: list[FactClaim] = []
    title = _value("job_title", groups.get("title") or "", reading)
    if title and first is not None:
        extra.append(said.fact("job_title", None, title, since, until))
    prev = _trim(groups.get("prev") or "")
    if prev is not None and first is not None:
        # Where a move left: lived there until the move.
        left_at = first.valid_from or said.when or reading.reference
        place = reading.mention(prev, "place")
        extra.append(said.fact("lives_in", place, None, None, left_at, temporal="past"))
    field_ = _value("field_of_study", groups.get("field") or "", reading)
    if field_:
        extra.append(said.fact("field_of_study", None, field_, since, until))
    school = _trim(groups.get("school") or "")
    if school is not None:
        done = _FINISHED.search(groups.get("verb") or "") or _FINISHED.search(said.sentence)
        name = reading.mention(school, "organisation")
        if done:
            ended = said.when or reading.reference
            extra.append(said.fact("studies_at", name, None, None, ended, temporal="past"))
        else:
            extra.append(said.fact("studies_at", name, None, since, until))
    employer = _trim(groups.get("obj") or "") if shape.predicate == "job_title" else None
    if employer is not None:
        # "I am a nurse at St Mary's" says where as well as what; a student's is a school.
        raw_title = (groups.get("val") or "").casefold().split()
        student = bool(raw_title) and raw_title[-1] in _STUDENT
        if first is not None or student:
            predicate = "studies_at" if student else "works_for"
            kind: EntityType = "organisation"
            place = reading.mention(employer, kind)
            extra.append(said.fact(predicate, place, None, since, until))
    return extra


_TASTES = frozenset({"likes", "dislikes", "prefers"})
_EXAMPLES = re.compile(r"(?i)\s+(?:like|such\s+as|including|especially)\s+.*$")
_THE_THING = re.compile(r"^[Tt]he\s+(?P<first>[a-z][\w-]*)\s+(?P<second>[\w-]+)")


def _named_examples(items: list[str]) -> list[str]:
    """The names a taste gives as its examples: "classical like Bach" likes Bach too."""
    named: list[str] = []
    for item in items:
        example = _EXAMPLES.search(item)
        if example is not None:
            named += [re.sub(r"'s$", "", n) for n in p.NAME_PATTERN.findall(example[0])]
    return named


def _reaction(raw: str) -> bool:
    """Whether a taste's value names something of the conversation rather than a kind of thing:
    a proposal the whole list hangs on ("the idea of playing a detective and gathering
    clues"), or one particular thing the listener showed ("I love the dark sky and green
    scenery"). A kind ("the cold"), a name ("the Lakers") or a part of a kind ("the smell of
    coffee") stays a taste."""
    head = re.split(r"\s+(?:of|for|to|about)\s+", raw.casefold(), maxsplit=1)[0].split()
    if head and head[-1] in _APPROVAL:
        return True
    particular = _THE_THING.match(raw.strip())
    return particular is not None and particular["second"].casefold() != "of"


def _gerund_phrases(items: list[str]) -> list[str]:
    """A list split inside one activity joined again: in "getting lost in the plot and
    characters" the "and" joins what one gerund takes, so "characters" is no item of its own;
    "hiking and swimming" stays two."""
    joined: list[str] = []
    for item in items:
        words = item.split()
        previous = joined[-1].split() if joined else []
        if (
            len(previous) > 1
            and _is_gerund(previous[0].casefold())
            and words
            and not _is_gerund(words[0].casefold())
        ):
            joined[-1] = f"{joined[-1]} and {item}"
        else:
            joined.append(item)
    return joined


def _items(raw: str) -> list[str]:
    """The items of a list value, the one it corrects away ("walnuts, not peanuts") dropped."""
    items = [i.strip() for i in _LIST_SPLIT.split(raw)]
    return [i for i in items if i and not _NOT_AN_ITEM.match(i)]


def _value(predicate: str, raw: str, reading: _Reading) -> str | None:
    """A literal value as it is stored: without the time and filler words around it, and in
    the one spelling its predicate uses (a condition's noun, a count in digits)."""
    value = raw.strip().strip("\"'")
    for _ in range(3 if predicate not in _DATED_VALUES else 0):
        value = p.VALUE_TAIL.sub("", value).strip()
    value = re.sub(r"(?i)^(?:a|an|some|just|really|also|both|either)\s+", "", value).strip()
    if not value or len(value) > 80:
        return None
    folded = value.casefold()
    first_word = folded.split()[0]
    if first_word in _NOT_A_VALUE or folded in p.NOT_NAMES:
        return None
    special = _SPELLING.get(predicate)
    return special(value, reading) if special is not None else value


def _job(value: str, reading: _Reading) -> str | None:
    words = value.casefold().split()
    if not words or any(w in _NOT_A_JOB for w in words) or words[0] in _NOT_NOW_A_JOB:
        return None
    if words[-1] in _STUDENT:
        return None  # a student's school is no employer (see ``_extras``)
    return " ".join(words)


def _condition(value: str, reading: _Reading) -> str | None:
    return p.CONDITION_OF.get(value.casefold(), value)


def _count(value: str, reading: _Reading) -> str | None:
    return value if value.isdigit() else _NUMBERS.get(value.casefold())


def _diet(value: str, reading: _Reading) -> str | None:
    diet = re.sub(r"\s+", "-", value.casefold())
    return "vegetarian" if diet == "veggie" else diet


def _degree(value: str, reading: _Reading) -> str | None:
    degree = value.casefold().replace(".", "")
    degree = {"masters": "master's", "master": "master's", "bachelors": "bachelor's"}.get(
        degree, degree
    )
    return None if degree == "degree" else degree


def _language(value: str, reading: _Reading) -> str | None:
    words = re.sub(
        r"(?i)^(?:(?:a|bit|little|of|some|basic|fluent|conversational|native|the|decent|"
        r"good|broken|passable|rusty)\s+)+",
        "",
        value,
    )
    words = re.sub(
        r"(?i)\s+(?:for|with|at|in|because|from|since|to|on|via|through|using)\b.*$", "", words
    )
    words = re.sub(r"(?i)\s+(?:lessons?|classes|class|courses?|too|as\s+well)$", "", words)
    if words.casefold() not in p.LANGUAGES:
        return None
    return words[:1].upper() + words[1:]


_OUTINGS = frozenset({"runs", "swims", "hikes", "jogs"})
_WORKS = {
    "paintings": "painting",
    "drawings": "drawing",
    "sketches": "sketching",
    "poems": "poetry",
    "sculptures": "sculpting",
}


def _hobby(value: str, reading: _Reading) -> str | None:
    value = re.sub(
        r"(?i)\s+(?:on|with|at|in|for|to|every|twice|once|online|when|whenever|most|a\s+lot)\b.*",
        "",
        value,
    )
    value = re.sub(r"(?i)^(?:the|my|our)\s+", "", value).strip()  # "play my guitar": guitar
    value = re.sub(r"(?i)\s+\w+ly$", "", value)  # "plays afrobeats loudly"
    if not value or len(value.split()) > 3:
        return None
    folded = value.casefold()
    if folded in _OUTINGS:  # "my morning runs": running
        return p.HOBBY_VERBS[folded[:-1]]
    if folded in _WORKS:  # "my paintings": painting
        return _WORKS[folded]
    if value[:1].isupper() and value[1:].islower() and reading.sentence.startswith(value):
        value = folded  # "Guitar's my thing": capitalised for its place, no name
    return p.HOBBY_VERBS.get(folded, value)


# What follows a plan's verb and its object is why, when or where it happens ("rent a car
# for my trip", "rent a car to drive the coast road", "set up tree stands on his land"): the
# plan is the verb and its object ("sign up for" keeps its "for").
_PLAN_ADJUNCT = re.compile(
    r"^(?P<core>\S+\s+\S+.*?)(?<!\bup)(?<!\bout)(?<!\boff)(?<!\bin)\s+(?:(?:for|on|during|with|so|because|since|while|before|after|"
    r"when)\s|to\s+(?!(?:the|a|an|my|our|his|her|their|your|this|that|some|work|school|bed|"
    r"church|town)\b)[a-z]+\b)"
)


def _plan(value: str, reading: _Reading) -> str | None:
    adjunct = _PLAN_ADJUNCT.match(value)
    if adjunct is not None:
        value = adjunct["core"]
    words = value.split()
    first = words[0].casefold()
    if _is_gerund(first):  # "thinking about going back"
        words[0] = _BASE_FORM.get(first) or _unget(first)
    return " ".join(words)


def _is_gerund(word: str) -> bool:
    """ "going", not "bring" or "string": what is left without "-ing" holds a vowel."""
    return word.endswith("ing") and len(word) > 4 and re.search(r"[aeiouy]", word[:-3]) is not None


def _unget(gerund: str) -> str:
    stem = gerund[:-3]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]  # "running" → "run"
    return stem


def _medicine(value: str, reading: _Reading) -> str | None:
    return None if value.casefold() in p.NOT_A_DRUG else value


def _age(value: str, reading: _Reading) -> str | None:
    return value if value.isdigit() and 0 < int(value) <= 120 else None


def _owned(value: str, reading: _Reading) -> str | None:
    return re.sub(r"(?i)^(?:brand\s+)?(?:new|second-hand|used)\s+", "", value) or None


def _day(value: str, reading: _Reading) -> str | None:
    return _day_of(value, reading.reference)


def _food(value: str, reading: _Reading) -> str | None:
    return re.split(r"(?i)\s+(?:for|because|since|due|as|when|on)\b", value, maxsplit=1)[0]


_SPELLING: dict[str, Callable[[str, _Reading], str | None]] = {
    "avoids_food": _food,
    "allergic_to": _food,
    "job_title": _job,
    "has_condition": _condition,
    "has_children": _count,
    "diet": _diet,
    "speaks": _language,
    "learning": _language,
    "hobby": _hobby,
    "plans_to": _plan,
    "takes_medication": _medicine,
    "age": _age,
    "drives": _owned,
    "owns": _owned,
    "birthday": _day,
    "degree": _degree,
}


def _certainty(sentence: str) -> Certainty:
    if p.UNCERTAIN.search(sentence):
        return "uncertain"
    if p.IMPLIED.search(sentence):
        return "implied"
    return "explicit"


# A turn's clauses read the same sentence's time again (a quarter of the calls repeat one).
@lru_cache(maxsize=4096)
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


def _subject(groups: dict[str, str | None], shape: p.Shape, reading: _Reading) -> str | None:
    if groups.get("me") or groups.get("me2"):
        return reading.me
    if groups.get("own"):
        return _pronoun(groups["own"] or "", reading)
    raw = groups.get("owner") or groups.get("subj") or groups.get("subj2")
    if raw is None:
        return None
    words = raw.split()
    if len(words) > 1 and words[-1].casefold() in _PRONOUNS:
        raw = words[-1]  # "Actually I", "Honestly we": the discourse word is no name
    if raw.casefold() in _PRONOUNS:
        return None if shape.subject_type == "project" else _pronoun(raw, reading)
    name = _trim(raw)
    if name is None:
        return None
    return reading.mention(name, shape.subject_type)


def _pronoun(word: str, reading: _Reading) -> str | None:
    word = word.casefold()
    if word in ("i", "my", "we", "our"):
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


def _still_ahead(sentence: str, reference: datetime) -> datetime | None:
    """When a plan or trip is for: a span running now ("this summer") is its part still
    ahead, and a day, month or season with no year ("on Monday", "in April", said in June)
    the next one, where ``event_time`` reads the nearest."""
    text = _FOR_MONTH.sub("in ", sentence)
    span = parse_time(text, reference)
    after, before = (span.after, span.before) if span is not None else (None, None)
    if after is not None and before is not None and after <= reference < before:
        return reference + (before - reference) / 2
    when = _sentence_time(text, reference)
    if when is None or when >= reference - timedelta(days=1):
        return when
    if _BEHIND.search(text) or re.search(r"\b(?:19|20)\d\d\b", text):
        return when
    if _WEEKDAY.search(text):
        return when + timedelta(days=7)
    if not _YEARLESS.search(text):
        return when
    try:
        return when.replace(year=when.year + 1)
    except ValueError:  # 29 February
        return None


def _thing(item: str, verb: str, reading: _Reading) -> tuple[str, str | None, str | None] | None:
    """What "I have / own / bought / sold …" says: a pet, a condition, or a thing owned; None
    for what no one owns ("a lot of work", "a question")."""
    text = item.strip()
    for _ in range(3):
        text = p.VALUE_TAIL.sub("", text).strip()
    found = _THING.match(text)
    if found is None:
        return None
    det = (found["det"] or "").casefold()
    count = found["n"]
    rest = found["rest"].strip()
    named = re.match(rf"^(?P<kind>.*?),?\s+(?:named|called)\s+(?P<name>{p.NAME})", rest)
    kind = named["kind"] if named else rest
    head_part = _AFTER_HEAD.split(kind, maxsplit=1)[0].strip()
    head_words = head_part.casefold().split()
    if not head_words:
        return None
    head = head_words[-1]
    if head in p.ANIMALS or (len(head_words) > 1 and head_words[-2] in p.ANIMALS):
        if det in ("my", "our", "his", "her"):
            return None  # "my dog Rex": the possessive pet shape reads it
        if named is not None:
            name = _trim(named["name"])
            return None if name is None else ("has_pet", reading.mention(name, "other"), None)
        return ("has_pet", None, head_part)
    stative = verb in ("have", "has", "had", "got")
    if stative and not det and p.CONDITION_PATTERN.fullmatch(text):
        return ("has_condition", None, text)
    if stative and det in ("a", "an") and p.CONDITION_PATTERN.fullmatch(text):
        return ("has_condition", None, text)
    if head in p.NOT_OWNED or any(w in p.NOT_OWNED for w in head_words):
        return None
    explicit = not stative or verb == "owned"
    branded = bool(det or count) and any(re.search(r"[A-Z]", w) for w in head_part.split())
    if not (explicit or branded or any(w in p.POSSESSIONS for w in head_words)):
        return None
    value = re.split(r"\s+(?:for|because|since|from|as|to)\b", kind, maxsplit=1)[0].strip()
    value = _owned(f"{count} {value}" if count else value, reading)
    return ("owns", None, value) if value else None


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
    stative_past = p.STATIVE_PAST.search(aux) or re.search(
        r"\b(?:lived|worked|resided|had|owned|studied)\b", matched
    )
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


# Predicates that name something the subject has ("diet", "sister"): said "X's diet is Y".
_NOUN_PREDICATES = frozenset(
    {
        *p.RELATIVES.values(),
        *("hobby", "job_title", "diet", "age", "field_of_study", "birthday", "degree"),
        *("name", "birth_year", "phone_number", "email"),
    }
)


def _sentence_of(subject: str, predicate: str, target: str, temporal: Temporal) -> str:
    who = "The user" if subject == SELF else subject
    words = predicate.replace("_", " ")
    if predicate in _NOUN_PREDICATES or predicate.startswith("favourite_"):
        be = {"current": "is", "past": "was", "future": "will be"}[temporal]
        return f"{who}'s {words} {be} {target}".strip()
    verb = {"current": "", "past": "(formerly) ", "future": "(from a future date) "}[temporal]
    return f"{who} {verb}{words} {target}".strip()


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
