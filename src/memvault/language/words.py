"""The words the offline rules read text by: negations, update cues, number words, contractions,
and the light stemming they share. Stop words and tokens are the keyword index's, from
``memvault.text``."""

from __future__ import annotations

import re

from memvault.text import MONTH_NAMES, normalise


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
_MONTHS = MONTH_NAMES
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


def _expand(text: str) -> str:
    """NFKC, one apostrophe, contractions spelled out; case is kept (names are capitalised)."""
    text = normalise(text)
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
