"""Secrets and passwords by what surrounds them: a high-entropy value after a credential word,
a password stated, assigned or set, credentials in a URL."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from memvault.language.pii._scan import Hit as _Hit
from memvault.language.pii._scan import Scan as _Scan
from memvault.language.pii.tokens import _has_letter_and_digit

_SECRET_ENTROPY_BITS = 3.0
_SECRET_MIN_LENGTH = 12
_SECRET = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:api|access|secret|private|auth|session|refresh|client|signing"
    r"|encryption|app)[\s_-]?(?:key|token|secret)|apikey|secret|token|key|bearer)s?"
    r"(?:[\"']?\s*[:=]\s*|\s+(?:is|was|are)(?:\s*:)?\s+(?:(?:now|still|just)\s+)?|\s+)"
    r"[\"']?(?P<val>[A-Za-z0-9_\-+/=.~]{12,})",
    re.IGNORECASE,
)

# "pin" alone is a hardware or bowling pin; a PIN value must be digits (checked below).
_PW_KEYWORD = r"pass(?:word|wd|code|phrase)s?|pwd|pins?(?:[\s_-]?(?:code|number))?"
_PW_VALUE = r"(?P<val>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|\S{1,200})"
_PW_ASSIGNED = re.compile(
    rf"(?<![A-Za-z0-9])(?P<kw>{_PW_KEYWORD})[\"']?[ \t]*[:=][ \t]*{_PW_VALUE}",
    re.IGNORECASE,
)
_PW_STATED = re.compile(
    rf"(?<![A-Za-z0-9])(?P<kw>{_PW_KEYWORD})"
    r"(?:\s+(?:for|to|of|on|at|in)(?:\s+[^\s.,;:!?]+){1,6}?)?"
    r"(?:\s+(?:(?:is|was|has\s+been)\s+)?(?:set|changed|updated|reset)\s+to\s+"
    r"|\s+(?:is|was)(?:\s*:)?\s+(?:(?:now|still|just|actually|simply)\s+)?)"
    rf"{_PW_VALUE}",
    re.IGNORECASE,
)
# "reset your password to regain access": after a verb, "password to" usually starts an
# infinitive, so this form only takes a value that cannot be an English word (see below).
_PW_SET_TO = re.compile(
    r"\b(?:set|change|changed|changing|update|updated|reset)\s+"
    r"(?:(?:the|my|our|your|his|her|their|a|new)\s+)*(?:[\w-]+\s+)?"
    rf"(?P<kw>{_PW_KEYWORD})\s+to\s+{_PW_VALUE}",
    re.IGNORECASE,
)
# Multi-word secrets take the rest of the clause: "passphrase: correct horse battery staple".
_PHRASE = re.compile(
    r"(?<![A-Za-z0-9])(?P<kw>pass[\s-]?phrase|(?:seed|recovery|mnemonic)[\s_-]phrase|mnemonic)s?"
    r"(?P<sep>\s*[:=]|\s+(?:is|was)(?:\s*:)?)[ \t]+(?P<val>[^\n.,;!?\"']+)",
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:(?P<val>[^\s@/]+)@")
_LENGTH_AFTER = re.compile(r"\s+(?:characters?|chars?|digits?|letters?|symbols?|words?|long)\b")
# Words that follow "password is"/"password:" in sentences about a password rather than in ones
# that give it: "the password is too short", "is required", "is written on…", "is my dog's name".
_NOT_A_VALUE_WORDS = """
    a an the my your his her our their its this that these those it i you he she we they
    me him us them not no never also too very so just only still now currently usually always
    on in at under behind inside beneath near by with without for from of to into onto over
    and or but because if when as like about than then there here where what which who how why
    is are was were be been being will would can could should must may might do does did
    written stored kept saved hidden taped stuck noted jotted located scribbled printed listed
    somewhere same different wrong incorrect invalid correct right expired required needed
    mandatory optional weak strong secure insecure short long simple easy hard complex
    complicated case changed reset updated set sent shown visible hashed encrypted protected
    missing empty blank unknown forgotten lost compromised leaked stolen good bad fine ok okay
    great terrible below above attached included enclosed given provided displayed generated
    managed shared unique sensitive reused default none null n/a nothing something anything
    please enter type forgot see"""
_NOT_A_VALUE = frozenset(_NOT_A_VALUE_WORDS.split())
# After "password:" a value is expected, and redacting a stray word costs little while missing
# "password: secure" leaks it: only placeholders and the start of a place are skipped there
# ("password: on the card" is a keyword-only signal).
_PLACEHOLDER_WORDS = """none null n/a na tbd see required optional empty blank unknown
    on in under behind inside beneath written stored kept saved hidden taped stuck noted jotted
    a an the my your his her our their its this that it i you we they to for of with from is
    are was be and or but not no"""
_PLACEHOLDERS = frozenset(_PLACEHOLDER_WORDS.split())
_TRAILING_PUNCTUATION = ".,;"


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _secrets(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if not any(word in scan.lower for word in ("key", "token", "secret", "bearer")):
        return
    for m in _SECRET.finditer(text):
        value = m["val"].rstrip(".")
        if (
            len(value) >= _SECRET_MIN_LENGTH
            and _has_letter_and_digit(value)
            and _entropy(value) >= _SECRET_ENTROPY_BITS
        ):
            yield m.start("val"), m.start("val") + len(value), "secret"


def _password_value(
    text: str, m: re.Match[str], not_values: frozenset[str], *, wordlike_ok: bool = True
) -> tuple[int, int] | None:
    start, end = m.span("val")
    value = m["val"]
    if len(value) >= 2 and value[0] in "\"'`" and value[-1] == value[0]:
        start, end, value = start + 1, end - 1, value[1:-1]
    elif len(value) > 1 and value[-1] in _TRAILING_PUNCTUATION:
        end, value = end - 1, value[:-1]
    if (
        value.startswith("[REDACTED:")
        or value.lower() in not_values
        or not any(c.isalnum() for c in value)  # "Default: 'Password: '"
    ):
        return None
    if value.isdigit() and _LENGTH_AFTER.match(text, end):
        return None  # "the password is 12 characters long"
    if m["kw"].lower().startswith("pin") and not (value.isdigit() and 3 <= len(value) <= 12):
        return None
    if not wordlike_ok and value.isalpha() and value.islower():
        return None
    return start, end


def _phrase_value(m: re.Match[str]) -> bool:
    words = m["val"].lower().split()
    if m["sep"].strip() in (":", "="):
        return words[0] not in _PLACEHOLDERS
    if not m["kw"].lower().startswith("pass"):
        return len(words) >= 12  # a wallet's seed phrase is 12 to 24 words
    # "is correct horse battery staple" gives one; "is too short", "is written on the card",
    # "is long and hard to remember" talk about it: there an inner word is a function word.
    return len(words) >= 3 and not any(w in _NOT_A_VALUE for w in words[1:])


def _passwords(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    lowered = scan.lower
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            yield m.start("val"), m.end("val"), "password"
    if "phrase" in lowered or "mnemonic" in lowered:
        for m in _PHRASE.finditer(text):
            if _phrase_value(m):
                kind = "password" if m["kw"].lower().startswith("pass") else "secret"
                yield m.start("val"), m.start("val") + len(m["val"].rstrip()), kind
    if "pass" not in lowered and "pwd" not in lowered and "pin" not in lowered:
        return
    for m in _PW_ASSIGNED.finditer(text):
        if span := _password_value(text, m, _PLACEHOLDERS):
            yield *span, "password"
    for m in _PW_STATED.finditer(text):
        if span := _password_value(text, m, _NOT_A_VALUE):
            yield *span, "password"
    for m in _PW_SET_TO.finditer(text):
        if span := _password_value(text, m, _NOT_A_VALUE, wordlike_ok=False):
            yield *span, "password"
