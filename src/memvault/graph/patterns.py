"""The vocabulary the offline extractor reads text by: names, the words around them, and the
handful of sentence shapes it turns into facts.

Patterns run on text whose contractions are spelled out ("I'm" → "I am", "don't" → "do
not"), so one auxiliary list covers both. Capitals carry meaning (a name starts with one), so
nothing here ignores case except where a word may open a sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# and discourse markers. Compared case-folded.
STOP_WORDS = words(
    """i a an the my our your his her their its we you he she they it this that these those
    actually correction sorry oops wait no yes oh well so but and or also just maybe probably
    perhaps guess hey hi hello thanks thank ok okay not what who where when why how which
    today yesterday tomorrow tonight last next this morning evening night week month year
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december jan feb mar apr jun jul aug sep sept
    oct nov dec spring summer autumn fall winter christmas easter
    there here then now still since after before until in on at for to from with by of as if
    mr mrs ms dr prof sir madam mom mum dad grandma grandpa granny
    project team app service
    """
)

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

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)
_DATE = (
    rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?"
    r"|\d{4}-\d{2}-\d{2}|today|tomorrow|yesterday|next\s+\w+|this\s+\w+)(?:,?\s+(?:19|20)\d\d)?"
)

# --- contractions ----------------------------------------------------------------------------

_CONTRACTIONS = [
    (re.compile(r"\b([Cc])an't\b"), r"\1annot"),
    (re.compile(r"\b([Ww])on't\b"), r"\1ill not"),
    (re.compile(r"\b(\w+)n't\b"), r"\1 not"),
    (re.compile(r"\b([Ii])'m\b"), r"\1 am"),
    (re.compile(r"\b(\w+)'re\b"), r"\1 are"),
    (re.compile(r"\b(\w+)'ve\b"), r"\1 have"),
    (re.compile(r"\b(\w+)'ll\b"), r"\1 will"),
    (re.compile(r"\b(\w+)'d\b"), r"\1 would"),
    (re.compile(r"\b([Ii]t|[Hh]e|[Ss]he|[Tt]hat|[Ww]ho|[Tt]here)'s\b"), r"\1 is"),
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
_SUBJ = rf"(?P<subj>\bI\b|\b[Yy]ou\b|\b[Hh]e\b|\b[Ss]he\b|{NAME})"
# The possessor in "Dana's birthday", "my job title".
_OWNER = rf"(?:(?P<owner>{NAME})'s|(?P<own>\b[Mm]y|\b[Hh]is|\b[Hh]er|\b[Yy]our))"
# Auxiliaries, negations and adverbs between subject and verb; read again for tense.
_AUX = (
    r"(?P<aux>(?:\s+(?:am|is|are|was|were|have|has|had|been|be|do|does|did|not|no|longer|"
    r"used|to|will|would|going|gonna|about|still|now|just|actually|recently|finally|also|"
    r"currently|officially|probably|maybe|soon|already|never|happily|back|really|then|"
    r"eventually|got|get|gets)){0,8})"
)
_ART = r"(?:(?:a|an|the|my|his|her|their|our)\s+)?"
_OBJ = rf"(?:the\s+)?(?P<obj>{NAME})"
_JOB = (
    r"(?P<val>[a-zA-Z][\w\-]*(?:\s+[a-zA-Z][\w\-]*){0,3}?)"
    r"(?=\s+(?:at|for|with|in|since|from|starting|on|last|next|this|yesterday|today|"
    r"tomorrow|recently|now|currently|these\s+days|nowadays|a|one|two|three|four|five|six|few|"
    r"couple|several|\d+)\b"
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
    regex: re.Pattern[str]
    object_type: EntityType | None
    # Words the shape cannot match without: a cheap search that spares the full pattern
    # on most sentences.
    cue: re.Pattern[str]
    subject_type: EntityType = "person"
    event: bool = False
    ends: bool = False
    # Only with a form of "be" before it: "I am a nurse at X", not "I got a job at X".
    needs_be: bool = False
    # Kinship, birthdays, favourites: no tense or dates of their own; a date in the sentence
    # ("my cousin Emma had a baby in April") is about something else.
    timeless: bool = False


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
) -> Shape:
    return Shape(
        predicate,
        re.compile(pattern),
        object_type,
        re.compile(rf"\b(?:{cue})", re.IGNORECASE),
        subject_type,
        event,
        ends,
        needs_be,
        timeless,
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
        rf"(?:{_ART}(?:new\s+|first\s+)?(?:job|position|role|work)\s+)?(?:at|with)\s+{_OBJ}",
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
    _shape(
        "left|quit|resigned",
        "works_for",
        rf"{_SUBJ}{_AUX}\s+(?:left|quit|resigned\s+from)\s+{_OBJ}",
        "organisation",
        event=True,
        ends=True,
    ),
    # --- lives_in
    _shape(
        "liv|resid",
        "lives_in",
        rf"{_SUBJ}{_AUX}\s+(?:live|lives|lived|living|reside|resides|resided|residing)\s+in\s+{_OBJ}",
        "place",
    ),
    _shape(
        "mov|relocat",
        "lives_in",
        rf"{_SUBJ}{_AUX}\s+(?:moved|move|moves|moving|relocated|relocate|relocates|relocating)"
        rf"\s+(?:(?:back|over|out|away)\s+)?(?:from\s+{NAME}\s+)?to\s+{_OBJ}",
        "place",
        event=True,
    ),
    _shape("based", "lives_in", rf"{_SUBJ}{_AUX}\s+based\s+(?:in|out\s+of)\s+{_OBJ}", "place"),
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
        rf"{_SUBJ}{_AUX}\s+(?:turned|turns|turning)\s+(?P<val>\d{{1,3}})\b",
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
