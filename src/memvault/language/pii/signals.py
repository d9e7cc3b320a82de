"""Keyword-only signals: a sentence that says where a credential is kept, or how to derive it,
without containing it (nothing to redact, so the policy must refuse it)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from memvault.language.pii._scan import Scan as _Scan

# A sentence that says WHERE a credential is kept, or how to derive it, gives it away without
# containing it, and no span can be redacted: "the password is written on the card I gave you",
# "my PIN is on the sticky note", "my password is my dog's name". Mentions that do not locate
# or describe the value are ordinary memories and pass: "I forgot my password", "reset your
# password via the link", "the password must be 12 characters". The signal is therefore a
# credential noun joined to a place ("is on/in/under…", "I wrote … on…", "it's kept in…") or to
# a derivation ("is the same as…", "is my …"). Bare "secret" and "key" are left out ("the secret
# is in the sauce", "the key is under the mat" name no credential), and a password manager,
# keychain or vault is a place made for secrets, so naming it reveals nothing.
_KO_NOUN = re.compile(
    r"\b(?:pass(?:word|wd|code|phrase)s?|(?-i:PINs?)|pins?[\s_-](?:code|number)s?"
    r"|(?:my|our|your|his|her|their)\s+pin"
    r"|(?:api|secret|access|private|encryption)[\s_-]keys?|client[\s_-]secrets?"
    r"|(?:recovery|backup)[\s_-](?:codes?|phrases?|keys?)|seed[\s_-]phrases?)\b",
    re.IGNORECASE,
)
_KO_STEMS = ("pass", "pin", "key", "secret", "code", "phrase")
_STASHED = r"written|stored|kept|saved|hidden|taped|stuck|noted|jotted|located|scribbled|printed"
_PLACE = r"on|in|under|behind|inside|beneath|at|next\s+to|near|by|with|into|onto"
# "My password is written down" says a copy exists, not where: only a place is a signal.
_TO_A_PLACE = rf"\s+(?:down\s+)?(?:{_PLACE})\b"
# "the password for the meeting is on the invite"
_KO_QUALIFIER = r"(?:\s+(?:for|to|of|at)(?:\s+[^\s.,;:!?]+){1,5}?)?"
# Each is tried right after a credential noun.
_KO_AFTER_NOUN = (
    # "the password is written on the card", "my PIN is on the sticky note"
    re.compile(
        rf"{_KO_QUALIFIER}(?:\s+(?:is|are|was|were|gets?|got)|'s|\s*:)\s+"
        r"(?:(?:all|both|still|always|usually|now|just|also|currently)\s+)?"
        rf"(?:(?:{_STASHED}){_TO_A_PLACE}|(?:on|in|under|behind|inside|beneath|taped|stuck)\b)",
        re.IGNORECASE,
    ),
    # "my password is the same as my email one", "his PIN is his birth year"
    re.compile(
        rf"{_KO_QUALIFIER}\s+(?:is|are|was|were)\s+(?:(?:just|still|also|basically)\s+)?"
        r"(?:the\s+same\s+as|(?:my|his|her|our|their)\s+(?!own\b)[\w'-]+)",
        re.IGNORECASE,
    ),
    # "I forgot my password; it's written on the card"
    re.compile(
        r"[^.!?\n]{0,60}?\b(?:it|they|which)(?:'s|'re|\s+(?:is|are|was|were))"
        rf"\s+(?:(?:all|still|always|just|also)\s+)?(?:{_STASHED}){_TO_A_PLACE}",
        re.IGNORECASE,
    ),
)
# "I wrote the wifi password on the fridge": a stashing verb shortly before the noun …
_KO_VERB_BEFORE = re.compile(
    r"\b(?:wrote|write|writes|writing|keep|keeps|kept|store|stores|stored|save|saves|saved"
    r"|hid|hide|hides|tape|tapes|taped|stick|sticks|stuck|jot|jotted|scribbled|noted)\s+"
    r"(?:down\s+)?(?:(?:all|both|the|my|our|your|his|her|their|a|an|this|that)\s+)*"
    r"(?:[\w'-]+\s+)?\Z",
    re.IGNORECASE,
)
# … and a place right after it.
_KO_PLACE_AFTER = re.compile(_TO_A_PLACE, re.IGNORECASE)
# Places made for secrets, and "places" that are not places at all ("in lowercase").
_NOT_A_HIDING_PLACE = re.compile(
    r"[^.!?\n]{0,40}?\b(?:password\s+manager|manager|1password|bitwarden|lastpass|keepass"
    r"|dashlane|keychain|vault|safe\s+place|secure\s+place|head|memory|mind"
    r"|lower-?case|upper-?case|capitals)\b",
    re.IGNORECASE,
)


def _keyword_only(scan: _Scan) -> Iterator[str]:
    text = scan.text
    if not any(stem in scan.lower for stem in _KO_STEMS):
        return
    for noun in _KO_NOUN.finditer(text):
        end = _signal_end(text, noun)
        if end is not None and not _NOT_A_HIDING_PLACE.match(text, end):
            word = noun.group().lower()
            yield "password" if word.startswith("pass") or "pin" in word else "secret"


def _signal_end(text: str, noun: re.Match[str]) -> int | None:
    """Where the place or derivation that goes with this credential noun ends, if there is one."""
    for pattern in _KO_AFTER_NOUN:
        if m := pattern.match(text, noun.end()):
            return m.end()
    if _KO_VERB_BEFORE.search(text, max(0, noun.start() - 80), noun.start()) and (
        m := _KO_PLACE_AFTER.match(text, noun.end())
    ):
        return m.end()
    return None
