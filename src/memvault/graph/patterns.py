"""The vocabulary the offline extractor reads text by: names, the words around them, and the
handful of sentence shapes it turns into facts.

Patterns run on text whose contractions are spelled out ("I'm" → "I am", "don't" → "do
not"), so one auxiliary list covers both. Capitals carry meaning (a name starts with one), so
nothing here ignores case except where a word may open a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from memvault import text
from memvault.graph.claims import EntityType


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_UPPER = "A-ZÀ-ÖØ-Þ"
# Abbreviations that end in a full stop inside a name or before one ("St. Mary's", "Dr. Chen"):
# no sentence ends at them.
ABBREVIATIONS = "Mr|Mrs|Ms|Dr|Prof|St|Mt|Jr|Sr"
# One capitalised word; an apostrophe inside a name (O'Brien), and a possessive 's only inside
# a longer name ("St. Mary's Hospital"), never at its end ("Dana's birthday").
# Bounded, and whole words only, so a 50,000-letter "word" costs a scan, not a square.
_WORD = rf"[{_UPPER}](?:[\w\-]|'(?!s\b)|'s(?=\s+[{_UPPER}][a-z])){{0,40}}(?![\w])"
_TOKEN = rf"(?<![\w'])(?:(?:{ABBREVIATIONS})\.(?=\s+[{_UPPER}])|{_WORD})"
# Up to four capitalised words, joined by the lower-case particles names use.
NAME = rf"{_TOKEN}(?:\s+(?:(?:of|de|da|del|van|von|&)\s+)?{_TOKEN}){{0,3}}"
NAME_PATTERN = re.compile(rf"(?<![\w'])(?:{NAME})")

# Capitalised words that are not names: function words that open sentences, calendar words,
# and discourse markers. Compared case-folded. (The keyword index's stop words are another
# list, ``text.STOP_WORDS``.)
NOT_NAMES = words(
    """i a an the my our your his her their its we you he she they it this that these those
    actually correction sorry oops wait no yes oh well so but and or also just maybe probably
    perhaps guess hey hi hello thanks thank ok okay not what who where when why how which
    today yesterday tomorrow tonight last next this morning evening night week month year
    monday tuesday wednesday thursday friday saturday sunday
    spring summer autumn fall winter christmas easter
    there here then now still since after before until in on at for to from with by of as if
    mr mrs ms dr prof sir madam mom mum dad grandma grandpa granny
    project team app service
    sounds looks seems feels sure cool great perfect awesome please let lol haha yeah
    yep nope hmm anyway whatever alright quick got wow basically literally seriously
    honestly apparently luckily sadly unfortunately fortunately obviously clearly besides
    meanwhile however interesting totally definitely certainly hopefully frankly naturally
    anyways btw fyi random funny weird guess turns lately currently somebody everything
    nothing right finally
    """
) | frozenset(text.MONTHS)

# People are named after these; what follows a title is a person.
TITLES = frozenset({"mr", "mrs", "ms", "dr", "prof"})

# Databases the uses_database patterns recognise by name, so "Falcon uses Slack" is no fact.
DATABASES = (
    "PostgreSQL|Postgres|MySQL|MariaDB|SQLite|MongoDB|Mongo|Redis|Cassandra|DynamoDB|"
    "CockroachDB|Oracle|SQL Server|ClickHouse|Elasticsearch|OpenSearch|Neo4j|Couchbase|"
    "Firestore|BigQuery|Snowflake|Supabase|TimescaleDB|InfluxDB|ScyllaDB|DuckDB|Spanner|"
    "Aurora|CouchDB|Memcached|Valkey|FalkorDB|YugabyteDB|TiDB|Db2|Redshift"
)
DATABASE_NAMES = frozenset(name.casefold() for name in DATABASES.split("|"))

# A kin or social word and the predicate it stands for ("my wife" → married_to).
RELATIVES: dict[str, str] = {
    **{
        word: word
        for word in words(
            """sister brother mother father son daughter cousin aunt uncle niece nephew
        grandmother grandfather friend boss manager colleague coworker roommate
        neighbour neighbor stepmother stepfather stepsister stepbrother"""
        )
    },
    "mom": "mother",
    "mum": "mother",
    "dad": "father",
    "grandma": "grandmother",
    "grandpa": "grandfather",
    "best friend": "friend",
    "co-worker": "coworker",
    "wife": "married_to",
    "husband": "married_to",
    "spouse": "married_to",
    "partner": "partner_of",
    "girlfriend": "partner_of",
    "boyfriend": "partner_of",
    "fiancée": "partner_of",
    "fiancee": "partner_of",
    "fiancé": "partner_of",
    "fiance": "partner_of",
}
_REL = "|".join(sorted(RELATIVES, key=len, reverse=True))

# Longest first, so an alternation tries "September" before "Sept" and "Sep".
MONTHS = "|".join(sorted((m.capitalize() for m in text.MONTHS), key=len, reverse=True))
_MONTH = rf"(?:{MONTHS})\.?"
_DATE = (
    rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?"
    r"|\d{4}-\d{2}-\d{2}|today|tomorrow|yesterday|next\s+\w+|this\s+\w+)(?:,?\s+(?:19|20)\d\d)?"
)

# --- contractions ----------------------------------------------------------------------------

_CONTRACTIONS = [
    # Chat spelling: apostrophes get dropped ("im", "dont").
    (re.compile(r"\b([Ii])m\b"), r"I am"),
    (re.compile(r"\b([Ii])ve\b"), r"I have"),
    (re.compile(r"\b([Cc])ant\b"), r"\1annot"),
    (
        re.compile(r"\b((?:[Dd]o|[Dd]oes|[Dd]id|[Ii]s|[Aa]re|[Ww]as|[Ww]ere|[Hh]ave|[Hh]as)n)t\b"),
        r"\1't",
    ),
    (re.compile(r"\b([Cc])an't\b"), r"\1annot"),
    (re.compile(r"\b([Ww])on't\b"), r"\1ill not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\b([Ii])'m\b"), r"\1 am"),
    (re.compile(r"\b(\w+)'re\b"), r"\1 are"),
    (re.compile(r"\b(\w+)'ve\b"), r"\1 have"),
    (re.compile(r"\b(\w+)'ll\b"), r"\1 will"),
    (re.compile(r"\b(\w+)'d\b"), r"\1 would"),
    (re.compile(r"\b([Ii]t|[Hh]e|[Ss]he|[Tt]hat|[Ww]ho|[Tt]here)'s\b"), r"\1 is"),
    (re.compile(r"\b(birthday|name)'s\b"), r"\1 is"),
    # and a lone "i" is the pronoun
    (re.compile(r"(?<![\w'.])i(?![\w'.])"), "I"),
]


def expand_contractions(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


# --- sentence cues ---------------------------------------------------------------------------

CORRECTION = re.compile(
    r"\b(?:actually|correction|i meant|i mean|scratch that|my mistake|my bad|i was wrong|"
    r"i misspoke|to correct|rather than|instead of)\b|^\W*(?:no|sorry|oops|wait|nope)\b\s*[,!.:-]",
    re.IGNORECASE,
)
# The wrong alternative a correction names ("not Paris but Lyon", "Lyon, not Paris"): a
# correction too, and dropped before the patterns read the sentence, so "Bob lives not in
# Paris but in Lyon" reads "Bob lives in Lyon".
NOT_BUT = re.compile(rf"\bnot\s+(?:(?:in|at|for|to|with)\s+)?(?:the\s+)?{NAME},?\s+but\s+")
TRAILING_NOT = re.compile(
    rf",\s*(?:and\s+)?not\s+(?:(?:in|at|for|to|with)\s+)?(?:the\s+)?{NAME}(?=\s*(?:[,.;!?]|$))"
)
UNCERTAIN = re.compile(
    r"\b(?:maybe|perhaps|might|possibly|not sure|i guess|could be|i suppose)\b", re.IGNORECASE
)
IMPLIED = re.compile(
    r"\b(?:i think|i believe|probably|apparently|i heard|supposedly|seems|seem to|likely)\b",
    re.IGNORECASE,
)
# A verb that tells of something done: its date cannot lie ahead ("became a manager in May",
# said in March, was last May).
PAST_VERB = re.compile(
    r"\b(?:became|moved|joined|started|began|relocated|got|took|accepted|landed|found|hired|"
    r"employed|promoted|turned|left|quit|resigned|switched|migrated|was|were|did|had)\b"
)
PAST_CUES = re.compile(r"\b(?:used to|no longer|anymore|any more|formerly|previously)\b")
# "no longer", "not … anymore": it ended by the time it was said; "used to" says only "once".
ENDED = re.compile(r"\b(?:no longer|anymore|any more)\b")
NEGATION = re.compile(r"\b(?:not|never)\b")
FUTURE_CUES = re.compile(r"\b(?:will|going to|gonna|about to|soon)\b")
STATIVE_PAST = re.compile(r"\b(?:was|were|had been)\b")
PERFECT = re.compile(r"\b(?:have|has)\b")

# --- fact shapes -----------------------------------------------------------------------------

# Who a fact is about: "I", "you", a pronoun (the person named last), or a name.
_SUBJ = rf"(?P<subj>\bI\b|\b[Ww]e\b|\b[Yy]ou\b|\b[Hh]e\b|\b[Ss]he\b|{NAME})"
# The possessor in "Dana's birthday", "my job title".
_OWNER = rf"(?:(?P<owner>{NAME})'s|(?P<own>\b[Mm]y|\b[Oo]ur|\b[Hh]is|\b[Hh]er|\b[Yy]our))"
# Auxiliaries, negations and adverbs between subject and verb; read again for tense.
_AUX = (
    r"(?P<aux>(?:\s+(?:am|is|are|was|were|have|has|had|been|be|do|does|did|not|no|longer|"
    r"used|to|will|going|gonna|about|still|now|just|actually|recently|finally|also|"
    r"currently|officially|probably|maybe|soon|already|never|happily|back|really|then|"
    r"eventually|got|get|gets|only|mostly|mainly|strictly|always|usually|generally|"
    r"honestly|totally|definitely|all|both)){0,8})"
)
_ART = r"(?:(?:a|an|the|my|his|her|their|our)\s+)?"
_OBJ = rf"(?:the\s+)?(?P<obj>{NAME})"
_JOB = (
    r"(?P<val>[a-zA-Z][\w\-]*(?:\s+[a-zA-Z][\w\-]*){0,3}?)"
    r"(?=\s+(?:at|for|with|in|since|from|starting|on|last|next|this|yesterday|today|"
    r"tomorrow|recently|now|currently|these\s+days|nowadays|a|one|two|three|four|five|six|few|"
    r"couple|several|while|until|and|but|because|when|so|though|\d+)\b"
    r"|\s*[,.;!?)]|\s*$)"
)
_DB = rf"(?P<obj>\b(?:{DATABASES})\b)"
_PROJECT = (
    rf"(?:the\s+)?(?:[Pp]roject\s+(?P<subj>{NAME})|(?P<subj2>{NAME})\s+"
    r"(?:project|app|service|team|codebase|backend|platform))"
)


@dataclass(frozen=True)
class Shape:
    """One sentence shape that states a fact.

    ``predicate`` is fixed, or ``None`` when the match names it (a kin word, a favourite
    thing). ``object_type`` is the entity type of an object, ``None`` for a literal value.
    ``event``: the verb tells of a change ("moved", "joined"), so its past tense makes the
    new state current; a stative verb ("lived", "worked at") in the past makes the fact past.
    ``ends``: the shape says the state ended ("left Acme").
    """

    predicate: str | None
    pattern: str
    object_type: EntityType | None
    # Words the shape cannot match without: a cheap search that spares the full pattern
    # on most sentences.
    cue_words: str
    subject_type: EntityType = "person"
    event: bool = False
    ends: bool = False
    # Only with a form of "be" before it: "I am a nurse at X", not "I got a job at X".
    needs_be: bool = False
    # Kinship, birthdays, favourites: no tense or dates of their own; a date in the sentence
    # ("my cousin Emma had a baby in April") is about something else.
    timeless: bool = False
    # The value is a list ("Spanish, French and a bit of Italian"): one fact per item. Such a
    # shape reads the whole sentence, since "and" inside a list is no new clause.
    many: bool = False
    # About what lies ahead (a plan, a trip): a year-less date already gone is next year's,
    # and a plan in the past tense ("I was going to call") is no plan.
    ahead: bool = False
    # What a possessive takes for granted ("a toy for my cat", "tips for my tennis lessons"):
    # true in a question too, where every other shape reads nothing.
    passing: bool = False

    # Compiled on first use, once per process: compiling every shape when the module is
    # imported cost each `memvault` command and `import memvault.service` ~0.4 s, and a
    # sentence whose cue does not match never needs its full pattern.
    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    @cached_property
    def cue(self) -> re.Pattern[str]:
        return re.compile(rf"\b(?:{self.cue_words})", re.IGNORECASE)


def _shape(
    cue: str,
    predicate: str | None,
    pattern: str,
    object_type: EntityType | None,
    *,
    subject_type: EntityType = "person",
    event: bool = False,
    ends: bool = False,
    needs_be: bool = False,
    timeless: bool = False,
    many: bool = False,
    ahead: bool = False,
    passing: bool = False,
) -> Shape:
    return Shape(
        predicate,
        pattern,
        object_type,
        cue,
        subject_type,
        event,
        ends,
        needs_be,
        timeless,
        many,
        ahead,
        passing,
    )


SHAPES: tuple[Shape, ...] = (
    # --- works_for / job_title
    _shape(
        "at|for|with",
        "job_title",
        rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+{_JOB}\s+(?:at|for|with)\s+{_OBJ}",
        "organisation",
        needs_be=True,
    ),
    _shape(
        "as",
        "job_title",
        rf"{_SUBJ}{_AUX}\s+(?:work|works|worked|working)\s+as\s+(?:(?:a|an|the)\s+)?{_JOB}"
        rf"(?:\s+(?:at|for|with)\s+{_OBJ})?",
        None,
    ),
    _shape(
        "promoted|moved up",
        "job_title",
        rf"{_SUBJ}{_AUX}\s+(?:promoted|moved\s+up)\s+to\s+(?:a\s+|an\s+)?(?:the\s+)?{_JOB}",
        None,
        event=True,
    ),
    _shape(
        "became|become",
        "job_title",
        rf"{_SUBJ}{_AUX}\s+(?:became|become|becomes)\s+(?:a|an)\s+{_JOB}",
        None,
        event=True,
    ),
    _shape(
        "title|job|role|position",
        "job_title",
        rf"{_OWNER}\s+(?:(?:new|current|official)\s+)?(?:job\s+title|title|job|role|position)"
        rf"\s+is(?:\s+now)?\s+(?:a\s+|an\s+)?{_JOB}",
        None,
    ),
    _shape(
        "work",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:work|works|worked|working)(?:\s+(?:full-time|part-time|remotely))?"
        rf"\s+(?:at|for)\s+{_OBJ}",
        "organisation",
    ),
    _shape(
        "join",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:joined|join|joins|joining)\s+{_OBJ}",
        "organisation",
        event=True,
    ),
    _shape(
        "start|began|begin",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:started|start|starts|starting|began|begin|begins)\s+"
        # "start with X" alone begins a sequence ("I'll start with the Keyword Planner")
        rf"(?:{_ART}(?:new\s+|first\s+)?(?:job|position|role|work)\s+(?:at|with)|at)\s+{_OBJ}",
        "organisation",
        event=True,
    ),
    _shape(
        "job|position|role|offer",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:got|took|accepted|landed|found)\s+{_ART}(?:new\s+)?"
        rf"(?:job|position|role|offer)\s+(?:at|with|from)\s+{_OBJ}",
        "organisation",
        event=True,
    ),
    _shape(
        "hired|employed",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:hired|employed)\s+by\s+{_OBJ}",
        "organisation",
        event=True,
    ),
    # --- lives_in
    _shape(
        "liv|resid",
        "lives_in",
        rf"{_SUBJ}{_AUX}\s+(?:live|lives|lived|living|reside|resides|resided|residing)\s+in\s+{_OBJ}",
        "place",
    ),
    _shape("based", "lives_in", rf"{_SUBJ}{_AUX}\s+based\s+(?:in|out\s+of)\s+{_OBJ}", "place"),
    # Renting is living there: "we rent in York", "I'm renting a flat in Leeds".
    _shape(
        "rent",
        "lives_in",
        rf"{_SUBJ}{_AUX}\s+(?:rent|rents|renting)\s+(?:(?:a|an|the|our|my)\s+(?:small\s+|little\s+)?"
        rf"(?:place|flat|apartment|house|room|studio|cottage|condo)\s+)?in\s+{_OBJ}",
        "place",
    ),
    _shape(
        "home|house|place|flat|apartment",
        "lives_in",
        rf"{_OWNER}\s+(?:home|house|place|flat|apartment)\s+is(?:\s+now)?\s+in\s+{_OBJ}",
        "place",
    ),
    # --- family and friends: the object is the relative
    _shape(
        _REL,
        None,
        rf"(?P<obj>{NAME})\s+is\s+{_OWNER}\s+(?:(?:older|younger|big|little|twin|baby)\s+)?"
        rf"(?P<rel>{_REL})\b",
        "person",
        timeless=True,
    ),
    _shape(
        _REL,
        None,
        rf"{_OWNER}\s+(?:(?:older|younger|big|little|twin|baby)\s+)?(?P<rel>{_REL})"
        rf"(?:'s\s+name)?\s+is\s+(?:called\s+|named\s+)?(?P<obj>{NAME})",
        "person",
        timeless=True,
    ),
    _shape(
        _REL,
        None,
        rf"{_OWNER}\s+(?:(?:older|younger|big|little|twin|baby)\s+)?(?P<rel>{_REL}),?\s+(?P<obj>{NAME})",
        "person",
        timeless=True,
    ),
    # --- birthday, age, favourites
    _shape(
        "birthday",
        "birthday",
        rf"{_OWNER}\s+birthday\s+is\s+(?:on\s+)?(?:the\s+)?(?P<val>{_DATE})",
        None,
        timeless=True,
    ),
    _shape(
        "born",
        "birthday",
        rf"{_SUBJ}{_AUX}\s+born\s+on\s+(?:the\s+)?(?P<val>{_DATE})",
        None,
        timeless=True,
    ),
    _shape(
        "old|yrs|yr",
        "age",
        rf"{_SUBJ}{_AUX}\s+(?P<val>\d{{1,3}})\s*(?:years?|yrs?)[\s-]+old\b",
        None,
    ),
    _shape(
        "turn",
        "age",
        rf"{_SUBJ}{_AUX}\s+(?:turned|turn|turns|turning)\s+(?P<val>\d{{1,3}})\b",
        None,
        event=True,
    ),
    _shape(
        "favou?rite",
        None,
        rf"{_OWNER}\s+(?:all-time\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+is\s+"
        r"(?:now\s+)?(?P<val>[^,.;!?]{1,80})",
        None,
        timeless=True,
    ),
    # --- uses_database: projects
    _shape(
        DATABASES,
        "uses_database",
        rf"\b(?:[Ww]e|[Tt]hey|I|{NAME}){_AUX}\s+(?:use|uses|using|run|runs|running|chose|picked|"
        r"adopted|switched|switch|migrated|migrate|moved|move)\s+(?:(?:over|everything)\s+)?"
        rf"(?:to\s+)?{_DB}\s+(?:for|on|in|with)\s+{_PROJECT}",
        "tool",
        subject_type="project",
    ),
    _shape(
        DATABASES,
        "uses_database",
        rf"{_PROJECT}{_AUX}\s+(?:uses|use|using|runs\s+on|run\s+on|running\s+on|built\s+on|on|"
        r"sits\s+on|stores\s+(?:its\s+)?data\s+in|keeps\s+(?:its\s+)?data\s+in|relies\s+on|"
        rf"depends\s+on|(?:switched|moved|migrated|went)\s+(?:over\s+)?(?:from\s+(?:{DATABASES})"
        rf"\s+)?to)\s+{_DB}",
        "tool",
        subject_type="project",
    ),
    _shape(
        DATABASES,
        "uses_database",
        rf"(?P<subj>{NAME}){_AUX}\s+(?:uses|runs\s+on|is\s+built\s+on|stores\s+(?:its\s+)?data"
        rf"\s+in|(?:switched|moved|migrated)\s+(?:over\s+)?(?:from\s+(?:{DATABASES})\s+)?to)\s+{_DB}",
        "tool",
        subject_type="project",
    ),
    _shape(
        DATABASES,
        "uses_database",
        r"(?:switched|migrated|moved|ported|converted)\s+(?:the\s+)?(?:[Pp]roject\s+)?"
        rf"(?P<subj>{NAME})(?:\s+(?:project|app|service|backend))?\s+(?:over\s+)?"
        rf"(?:from\s+(?:{DATABASES})\s+)?to\s+{_DB}",
        "tool",
        subject_type="project",
        event=True,
    ),
    _shape(
        DATABASES,
        "uses_database",
        rf"\b[Ff]or\s+{_PROJECT}\s*,?\s+(?:we|they|I){_AUX}\s+"
        rf"(?:use|using|run|chose|picked|went\s+with|rely\s+on)\s+{_DB}",
        "tool",
        subject_type="project",
    ),
)

# --- everyday wording: diet, health, likes, plans, trips, things, pets, school, languages ----

# Where a literal value ends: punctuation, or a word that starts another thought.
_END = (
    r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:but|because|since|so|though|although|while|when|if|which|"
    r"who|whose|where|that|as\s+well)\b|\s+and\s+(?:I|we|you|he|she|they|it|my|our|then|also)\b)"
)
_VAL = rf"(?P<val>[^,.;:!?]{{1,80}}?){_END}"
# A list value runs across commas ("English, Hindi and Tamil"); items are split later.
_LIST_END = (
    r"(?=\s*(?:[.;:!?)]|$)|,?\s+(?:but|because|since|so|though|although|while|when|if|which|"
    r"who|whose|where|that)\b|,?\s+and\s+(?:I|we|you|he|she|they|it|my|our|then|also)\b"
    # "… and wants to be a vet", "… and makes her own kimchi": a new verb, no list item
    r"|,?\s+and\s+(?:[a-z]{3,}(?:s|ed)|has|is|was|does|goes)\s+(?=\S))"
)
_LIST = rf"(?P<val>[^.;:!?]{{1,120}}?){_LIST_END}"
_LIST_ITEMS = rf"[^.;:!?]{{1,120}}?{_LIST_END}"
# A value item's own tail that is no part of it: when and how often, filler words.
_TIME_WORD = (
    rf"(?:{_MONTH}|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|weekends?|week|month|year|"
    r"spring|summer|autumn|fall|winter|christmas|easter|morning|mornings|evening|evenings|"
    r"night|nights|day|days|afternoon|tonight|tomorrow|today|yesterday|(?:19|20)\d\d|"
    r"\d{1,2}(?:st|nd|rd|th))"
)
_WHEN_WORD = r"(?:this|next|last|coming|every|each|most|one|some)"
VALUE_TAIL = re.compile(
    r"(?:\s+(?:(?:in|on|at|by|for|during|over|around|from|until|before|after)\s+(?:the\s+)?"
    rf"(?:{_WHEN_WORD}\s+)?{_TIME_WORD}|{_WHEN_WORD}\s+{_TIME_WORD}|tonight|tomorrow|today|"
    r"yesterday|weekends|mornings|evenings|nights)\b.*"
    r"|\s+during\s+.*"  # "during Black Friday": whatever it names is a when
    r"|\s+(?:twice|once|three\s+times|two\s+times)\s+a\s+\w+.*"
    r"|\s+(?:every|each)\s+(?:other|second|third|two|three|four|few|couple\s+of)\s+\w+.*"
    r"|\s+(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+|a\s+few|"
    r"a\s+couple\s+of|several|many)\s+(?:days|weeks|months|years|day|week|month|year)\s+ago.*"
    r"|\s+(?:for|over)\s+(?:about\s+|almost\s+|nearly\s+|over\s+)?(?:a\s+few|a\s+couple\s+of|"
    r"several|many|\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?:years|months|weeks)"
    r".*"
    r"|\s+(?:these\s+days|right\s+now|nowadays|lately|at\s+the\s+moment|someday|one\s+day|"
    r"some\s+day|soon|eventually|a\s+lot|so\s+much|very\s+much|at\s+all|anymore|any\s+more|"
    r"too|as\s+well|online|regularly|daily|weekly|for\s+years|for\s+fun|to\s+relax|"
    r"with\s+(?:my\s+)?(?:friends|family|kids|mates)|every\s+so\s+often|from\s+time\s+to\s+time|"
    r"again|though|honestly|really|here|there)\s*$)",
    re.IGNORECASE,
)

_NEG_EAT = r"(?:(?:do|does|did)\s+not|never|cannot|can\s+not|will\s+not)"
FOODS = (
    r"gluten|dairy|meat|red\s+meat|fish|pork|beef|chicken|eggs|nuts|peanuts|sugar|alcohol|"
    r"caffeine|coffee|lactose|shellfish|seafood|soy|wheat|carbs|spicy\s+food|booze"
)
DIET = (
    r"(?:veggie|vegetarian|vegan|pescatarian|pescetarian|flexitarian|keto|paleo|kosher|halal|"
    r"gluten[- ]free|dairy[- ]free|plant[- ]based|lacto-vegetarian|low[- ]carb|raw\s+vegan)"
)
_CONDITION = (
    r"(?:asthma|(?:type\s+(?:1|2|one|two)\s+)?diabetes|migraines?|epilepsy|arthritis|"
    r"(?:high|low)\s+blood\s+pressure|hypertension|depression|anxiety|hay\s*fever|eczema|"
    r"psoriasis|(?:a\s+)?bad\s+(?:back|knee|knees|hip)|(?:chronic\s+)?back\s+pain|ibs|"
    r"crohn's(?:\s+disease)?|co?eliac(?:\s+disease)?|adhd|autism|dyslexia|insomnia|"
    r"sleep\s+apno?ea|tinnitus|lupus|multiple\s+sclerosis|endometriosis|pcos|"
    r"hypothyroidism|long\s+covid|(?:a\s+)?heart\s+condition|high\s+cholesterol|osteoporosis|"
    r"fibromyalgia|gout|an(?:a)?emia|ptsd|ocd|bipolar(?:\s+disorder)?|chronic\s+fatigue|"
    r"a\s+(?:nut|peanut|gluten|dairy|shellfish|egg)\s+intolerance)"
)
# An adjective for a condition, and the condition it names.
CONDITION_OF: dict[str, str] = {
    "diabetic": "diabetes",
    "asthmatic": "asthma",
    "epileptic": "epilepsy",
    "lactose intolerant": "lactose intolerance",
    "gluten intolerant": "gluten intolerance",
    "anemic": "anemia",
    "anaemic": "anaemia",
    "autistic": "autism",
    "dyslexic": "dyslexia",
    "pregnant": "pregnant",
    "coeliac": "coeliac disease",
    "celiac": "celiac disease",
    "colour-blind": "colour blindness",
    "color-blind": "colour blindness",
    "colourblind": "colour blindness",
    "colorblind": "colour blindness",
    "deaf": "deafness",
    "insomniac": "insomnia",
    "bipolar": "bipolar disorder",
    "hypertensive": "hypertension",
}
CONDITION_PATTERN = re.compile(_CONDITION, re.IGNORECASE)
_CONDITION_ADJ = "|".join(sorted((re.escape(k) for k in CONDITION_OF), key=len, reverse=True))
_DRUG = (
    r"(?:insulin|aspirin|ibuprofen|paracetamol|levothyroxine|the\s+pill|"
    r"[a-z]{3,}(?:mab|zole|statin|cillin|mycin|pril|sartan|olol|oxetine|azepam|pam|lam|"
    r"formin|amine|amol|idine|profen|pine|tide|xine|ide|one|ine))"
)
NOT_A_DRUG = words(
    """online routine machine medicine magazine wine line engine gasoline marine cuisine
    discipline shine pine fine mine nine none phone one someone everyone alone zone tone
    stone bone anyone gone done iodine caffeine nicotine morphine side ride guide pride
    everyone noone headline deadline timeline vaccine"""
)
ANIMALS = words(
    """dog dogs cat cats kitten kittens puppy puppies rabbit rabbits bunny bunnies hamster
    hamsters gerbil gerbils parrot parrots budgie budgies cockatiel bird birds fish goldfish
    tortoise tortoises turtle turtles snake snakes lizard lizards gecko geckos iguana horse
    horses pony ponies ferret ferrets chickens hens goat goats rat rats mice axolotl
    retriever retrievers labrador lab collie poodle beagle dachshund terrier spaniel pug husky
    bulldog shepherd greyhound whippet corgi chihuahua schnauzer rottweiler doberman
    labradoodle cockapoo tabby siamese rooster roosters hen duck ducks goose geese pig pigs
    alpaca alpacas llama llamas tetra tetras"""
)
_ANIMAL = "|".join(sorted(ANIMALS, key=len, reverse=True))
# What "I have a …" may own; a capitalised product name ("a Kindle") is one too.
POSSESSIONS = words(
    """car cars bike bikes bicycle e-bike motorbike motorcycle scooter van truck boat sailboat
    yacht caravan camper campervan house home flat apartment cabin cottage condo villa
    garden allotment laptop computer pc phone smartphone tablet ipad iphone kindle camera
    guitar guitars piano keyboard drums violin tv television console watch drone printer
    telescope macbook playstation xbox ps5 switch honda toyota ford volvo bmw audi tesla
    mini vw volkswagen fiat kia hyundai nissan mazda subaru peugeot renault skoda mercedes
    porsche jeep lexus citroen jaguar prius civic golf polo corolla estate hatchback suv"""
)
# Nouns after "I have a …" that are no thing owned.
NOT_OWNED = words(
    """lot bit question idea feeling problem meeting appointment time job chance day week
    cold flu headache fever cough baby boyfriend girlfriend husband wife partner friend
    friends son daughter kids children brother sister feeling sense dream plan favour
    favor minute moment look go try break rest word chat call deal way choice crush
    class exam test party allergy intolerance degree phd masters doubt"""
)
_DEGREE = (
    r"(?i:ph\.?d\.?|doctorate|master's|masters|master|mba|msc|m\.sc\.?|ma|ba|bsc|b\.sc\.?|"
    r"bachelor's|bachelors|bachelor|diploma|llb|llm|md|degree)"
)
LANGUAGES = words(
    """english spanish french german italian portuguese dutch polish russian ukrainian czech
    slovak hungarian romanian bulgarian greek turkish arabic hebrew persian farsi urdu hindi
    bengali punjabi tamil telugu marathi gujarati kannada malayalam mandarin cantonese
    chinese japanese korean vietnamese thai indonesian malay tagalog filipino swahili
    amharic yoruba igbo hausa zulu xhosa afrikaans swedish norwegian danish finnish
    icelandic irish welsh gaelic catalan basque galician croatian serbian bosnian slovenian
    albanian lithuanian latvian estonian georgian armenian nepali sinhala khmer lao burmese
    mongolian latin esperanto asl"""
)
# Activities read from a bare verb ("I run every day"), as the hobby they name.
HOBBY_VERBS: dict[str, str] = {
    "run": "running",
    "swim": "swimming",
    "paint": "painting",
    "draw": "drawing",
    "knit": "knitting",
    "sew": "sewing",
    "bake": "baking",
    "cook": "cooking",
    "hike": "hiking",
    "cycle": "cycling",
    "surf": "surfing",
    "ski": "skiing",
    "dance": "dancing",
    "sing": "singing",
    "climb": "climbing",
    "skate": "skating",
    "row": "rowing",
    "box": "boxing",
    "garden": "gardening",
    "fish": "fishing",
    "sail": "sailing",
    "crochet": "crocheting",
    "jog": "jogging",
    "golf": "golf",
    "meditate": "meditation",
}
_HOBBY_VERB = "|".join(sorted(HOBBY_VERBS, key=len, reverse=True))
_HOBBY_ING = "|".join(sorted(HOBBY_VERBS.values(), key=len, reverse=True))
_HABIT = (
    r"(?=\s*(?:[,.;!?]|$)|\s+(?:every|most|each|a\s+lot|regularly|daily|weekly|twice|once|"
    r"on\s+(?:weekends|the\s+weekend|\w+days)|at\s+weekends|in\s+my\s+(?:free|spare)\s+time|"
    r"for\s+fun|whenever|when\s+I\s+can|to\s+relax|as\s+a\s+hobby)\b)"
)
_DO_ACTIVITY = (
    r"yoga|pilates|karate|judo|taekwondo|jiu[- ]jitsu|crossfit|ballet|tai\s+chi|meditation|"
    r"zumba|kickboxing|boxing|aikido|kung\s+fu|parkour|archery|fencing|triathlons?|"
    rf"{_HOBBY_ING}|woodworking|photography|pottery|calligraphy|origami|embroidery|"
    r"bouldering|birdwatching|birding|martial\s+arts"
)
_EDU = r"(?:University|College|School|Academy|Institute|Polytechnic|Uni)"
_EDU_NAME = rf"(?=(?:[^\s,.;!?]+\s+){{0,3}}?{_EDU}\b){NAME}"
_MOVE_FROM = rf"(?:(?:from|out\s+of)\s+(?P<prev>{NAME})\s+)?"
_BE_A = r"(?:am|is|are|was|were|been|be)\s+(?:\w+\s+){0,4}?an?\s"
_DEGREE_CUE = (
    r"phd|ph\.d|doctorate|master|mba|msc|m\.sc|ma\b|ba\b|bsc|b\.sc|bachelor|diploma|llb|llm|"
    r"md\b|degree"
)
_TITLE = _JOB.replace("(?P<val>", "(?P<title>")
_AS_TITLE = rf"(?:[^,.;!?]{{0,30}}?\s+as\s+(?:a|an|the)\s+{_TITLE})?"
_LIKE_ADV = (
    r"(?:(?:really|absolutely|totally|just|also|truly|genuinely|so|still|honestly|quite|rather|"
    r"kinda|kind\s+of|actually|pretty\s+much|very\s+much|do|personally)\s+)*"
)
_DISLIKE = (
    r"(?:hate|hates|dislike|dislikes|detest|detests|loathe|loathes|cannot\s+stand|"
    r"can\s+not\s+stand|cannot\s+bear|(?:do|does)\s+not\s+(?:really\s+|much\s+|particularly\s+|"
    r"especially\s+)?(?:like|enjoy|love|care\s+for)|(?:am|is|are)\s+not\s+(?:a\s+)?(?:big\s+|"
    r"huge\s+|great\s+)?fan\s+of|(?:am|is|are)\s+not\s+(?:really\s+|very\s+|too\s+|that\s+)?"
    r"(?:into|keen\s+on|fond\s+of))"
)
_PLAN_VERB = (
    r"(?:(?:plan|plans|planning|planned)\s+(?:to|on)|(?:hope|hopes|hoping|intend|intends|"
    r"intending|aim|aims|aiming|want|wants|would\s+like|would\s+love|going|decided|"
    r"have\s+decided)\s+to|gonna|wanna)"
)
_VP = r"(?P<val>(?!the\b|a\b|an\b|my\b|our\b|be\b|be\s+in\b)[a-z][^,.;:!?]{0,80}?)"
_TRAVEL = (
    r"(?:going|flying|heading|driving|travelling|traveling|off|sailing|jetting\s+off|"
    r"taking\s+the\s+train|coming)"
)
_TRIP = (
    r"(?:a|an|our|my)\s+(?:(?:short|quick|long|weekend|family|work|business|little|big|"
    r"road|ski|beach|city)\s+)?(?:trip|holiday|vacation|getaway|break|flight|flights|tickets?)"
)

EVERYDAY: tuple[Shape, ...] = (
    # --- residence: moves, their origin, growing up, "home is"
    _shape(
        "mov|relocat",
        "lives_in",
        rf"{_SUBJ}{_AUX}\s+(?:moved|move|moves|moving|relocated|relocate|relocates|relocating)"
        rf"\s+(?:(?:back|over|out|away|house)\s+)?{_MOVE_FROM}to\s+{_OBJ}",
        "place",
        event=True,
    ),
    _shape(
        "grew", "grew_up_in", rf"{_SUBJ}{_AUX}\s+grew\s+up\s+in\s+{_OBJ}", "place", timeless=True
    ),
    _shape("home", "lives_in", rf"(?<![\w'])(?P<me>[Hh]ome)\s+is\s+(?:now\s+)?{_OBJ}", "place"),
    _shape("home", "lives_in", rf"{_SUBJ}{_AUX}\s+(?:call|calls)\s+{_OBJ}\s+home\b", "place"),
    # --- work: titles beside employers, plain titles, leaving a job
    _shape(
        "work|join|start|began",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:(?:work|works|worked|working|started|start|starts|starting|began)"
        r"(?:\s+(?:full-time|part-time|remotely))?(?:\s+in\s+[a-z]+(?:\s+[a-z]+)?)?\s+"
        r"(?:at|for|(?<!start\s)(?<!starts\s)(?<!starting\s)(?<!started\s)(?<!began\s)with)|"
        r"joined|join|joins|joining)"
        rf"\s+{_OBJ}{_AS_TITLE}",
        "organisation",
    ),
    _shape(
        r"been\s+(?:at|with)\s",
        "works_for",
        rf"{_SUBJ}\s+(?:have|has)\s+been\s+(?:at|with)\s+{_OBJ}(?=\s+(?:for|since)\b)",
        "organisation",
    ),
    _shape(
        _BE_A,
        "job_title",
        rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+{_JOB}\s+(?:at|for|with)\s+(?:(?:a|an)\s+[a-z]+\s+"
        rf"(?:called|named)\s+)?{_OBJ}",
        "organisation",
        needs_be=True,
    ),
    _shape(_BE_A, "job_title", rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+{_JOB}", None, needs_be=True),
    _shape(
        "left|quit|resigned|stopped",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:left|quit|resigned\s+from|stopped\s+working\s+(?:at|for))\s+"
        rf"(?:{_ART}(?:job|position|role)\s+(?:at|with)\s+)?{_OBJ}",
        "organisation",
        event=True,
        ends=True,
    ),
    # --- diet
    _shape(
        "veg|pesc|flexitarian|keto|paleo|kosher|halal|free|based|carb",
        "diet",
        rf"{_SUBJ}{_AUX}\s+(?:(?:a|an)\s+)?(?:(?:strict|full|proper|mostly)\s+)?"
        rf"(?:on\s+(?:a|an)\s+)?(?P<val>{DIET})(?![\w-])(?!\s+(?:food|restaurants?|options?|"
        r"meals?|recipes?|places?|cafes?|friends?))",
        None,
        needs_be=True,
    ),
    _shape(
        "veg|pesc|flexitarian|keto|paleo|kosher|halal|free|based|carb",
        "diet",
        rf"{_SUBJ}{_AUX}\s+(?:follow|follows|eat|eats|keep|keeps)\s+(?:(?:a|an)\s+)?"
        rf"(?:strict\s+)?(?P<val>{DIET})(?![\w-])",
        None,
    ),
    _shape(
        "veg|pesc|flexitarian|keto|paleo|kosher|halal|free|based|carb",
        "diet",
        rf"{_SUBJ}{_AUX}\s+(?:went|go|goes|gone|going|became|become|turned|switched\s+to)\s+"
        rf"(?:(?:a|an)\s+)?(?:fully\s+)?(?P<val>{DIET})(?![\w-])",
        None,
        event=True,
    ),
    _shape(
        "eat|drink|avoid",
        "avoids_food",
        rf"{_SUBJ}(?:\s+(?:really|also|just|generally|usually|strictly))?\s+(?:{_NEG_EAT}\s+"
        rf"(?:really\s+|ever\s+)?(?:eat|drink|touch)|avoid|avoids|try\s+to\s+avoid)\s+{_LIST}",
        None,
        many=True,
    ),
    _shape(
        "have|do",
        "avoids_food",
        rf"{_SUBJ}\s+{_NEG_EAT}\s+(?:have|do)\s+(?P<val>(?:{FOODS})(?:\s+(?:or|and)\s+"
        rf"(?:{FOODS}))*)\b",
        None,
        many=True,
    ),
    _shape(
        "stopped",
        "avoids_food",
        rf"{_SUBJ}{_AUX}\s+(?:stopped|quit)\s+(?:eating|drinking)\s+{_LIST}",
        None,
        event=True,
        many=True,
    ),
    # --- health
    _shape(
        "allergic",
        "allergic_to",
        rf"{_SUBJ}{_AUX}\s+(?:(?:very|severely|really|mildly|slightly|deathly|super)\s+)?"
        rf"allergic\s+to\s+{_LIST}",
        None,
        many=True,
    ),
    _shape(
        "allerg",
        "allergic_to",
        rf"{_SUBJ}{_AUX}\s+(?:have|has|got)\s+(?:a|an)\s+(?:(?:severe|mild|bad|serious)\s+)?"
        r"(?P<val>[a-z\-]+(?:\s+[a-z\-]+)?)\s+allerg(?:y|ies)",
        None,
    ),
    _shape(
        "allerg",
        "allergic_to",
        rf"{_SUBJ}{_AUX}\s+(?:have|has|got)\s+(?:a|an)\s+(?:(?:severe|mild|bad|serious)\s+)?"
        rf"allerg(?:y|ies)\s+to\s+{_LIST}",
        None,
        many=True,
    ),
    _shape(
        "suffer|living|live|diagnosed",
        "has_condition",
        rf"{_SUBJ}{_AUX}\s+(?:suffer\s+from|suffers\s+from|suffering\s+from|living\s+with|"
        rf"live\s+with|lives\s+with)\s+{_VAL}",
        None,
    ),
    _shape(
        "get",
        "has_condition",
        rf"{_SUBJ}{_AUX}\s+(?:get|gets)\s+(?P<val>{_CONDITION})\b",
        None,
    ),
    _shape(
        "diagnosed",
        "has_condition",
        rf"{_SUBJ}{_AUX}\s+diagnosed\s+with\s+{_VAL}",
        None,
        event=True,
    ),
    _shape(
        _CONDITION_ADJ,
        "has_condition",
        rf"{_SUBJ}{_AUX}\s+(?P<val>{_CONDITION_ADJ})\b",
        None,
        needs_be=True,
    ),
    _shape(
        r"take|taking|(?:am|is|are)\s+on\s",
        "takes_medication",
        rf"{_SUBJ}{_AUX}\s+(?:take|takes|taking|on)\s+(?P<val>{_DRUG})\b(?=\s*(?:[,.;!?]|$)|"
        r"\s+(?:every|each|daily|twice|once|for|in\s+the|at\s+night|and|now|since|as)\b)",
        None,
    ),
    # --- family: marriage, children, a possessive pet
    _shape("married", "married_to", rf"{_SUBJ}{_AUX}\s+married\s+to\s+{_OBJ}", "person"),
    _shape(
        "kid|child|son|daughter|boy|girl",
        "has_children",
        rf"{_SUBJ}{_AUX}\s+(?:have|has|got)\s+(?P<val>\d{{1,2}}|one|two|three|four|five|six|"
        r"seven|eight|nine|ten)\s+(?:(?:young|little|grown-up|grown|small|teenage)\s+)?"
        r"(?:kids|children|sons|daughters|boys|girls|kid|child|son|daughter)\b",
        None,
    ),
    # --- pets
    _shape(
        _ANIMAL,
        "has_pet",
        rf"{_OWNER}\s+(?:(?:old|new|little|baby|sweet|beloved)\s+)?(?:{_ANIMAL}),?\s+"
        rf"(?P<obj>{NAME}),?\s+(?:died|passed\s+away|was\s+put\s+down)",
        "other",
        event=True,
        ends=True,
    ),
    _shape(
        _ANIMAL,
        "has_pet",
        rf"{_OWNER}\s+(?:(?:old|new|little|baby|sweet|beloved)\s+)?(?:{_ANIMAL})"
        rf"(?:\s+is|'s\s+name\s+is|\s+is\s+(?:called|named)|,)?\s+(?P<obj>{NAME})",
        "other",
        timeless=True,
    ),
    # --- possessions and pets by "have", "own", "bought": the thing says which
    _shape(
        "have|has|had|own|got",
        None,
        rf"{_SUBJ}{_AUX}\s+(?P<verb>have|has|had|own|owns|owned|(?<=have\s)got|(?<=has\s)got)\s+"
        r"(?P<thing>(?:a|an|the|some|two|three|four|five|\d+)\s+"
        rf"{_LIST_ITEMS}|(?!a\b|an\b|my\b|our\b|the\b|had\b|got\b|been\b|to\b|no\b|any\b)"
        rf"{_LIST_ITEMS})",
        None,
        many=True,
    ),
    _shape(
        "bought|buy|adopted|rescued|got",
        None,
        rf"{_SUBJ}{_AUX}\s+(?P<verb>bought|adopted|rescued|got)\s+(?P<thing>(?:a|an|the|"
        rf"some|two|three|four|five|\d+)\s+{_LIST_ITEMS})",
        None,
        event=True,
        many=True,
    ),
    _shape(
        "sold|gave|rid",
        None,
        rf"{_SUBJ}{_AUX}\s+(?P<verb>sold|gave\s+away|got\s+rid\s+of)\s+(?:(?:my|our|the)\s+)?"
        rf"(?P<thing>{_LIST_ITEMS})",
        None,
        event=True,
        ends=True,
        many=True,
    ),
    _shape(
        "drive|driving",
        "drives",
        rf"{_SUBJ}{_AUX}\s+(?:drive|drives|driving)\s+(?:(?:a|an|the)\s+)?(?P<val>(?:[a-z\-]+\s+|"
        rf"\d{{4}}\s+){{0,2}}{NAME}(?:\s+\d+\w*)?)",
        None,
    ),
    _shape(
        "car",
        "drives",
        rf"{_OWNER}\s+car\s+is\s+(?:a|an)\s+(?P<val>(?:[a-z\-]+\s+){{0,2}}{NAME}(?:\s+\d+\w*)?)",
        None,
    ),
    # "my laptop is a ThinkPad X1": the make named is the thing owned.
    _shape(
        "laptop|phone|bike|camera|guitar|watch|tablet|computer|tv|console|kindle",
        "owns",
        rf"{_OWNER}\s+(?:(?:new|old|current)\s+)?(?:laptop|phone|bike|bicycle|camera|guitar|watch|"
        r"tablet|computer|tv|console|e-reader)\s+is\s+(?:now\s+)?(?:a|an)\s+"
        rf"(?P<val>{NAME}(?:\s+[A-Z0-9][\w\-]*)*)",
        None,
    ),
    # --- likes and dislikes
    _shape(
        "love|like|enjoy|adore",
        "likes",
        rf"{_SUBJ}{_AUX}\s+{_LIKE_ADV}(?:love|loves|like|likes|enjoy|enjoys|adore|adores)\s+"
        rf"(?:to\s+)?{_LIST}",
        None,
        many=True,
    ),
    # "I've always liked Under Armour": a liking that holds to now
    _shape(
        "always",
        "likes",
        rf"{_SUBJ}\s+(?:have|has)\s+always\s+(?:liked|loved|enjoyed|adored)\s+{_LIST}",
        None,
        many=True,
    ),
    # "I just finished "The Crown" and loved it": a work finished and loved is a taste
    _shape(
        r"loved|enjoyed",
        "likes",
        rf"{_SUBJ}{_AUX}\s+(?:[a-z]+\s+)?(?:watched|watching|binge-watching|listened\s+to|"
        r"listening\s+to|read|reading|finished|saw|played|playing)\s+(?P<val>\"[^\"]{1,60}\"(?:\s*(?:,|and|,\s+and)\s*"
        r"\"[^\"]{1,60}\")*)\s+and\s+(?:really\s+|absolutely\s+|totally\s+)?(?:loved|enjoyed)\s+"
        r"(?:it|them|both|every)\b",
        None,
        many=True,
    ),
    _shape(
        "into|obsessed|passionate|crazy",
        "likes",
        rf"{_SUBJ}{_AUX}\s+(?:(?:really|so|very|totally|quite|big|heavily|super)\s+)*"
        rf"(?:into|obsessed\s+with|passionate\s+about|crazy\s+about)\s+{_LIST}",
        None,
        needs_be=True,
        many=True,
    ),
    _shape(
        "fan",
        "likes",
        rf"{_SUBJ}{_AUX}\s+(?:(?:a|an)\s+)?(?:(?:big|huge|massive|great|real|lifelong|die-hard)"
        rf"\s+)?fan\s+of\s+{_LIST}",
        None,
        needs_be=True,
        many=True,
    ),
    _shape(
        "fan",
        "likes",
        rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+(?:(?:big|huge|massive|great|real|lifelong|die-hard)\s+)?"
        rf"(?P<val>{NAME})\s+fan\b",
        None,
        needs_be=True,
    ),
    _shape(
        "prefer",
        "prefers",
        rf"{_SUBJ}{_AUX}\s+(?:prefer|prefers)\s+(?P<val>[^,.;:!?]{{1,60}}?)(?:\s+(?:over|to|"
        r"rather\s+than|instead\s+of)\s+[^,.;:!?]+)?(?=\s*(?:[,.;:!?]|$))",
        None,
    ),
    _shape(
        "hate|dislike|detest|loathe|stand|bear|like|enjoy|love|fan|into|keen|fond|care",
        "dislikes",
        rf"{_SUBJ}(?:\s+(?:really|just|also|honestly|absolutely|totally|still|truly|actually))*"
        rf"\s+{_DISLIKE}\s+{_LIST}",
        None,
        many=True,
    ),
    # --- plans
    _shape(
        "plan|hop|intend|aim|want|would|going|gonna|wanna|trying|decided",
        "plans_to",
        rf"{_SUBJ}{_AUX}\s+(?:(?:really|also|still|definitely|kind\s+of|seriously)\s+)?"
        rf"{_PLAN_VERB}\s+{_VP}{_END}",
        None,
        ahead=True,
    ),
    _shape(
        "thinking",
        "plans_to",
        rf"{_SUBJ}{_AUX}\s+(?:seriously\s+)?(?:thinking|thought)\s+(?:about|of)\s+"
        rf"(?P<val>[a-z]+ing\b[^,.;:!?]{{0,80}}?){_END}",
        None,
        ahead=True,
    ),
    _shape(
        "goal|plan|dream|aim|resolution",
        "plans_to",
        rf"{_OWNER}\s+(?:(?:big|main|new)\s+)?(?:goal|plan|dream|aim|resolution)\s+"
        rf"(?:for\s+[a-z ]+\s+)?is\s+to\s+{_VP}{_END}",
        None,
        ahead=True,
    ),
    # "I'm planning to do some shopping while I'm in Tokyo": a stay the plan takes for granted
    _shape(
        "while",
        "travels_to",
        r"\b(?:plan|plans|planning|going\s+to|gonna|will|want|would\s+like|hoping)\b[^.!?]{0,80}?"
        rf"\bwhile\s+(?P<subj>I|we)\s+(?:am|are|will\s+be)\s+(?:in|visiting)\s+{_OBJ}",
        "place",
        ahead=True,
    ),
    # "I'm starting a dance studio": a venture begun is a plan under way
    _shape(
        "starting|opening|launching|setting",
        "plans_to",
        rf"{_SUBJ}{_AUX}\s+(?P<val>(?:starting|opening|launching|setting\s+up)\s+(?:a|an|my\s+own)\s+"
        r"(?:[\w-]+\s+){0,2}?(?:business|studio|shop|company|bakery|cafe|café|restaurant|"
        r"podcast|blog|channel|band|club|charity|nonprofit|non-profit|clinic|practice|firm|"
        r"store|startup|gallery|salon|gym))\b",
        None,
        needs_be=True,
        ahead=True,
    ),
    # "I'm working on a project at NovaTech": work done at a named organisation
    _shape(
        "project",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+working\s+on\s+(?:a|an|the|some|our|my)\s+(?:[\w-]+\s+){{0,2}}?"
        rf"projects?\s+(?:at|for)\s+{_OBJ}",
        "organisation",
    ),
    # --- trips ahead, and places visited
    _shape(
        "going|flying|heading|driving|travel|off\\s+to|sailing|coming",
        "travels_to",
        rf"{_SUBJ}{_AUX}\s+{_TRAVEL}\s+(?:back\s+)?(?:(?:on\s+(?:holiday|vacation|a\s+trip)|"
        r"away|abroad)\s+)?to\s+(?:the\s+)?(?=[A-ZÀ-ÖØ-Þ])(?P<obj>"
        rf"{NAME})",
        "place",
        ahead=True,
    ),
    _shape(
        r"will\s+be\s+(?:in|visiting)",
        "travels_to",
        rf"{_SUBJ}\s+will\s+be\s+(?:in|visiting)\s+{_OBJ}",
        "place",
        ahead=True,
    ),
    _shape(
        "trip|holiday|vacation|getaway|break|flight|ticket",
        "travels_to",
        rf"{_SUBJ}{_AUX}\s+(?:booked|booking|planning|planned|organising|organizing|have|"
        rf"got|bought)\s+{_TRIP}\s+(?:to|in)\s+{_OBJ}",
        "place",
        ahead=True,
    ),
    _shape(
        "visiting",
        "travels_to",
        rf"{_SUBJ}{_AUX}\s+visiting\s+(?:(?:my|our|his|her)\s+[a-z]+|{NAME})\s+in\s+{_OBJ}",
        "place",
        ahead=True,
    ),
    _shape(
        r"visited|went|travel|flew|been\s+to|was\s+in|were\s+in|back\s+from|spent|took",
        "visited",
        rf"{_SUBJ}{_AUX}\s+(?:visited|went\s+(?:back\s+)?to|travelled\s+to|traveled\s+to|"
        r"flew\s+to|been\s+to|was\s+in|were\s+in|got\s+back\s+from|came\s+back\s+from|"
        r"returned\s+from|back\s+from(?:\s+[^,.;!?]{1,30}?\s+in)?|spent\s+[^,.;!?]{1,30}?\s+in|"
        r"took\s+(?:a|an)\s+(?:\w+\s+)?trip\s+to|"
        rf"took\s+(?:my|our)\s+(?:{_REL}|friends?|kids|children|family|partner|girlfriend|"
        r"boyfriend|date|class|students|team)\s+to)"
        rf"\s+(?!{_EDU_NAME}){_OBJ}",
        "place",
        event=True,
    ),
    # --- education
    _shape(
        _DEGREE_CUE,
        "degree",
        rf"{_SUBJ}{_AUX}\s+(?P<verb>have|has|got|earned|finished|completed|doing|did|hold|holds|"
        r"getting|studying\s+for)\s+(?:(?:a|an|my|the|his|her)\s+)?(?P<val>"
        rf"{_DEGREE})(?:\s+degree)?(?:\s+(?:in|of)\s+(?P<field>[a-z][a-z\- ]{{1,40}}?))?"
        rf"(?:\s+(?:at|from)\s+(?P<school>{NAME}))?(?=\s*(?:[,.;:!?]|$)|\s+(?:last|this|next|"
        r"in|since|and|but|two|three|a|\d))",
        None,
    ),
    _shape(
        _DEGREE_CUE,
        "degree",
        rf"{_SUBJ}{_AUX}\s+(?:graduated|finished|left)\b[^,.;!?]{{0,30}}?\s+with\s+(?:a|an)\s+"
        rf"(?P<val>{_DEGREE})(?:\s+degree)?\s+(?:in|of)\s+(?P<field>[a-z][a-z\- ]{{1,40}}?)"
        r"(?=\s*(?:[,.;:!?]|$)|\s+(?:from|at|in|and|but)\b)",
        None,
    ),
    _shape(
        "stud|major",
        "field_of_study",
        rf"{_SUBJ}{_AUX}\s+(?:study|studies|studied|studying|majored\s+in|major\s+in|"
        r"majoring\s+in)\s+(?!at\b|for\b|hard\b|a\s+lot\b)(?P<val>[a-z][a-z\- ]{1,40}?)"
        rf"(?:\s+at\s+(?P<school>{NAME}))?{_END}",
        None,
    ),
    _shape(
        "stud",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+(?:study|studies|studied|studying)\s+at\s+{_OBJ}",
        "organisation",
    ),
    _shape(
        "graduated",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+graduated\s+(?:from\s+)?{_OBJ}",
        "organisation",
        event=True,
        ends=True,
    ),
    _shape(
        "go|went|attend|enrolled",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+(?:go|goes|went|attend|attends|attended|attending|enrolled\s+(?:at|in))"
        rf"\s+(?:to\s+)?(?:the\s+)?(?P<obj>{_EDU_NAME})",
        "organisation",
    ),
    _shape(
        "year",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+in\s+(?:my|his|her|their)\s+(?:first|second|third|fourth|final|last)"
        rf"\s+year\s+(?:at|of)\s+{_OBJ}",
        "organisation",
    ),
    _shape(
        "start|began",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+(?:started|start|starting|began)\s+(?:uni|university|college|school|"
        rf"studying|my\s+(?:degree|studies|phd|master's|masters))\s+at\s+{_OBJ}",
        "organisation",
        event=True,
    ),
    _shape(
        "undergrad|degree|studies|postgrad",
        "studies_at",
        rf"{_SUBJ}{_AUX}\s+(?:did|do|doing|completed|finished)\s+(?:my|a|his|her)\s+"
        r"(?:undergrad|undergraduate|degree|studies|postgrad|postgraduate)(?:\s+degree)?\s+"
        rf"(?:at|in)\s+{_OBJ}",
        "organisation",
    ),
    # --- languages
    _shape(
        "speak|fluent|bilingual|conversational",
        "speaks",
        rf"{_SUBJ}{_AUX}\s+(?:speak|speaks|speaking|can\s+speak|fluent\s+in|bilingual\s+in|"
        rf"conversational\s+in|grew\s+up\s+speaking)\s+{_LIST}",
        None,
        many=True,
    ),
    _shape(
        r"(?:native|first|mother)\s+(?:language|tongue)",
        "speaks",
        rf"{_OWNER}\s+(?:native|first|mother)\s+(?:language|tongue)s?\s+(?:is|are)\s+{_LIST}",
        None,
        many=True,
    ),
    _shape(
        "language|tongue",
        "speaks",
        rf"(?P<val>{NAME})\s+is\s+(?P<own>[Mm]y)\s+(?:native|first|second|third|mother|main)\s+"
        r"(?:language|tongue)\b",
        None,
    ),
    _shape(
        "native",
        "speaks",
        rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+native\s+(?P<val>[A-Za-z]+)\s+speaker",
        None,
        needs_be=True,
    ),
    _shape(
        "learn|lesson|class|course",
        "learning",
        rf"{_SUBJ}{_AUX}\s+(?:learning|learn|learns|started\s+learning|trying\s+to\s+learn|"
        rf"picking\s+up|taking|studying)\s+(?:to\s+play\s+(?:the\s+)?)?{_LIST}",
        None,
        many=True,
    ),
    # --- hobbies
    _shape(
        "play",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:play|plays|playing|played)\s+(?!with\b|it\b|them\b|a\b|an\b|"
        r"games?\s+with|the\s+(?:role|part|fool|field|lottery|game)\b|along\b|around\b)"
        rf"{_LIST}",
        None,
        many=True,
    ),
    _shape(
        r"go(?:es)?\s+[a-z]+ing\b",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:go|goes)\s+(?P<val>[a-z]+ing)\b(?!\s+to\b)",
        None,
    ),
    _shape(
        "do",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:do|does)\s+(?:(?:a\s+lot\s+of|lots\s+of|some|a\s+bit\s+of)\s+)?"
        rf"(?P<val>{_DO_ACTIVITY})\b",
        None,
    ),
    _shape(
        _HOBBY_VERB,
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?P<val>{_HOBBY_VERB}){_HABIT}",
        None,
    ),
    _shape(
        "collect",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?P<collected>collect|collects|collecting)\s+{_VAL}",
        None,
    ),
    _shape(
        r"been\s+[a-z]+ing\b",
        "hobby",
        rf"{_SUBJ}\s+(?:have|has)\s+been\s+(?P<val>{_HOBBY_ING})\b",
        None,
    ),
    _shape(
        "hobby|hobbies|pastime",
        "hobby",
        rf"{_OWNER}\s+(?:favou?rite\s+)?(?:hobby|hobbies|pastimes?)\s+(?:is|are|include)\s+"
        rf"{_LIST}",
        None,
        timeless=True,
        many=True,
    ),
    _shape(
        "started|began",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:started|began)\s+(?P<val>{_HOBBY_ING})\b",
        None,
        event=True,
    ),
    _shape(
        "up",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:took|take|taken|taking)\s+up\s+{_LIST}",
        None,
        event=True,
        many=True,
    ),
    # --- who: name, origin, age in a few more words
    _shape("name", "name", rf"{_OWNER}\s+name\s+is\s+(?P<val>{NAME})", None, timeless=True),
    _shape(
        r"call\s+me|(?:hi|hello|hey)[,!]?\s+I\s+am",
        "name",
        rf"(?:(?<![\w'])(?P<me>[Cc]all\s+me)|(?P<me2>(?:[Hh]i|[Hh]ello|[Hh]ey)[,!]?\s+I\s+am))\s+"
        rf"(?P<val>{NAME})",
        None,
        timeless=True,
    ),
    _shape(
        "way|btw|meet",
        "name",
        rf"(?P<subj>\bI)\s+am\s+(?P<val>{NAME}),?\s+(?:by\s+the\s+way|btw|nice\s+to\s+meet\s+you)",
        None,
        timeless=True,
    ),
    _shape(
        "born",
        "birth_year",
        rf"{_SUBJ}{_AUX}\s+born\s+in\s+(?P<val>(?:19|20)\d\d)\b",
        None,
        timeless=True,
    ),
    _shape(
        "born",
        "born_in",
        rf"{_SUBJ}{_AUX}\s+born\s+(?:and\s+(?:raised|bred)\s+)?in\s+{_OBJ}",
        "place",
        timeless=True,
    ),
    _shape(
        r"(?:am|is|are)\s+(?:originally\s+|also\s+)?from\s",
        "comes_from",
        rf"{_SUBJ}(?P<aux>\s+(?:am|is|are))\s+(?:originally\s+|also\s+)?from\s+{_OBJ}",
        "place",
        needs_be=True,
        timeless=True,
    ),
    _shape(
        r"(?:am|is|are|was|were)\s+(?:\w+\s+){0,2}?\d",
        "age",
        rf"{_SUBJ}{_AUX}\s+(?P<val>\d{{1,3}})(?=\s*(?:[,.;!?]|$)|\s+(?:now|next|this|in|and|but|"
        r"so|today|already)\b)",
        None,
        needs_be=True,
    ),
    _shape(
        "year",
        "age",
        rf"{_SUBJ}{_AUX}\s+(?:a|an)\s+(?P<val>\d{{1,3}})[- ]year[- ]old\b",
        None,
        needs_be=True,
    ),
)

# --- what a possessive takes for granted ------------------------------------------------------
_MINE = r"(?P<own>(?<![\w'])(?:[Mm]y|[Oo]ur))"
# Nouns an animal word modifies ("my cat food", "my fish tank"): then no pet is said.
_PET_THINGS = (
    r"food|foods|tank|tanks|bowl|bed|beds|toy|toys|treats?|litter|hair|fur|sitter|walker|"
    r"shelter|feeder|cage|crate|leash|collar|tacos?|fillets?|sauce|pie|stew|curry|dish|"
    r"meat|oil|mug|shirt|costume|print|painting|drawing|videos?|photos?|pictures?|plants?|"
    r"allerg\w*"
)
# Pastimes a person has lessons, sessions or a club for; the instrument stands for playing it.
_PASTIME = (
    rf"{_DO_ACTIVITY}|tennis|golf|football|soccer|basketball|volleyball|badminton|squash|"
    r"hockey|rugby|cricket|baseball|softball|netball|table\s+tennis|ping\s+pong|chess|"
    r"bowling|climbing|dance|salsa|tango|spin|guitar|piano|violin|cello|drums|ukulele|"
    r"saxophone|flute|trumpet|singing|choir|writing|reading|poetry|knitting|running|"
    r"swimming|cycling|hiking|painting|drawing|sketching|pottery|photography|woodworking|"
    r"video\s+games?|gaming|esports|bridge|poker|darts|snooker|pool|karting"
)
# What one enters, wins or trains for only by doing it.
_CONTEST = r"(?:tournaments?|competitions?|championships?|matches|races?|meets?|leagues?)"
# Houseplants by kind: a plant one tends is one's own ("a fertiliser for my snake plant").
_PLANT = (
    r"(?:snake|spider|rubber|zz|jade|money|prayer|string\s+of\s+pearls)\s+plants?|succulents?|"
    r"ferns?|african\s+violets?|orchids?|monsteras?|pothos|cactus|cacti|bonsais?|"
    r"peace\s+lil(?:y|ies)|fiddle[- ]leaf\s+figs?|aloe(?:\s+vera)?|philodendrons?|begonias?|"
    r"calatheas?|bromeliads?|anthuriums?|hoyas?|ivy|palms?"
)
# Specific gear: a bike or a racket of a kind, an instrument of a kind, an antique or
# vintage thing. "My laptop", "my car", "my phone" say nothing one could not assume.
_ANTIQUE_THING = (
    r"camera|watch|clock|box|vanity|typewriter|radio|lamp|mirror|chair|table|desk|dresser|"
    r"cabinet|wardrobe|bicycle|bike|motorcycle|car|guitar|piano|violin|jukebox|record\s+player|"
    r"sewing\s+machine|rug|vase|ring|necklace|brooch|trunk|chest"
)
_GEAR = (
    r"(?:road|mountain|gravel|racing|folding|hybrid|touring|dirt|bmx|fixie|cargo|tandem)\s+bike|"
    r"(?:tennis|squash|badminton|padel)\s+rac(?:k|qu)et|golf\s+clubs|"
    r"(?:acoustic|electric|bass|classical)\s+guitar|(?:upright|grand|digital)\s+piano|"
    r"surfboard|snowboard|skateboard|paddleboard|kayak|canoe|telescope|"
    rf"(?:antique|vintage)\s+(?:[a-z]+\s+)?(?:{_ANTIQUE_THING})"
)
_GEAR_END = (
    r"(?=\s*(?:[,.;:!?)\"]|$)|\s+(?:and|or|to|for|with|that|which|is|was|has|had|in|on|at|"
    r"because|but|so|since|I|when|while|from|this|last|recently|yet|anymore|lately|now)\b)"
)
# "a case for my iPhone 13 Pro", "my Sony A7R IV": a make and model (it must hold a number:
# "my Mom", "my Spotify" are no things owned)
MAKE_AND_MODEL = _shape(
    r"my|our",
    "owns",
    rf"{_MINE}\s+(?:(?:new|old|current|trusty|beloved|first)\s+)?"
    rf"(?P<val>(?:[A-Z]|i[A-Z])[\w-]*(?:\s+[A-Z0-9][\w%+.-]*){{0,4}}){_GEAR_END}",
    None,
    timeless=True,
    passing=True,
)
_INSTRUMENT = (
    r"guitar|piano|violin|cello|drums|ukulele|saxophone|sax|flute|trumpet|clarinet|bass|harp|"
    r"banjo|mandolin|keyboard|trombone|oboe|viola"
)
# A thing that is gone or on its way out is no longer owned: "my road bike got stolen", "my
# dead fern", "my old bike is for sale".
_GONE_BEFORE = r"(?!(?:dead|late|former|stolen|lost|broken|sold)\b)"
_GONE_AFTER = (
    r"(?!\s+(?:(?:got|was|were|has\s+been|had\s+been)\s+(?:stolen|sold|lost|nicked|totall?ed|"
    r"written\s+off|destroyed)|(?:is|was)\s+for\s+sale|died)\b)"
)
SPECIFIC_THING = re.compile(rf"(?i)\b(?:{_GEAR}|{_PLANT})\b")
PASSING: tuple[Shape, ...] = (
    # "getting my cat microchipped", "a toy for our dog"
    _shape(
        _ANIMAL,
        "has_pet",
        rf"{_MINE}\s+(?:(?:old|new|little|baby|sweet|beloved|senior|young|rescue)\s+)?"
        rf"(?P<val>{_ANIMAL})\b(?!'s\s+name|,?\s+(?:(?:is|was)\s+)?(?:(?:named|called)\s+)?"
        r"[A-Z]|\s+(?:is|was)\s+(?:a|an)\s)"
        rf"(?!\s+(?:{_PET_THINGS})\b)",
        None,
        timeless=True,
        passing=True,
    ),
    MAKE_AND_MODEL,
    # "my upcoming trip to Costa Rica", "my next birding trip to Peru", "my San Francisco trip"
    _shape(
        "trip|holiday|vacation|getaway|journey",
        "travels_to",
        rf"{_MINE}\s+(?:upcoming|next|planned|coming|future)\s+(?:[a-z]+\s+)?(?:trip|holiday|"
        rf"vacation|getaway|journey)\s+to\s+{_OBJ}",
        "place",
        ahead=True,
        passing=True,
    ),
    _shape(
        "trip|holiday|vacation|getaway",
        "travels_to",
        rf"{_MINE}\s+(?:(?:upcoming|next|planned)\s+)?(?:the\s+)?(?P<obj>{NAME})\s+(?:trip|holiday|"
        r"vacation|getaway)\b(?!\s+(?:was|were|last|photos?|pictures?|pics|videos?|memories|"
        r"souvenirs)\b)",
        "place",
        ahead=True,
        passing=True,
    ),
    # "my Saturday tennis lessons", "my 20-minute meditation session", "my golf swing"
    _shape(
        r"lesson|class|session|practice|club|team|routine|training|workout|league|group|"
        r"tournament|rehearsal|recital|serve|swing|game|skills|technique|stroke|playing",
        "hobby",
        rf"{_MINE}\s+(?:[\w-]+\s+){{0,2}}?(?P<val>{_PASTIME})\s+(?:(?:and|&)\s+[\w-]+\s+)?"
        r"(?:lessons?|class|classes|"
        r"sessions?|practice|club|team|routine|training|workouts?|league|group|tournaments?|"
        r"rehearsals?|recitals?|serves?|swing|game|skills|technique|strokes?|playing)\b",
        None,
        passing=True,
    ),
    # "price my paintings", "an art show with my paintings": one who has works makes them
    _shape(
        "paintings|drawings|sketches|poems|sculptures",
        "hobby",
        rf"{_MINE}\s+(?:(?:own|new|latest|recent|best)\s+)?"
        r"(?P<val>paintings|drawings|sketches|poems|sculptures)\b",
        None,
        passing=True,
    ),
    # "my 30-minute runs", "my morning swims": the plural is a habit ("after my hike" is one)
    _shape(
        "runs|swims|hikes|jogs",
        "hobby",
        rf"{_MINE}\s+(?:[\w-]+\s+){{0,2}}?(?P<val>runs|swims|hikes|jogs)\b",
        None,
        passing=True,
    ),
    # "my next birding trip", "my weekly climbing session"
    _shape(
        r"trip|outing|weekend|holiday",
        "hobby",
        rf"{_MINE}\s+(?:next|upcoming|annual|usual|weekly|regular|first)\s+(?P<val>{_PASTIME})\s+"
        r"(?:trip|outing|weekend|holiday)\b",
        None,
        passing=True,
    ),
    # "won another regional video game tournament", "training for my next chess match"
    _shape(
        r"tournament|competition|championship|match|race|meet|league",
        "hobby",
        rf"{_SUBJ}(?![^.!?]{{0,30}}\bused\s+to\b){_AUX}\s+(?:won|win|wins|winning|entered|enter|entering|competed|compete|"
        r"competing|practi[cs]ing|training|trained|playing|played|preparing|took\s+part|"
        r"(?:came|finished|placed)\s+(?:first|second|third|fourth|fifth|last|top))\s+"
        r"(?:in\s+|for\s+)?"
        rf"(?:a|an|another|my|our|the|this|next)\s+(?:[\w-]+\s+){{0,3}}?(?P<val>{_PASTIME})\s+"
        rf"{_CONTEST}\b",
        None,
        timeless=True,
        passing=True,
    ),
    # "I've been taking a poetry class", "signed up for a pottery course"
    _shape(
        r"class|course|workshop|lesson",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:taking|took|take|takes|signed\s+up\s+for|enrolled\s+in|joined|"
        rf"attending|attend)\s+(?:a|an|some|my|our)\s+(?:[\w-]+\s+)?(?P<val>{_PASTIME})\s+"
        r"(?:class|classes|course|courses|workshop|workshops|lessons?)\b",
        None,
        passing=True,
    ),
    # "a fertiliser for my snake plant and succulent", "my plants, especially the fern"
    _shape(
        r"plant|succulent|fern|violet|orchid|monstera|pothos|cact|bonsai|lil|fig|aloe|"
        r"philodendron|begonia|calathea|bromeliad|anthurium|hoya|ivy|palm",
        "owns",
        rf"{_MINE}\s+(?:(?:indoor\s+|house)?plants,?\s+(?:especially|like|including|such\s+as)\s+"
        rf"(?:the\s+|my\s+)?|{_GONE_BEFORE}(?:[a-z]+\s+)?)(?i:(?P<val>(?:{_PLANT})(?:\s+(?:and|&)\s+"
        rf"(?:{_PLANT}))?))\b{_GONE_AFTER}",
        None,
        timeless=True,
        many=True,
        passing=True,
    ),
    # "the brakes on my road bike", "my antique music box", "my new tennis racket"
    _shape(
        r"bike|rac|clubs|guitar|piano|board|kayak|canoe|telescope|antique|vintage",
        "owns",
        rf"{_MINE}\s+{_GONE_BEFORE}(?:(?:new|old|trusty|beloved|first|own)\s+)?(?P<val>{_GEAR})\b"
        rf"{_GONE_AFTER}",
        None,
        timeless=True,
        passing=True,
    ),
    # "my passion for writing", "practising my violin", "a pottery project I finished"
    _shape(
        "passion",
        "hobby",
        rf"{_MINE}\s+passion\s+for\s+(?P<val>{_PASTIME})\b",
        None,
        passing=True,
    ),
    _shape(
        _INSTRUMENT,
        "hobby",
        rf"\b(?:play|plays|playing|practi[cs]e|practi[cs]es|practi[cs]ing)\s+(?:on\s+)?{_MINE}\s+"
        rf"(?:[\w-]+\s+)?(?P<val>{_INSTRUMENT})\b",
        None,
        passing=True,
    ),
    _shape(
        "project|piece",
        "hobby",
        rf"{_SUBJ}{_AUX}\s+(?:finished|started|completed|working\s+on|made)\s+(?:another|my|a|an|"
        rf"the|this|one|two|three)\s+(?:(?:new|latest|first|big|little|small)\s+)?"
        rf"(?P<val>{_PASTIME})\s+(?:projects?|pieces?)\b"
        r"(?!\s+(?:for|at)\s+(?:school|work|class|college|uni|university)\b)",
        None,
        timeless=True,
        passing=True,
    ),
    # "tips on my serve in volleyball", "my swing at golf"
    _shape(
        r"serve|swing|technique|stroke|form|backhand|forehand",
        "hobby",
        rf"{_MINE}\s+(?:serve|swing|technique|strokes?|form|backhand|forehand)\s+(?:in|at|for)\s+"
        rf"(?P<val>{_PASTIME})\b",
        None,
        passing=True,
    ),
    # "I tend to land midfoot when I run": what one does whenever is a habit; a verb that
    # takes an object is another verb ("when I run errands", "when I box up the books")
    _shape(
        "when",
        "hobby",
        rf"\bwhen(?:ever)?\s+(?P<subj>I|we)\s+(?P<val>{_HOBBY_VERB})\b"
        r"(?=\s*[,.;:!?)]|\s*$|\s+(?:in|on|at|outside|indoors|every|each|and|or|so|I|with|too|"
        r"now|alone|long|far|fast|hard|regularly|more|less|because|but)\b)",
        None,
        passing=True,
    ),
    # "Boris the rooster": a named animal the speaker tells of is theirs
    _shape(
        _ANIMAL,
        "has_pet",
        rf"(?P<obj>{NAME})\s+(?P<me>the)\s+(?:{_ANIMAL})\b",
        "other",
        timeless=True,
        passing=True,
    ),
    # "…whose work I saw when I visited The Art Cube on 2/15?": what a question takes as done
    _shape(
        "visited",
        "visited",
        rf"\b(?:when|after|since|because)\s+(?P<subj>I|we)\s+(?:recently\s+|just\s+|last\s+)?"
        rf"visited\s+{_OBJ}",
        "place",
        event=True,
        passing=True,
    ),
)
# How people say what they love without "love X": "I'm all about dramas", "I've always had
# a love for horses", "my passion for writing".
FONDNESS: tuple[Shape, ...] = (
    # "Guitar's mostly my thing", "painting is really my passion": one's thing is a pastime
    _shape(
        "thing|jam|passion",
        "hobby",
        rf"(?:^|[.!?]\s+|,\s+)(?i:(?P<val>{_PASTIME}))(?:\s+is|'s)\s+(?:(?:mostly|really|totally|"
        r"just|definitely|kind\s+of|very\s+much)\s+)?(?P<own>my)\s+(?:thing|jam|passion)\b",
        None,
    ),
    _shape(
        "all about",
        "likes",
        rf"{_SUBJ}{_AUX}\s+all\s+about\s+{_LIST}",
        None,
        needs_be=True,
        many=True,
    ),
    _shape(
        "love|passion|soft spot",
        "likes",
        rf"{_SUBJ}{_AUX}\s+(?:always\s+)?(?:had|have|has|got)\s+(?:a|such\s+a)\s+"
        rf"(?:real\s+|big\s+|deep\s+|huge\s+|great\s+)?(?:love|passion|soft\s+spot)\s+for\s+"
        rf"{_LIST}",
        None,
        many=True,
    ),
    # "my love for dairy-free desserts has been…": the phrase is a subject, its verb ends it
    _shape(
        "love|passion",
        "likes",
        rf"{_MINE}\s+(?:love|passion(?!\s+for\s+(?:{_PASTIME})\b))\s+for\s+"
        r"(?P<val>[^,.;:!?]{1,60}?)(?=\s*[,.;:!?]|\s*$|"
        r"\s+(?:has|have|had|is|are|was|were|keeps?|kept|makes?|made|gives?|gave|drives?|"
        r"helps?|and|but|so|because|since|that|which|with|to|in|at|through)\b)",
        None,
    ),
)

# The everyday shapes read after the original ones, so a fact both find keeps the first
# reading's dates.
SHAPES = SHAPES + EVERYDAY + FONDNESS + PASSING


# A cue word as plain text: letters, spaces, apostrophes, hyphens ("co-worker"), escapes.
_LITERAL = re.compile(r"(?:[\w' -]|\\[ \-.])+")


class Cues:
    """Which shapes' cues a text holds, found in one scan of the text instead of one search
    a shape (a hundred searches a sentence were half of the offline extractor's time).

    Cues made of plain words are looked for together: at each word boundary a lookahead
    takes the longest cue word there, and every cue with a word that begins it matches (the
    words that match at one place are all beginnings of the longest). A cue with pattern
    syntax in it is searched on its own."""

    def __init__(self, shapes: tuple[Shape, ...]) -> None:
        words: dict[str, set[str]] = {}
        self._shapes = shapes
        self._index: dict[str, list[int]] = {}  # cue → the shapes that have it
        self._searched: dict[str, re.Pattern[str]] = {}
        for i, shape in enumerate(shapes):
            self._index.setdefault(shape.cue_words, []).append(i)
            alternatives = shape.cue_words.split("|")
            if all(_LITERAL.fullmatch(a) for a in alternatives):
                for a in alternatives:
                    words.setdefault(a.replace("\\", "").casefold(), set()).add(shape.cue_words)
            else:
                self._searched[shape.cue_words] = shape.cue
        self._scan = re.compile(rf"\b(?=({_trie(words)}))", re.IGNORECASE)
        self._cues_of = {
            word: frozenset(c for w, cues in words.items() if word.startswith(w) for c in cues)
            for word in words
        }

    def shapes(self, text: str) -> list[Shape]:
        """The shapes (in :data:`SHAPES` order) whose cue ``text`` holds: the only ones
        whose full pattern can match it."""
        found: set[str] = set()
        for match in self._scan.finditer(text):
            cues = self._cues_of.get(match[1].casefold())
            if cues is None:  # a letter that matches case-blind but folds otherwise ("İ")
                return [s for s in self._shapes if s.cue.search(text)]
            found |= cues
        found.update(cue for cue, regex in self._searched.items() if regex.search(text))
        return [self._shapes[i] for i in sorted(i for c in found for i in self._index[c])]


def _trie(words: Iterable[str]) -> str:
    """One pattern for all ``words`` that takes the longest one matching where it starts, as
    a prefix tree: an alternation of 360 words tried each in turn at every word boundary was
    two thirds of :meth:`Cues.shapes`'s time; the tree tries one branch a letter."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}  # a word ends here

    def pattern(node: dict[str, Any]) -> str:
        branches = [re.escape(k) + pattern(v) for k, v in sorted(node.items()) if k]
        if not branches:
            return ""
        either = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        # Greedy: a longer word through this letter first, then the word that ends here.
        return f"(?:{either})?" if "" in node else either

    return pattern(root)


@cache
def cues() -> Cues:
    """The shapes' cues, compiled on first use (see :attr:`Shape.regex`)."""
    return Cues(SHAPES)


@cache
def passing_cues() -> Cues:
    """The cues of the shapes a question is read with (:data:`PASSING`)."""
    return Cues(PASSING)
