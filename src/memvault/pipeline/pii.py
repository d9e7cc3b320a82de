"""PII protection for the write pipeline: find personal data and secrets in a memory before it
is stored, then redact them, refuse the write or let it through, as the policy says. Validation
(Luhn, mod-97, JWT header, entropy) on top of the patterns lets dates, prices and version numbers
pass. Values are never logged, and never returned in reports or errors."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from memvault.errors import PIIRejected

PIIPolicy = Literal["redact", "reject", "allow"]

PII_TYPES: tuple[str, ...] = (
    "email",
    "phone",
    "credit_card",
    "card_security_code",
    "ssn",
    "iban",
    "ip_address",
    "aws_key",
    "github_token",
    "api_key",
    "jwt",
    "private_key",
    "secret",
    "password",
)


@dataclass(frozen=True)
class Finding:
    """One thing found: its type (one of PII_TYPES) and span. A keyword-only signal has no span
    (start == end == -1) and cannot be redacted."""

    type: str
    start: int
    end: int
    redactable: bool


@dataclass(frozen=True)
class PIIReport:
    """The text to store (redacted under "redact"), how many of each type were found (never the
    values), and whether anything was replaced."""

    text: str
    found: dict[str, int]
    redacted: bool


# When spans overlap, the earlier type here names the merged span: token formats recognised by
# their shape say more than "a number" or "something after the word key". A password or an email
# outranks the numeric types because digits inside them (bob4111…@x.com) are part of that value.
_PRIORITY: dict[str, int] = {
    name: rank
    for rank, name in enumerate(
        (
            "private_key",
            "jwt",
            "aws_key",
            "github_token",
            "api_key",
            "password",
            "email",
            "iban",
            "credit_card",
            "card_security_code",
            "ssn",
            "ip_address",
            "phone",
            "secret",
        )
    )
}

_Hit = tuple[int, int, str]


class _Scan(NamedTuple):
    """The text and what the detectors' cheap gates look at, computed once per detect()."""

    text: str
    lower: str
    digits: int


_NO_DIGITS = str.maketrans("", "", "0123456789")

# ---------------------------------------------------------------------------- token formats

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")
# A block pasted without its END line still loses its header lines ("Proc-Type: …", then a blank
# line) and its base64 body: full-width lines, then one shorter last line.
_PEM_BODY = re.compile(
    r"(?:[ \t]*\r?\n(?:[A-Za-z0-9+/=]{40,}|[A-Za-z-]+:[^\n]*|(?=[ \t]*\r?\n[A-Za-z0-9+/=]{40,})))*"
    r"(?:[ \t]*\r?\n[A-Za-z0-9+/]+={0,2}(?=[ \t]*(?:\r?\n|$)))?"
)
_JWT = re.compile(
    r"(?<![\w-])(?P<header>ey[A-Za-z0-9_-]{10,})\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?![\w-])"
)
_AWS_ACCESS = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(
    r"(?<![A-Za-z0-9])aws[\s_-]?secret(?:[\s_-]?access)?(?:[\s_-]?key)?[\"']?"
    r"(?:\s*[:=]\s*|\s+(?:is\s+)?)[\"']?(?P<val>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    re.IGNORECASE,
)
_GITHUB = re.compile(
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})"
    r"(?![A-Za-z0-9_])"
)
_API_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{20,}"  # OpenAI, incl. sk-proj-…; Anthropic sk-ant-…
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe secret and restricted keys
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[A-Za-z0-9_-]{35})"  # Google
    r"(?![A-Za-z0-9_-])"
)
_API_KEY_PREFIXES = ("sk-", "k_live_", "k_test_", "xox", "AIza")
# "sk-learn-based-pipeline-for-text" is prose; a real key body always holds a long random run.
_RANDOM_RUN = re.compile(r"[A-Za-z0-9]{16,}")


def _private_keys(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if "PRIVATE KEY-----" not in text:
        return
    position, ends = 0, True
    while begin := _PEM_BEGIN.search(text, position):
        end = _PEM_END.search(text, begin.end()) if ends else None
        if end is None:
            ends = False  # none after this BEGIN, so none after any later one either
            end = _PEM_BODY.match(text, begin.end()) or begin
        yield begin.start(), end.end(), "private_key"
        position = end.end()


def _jwts(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if text.count(".") < 2:
        return
    for m in _JWT.finditer(text):
        if _is_jwt_header(m["header"]):
            yield m.start(), m.end(), "jwt"


def _is_jwt_header(segment: str) -> bool:
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(header, dict) and "alg" in header


def _aws_keys(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if "AKIA" in text or "ASIA" in text:
        for m in _AWS_ACCESS.finditer(text):
            yield m.start(), m.end(), "aws_key"
    if "aws" in scan.lower:
        for m in _AWS_SECRET.finditer(text):
            yield m.start("val"), m.end("val"), "aws_key"


def _github_tokens(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if "gh" not in text and "github_pat_" not in text:
        return
    for m in _GITHUB.finditer(text):
        yield m.start(), m.end(), "github_token"


def _api_keys(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if not any(prefix in text for prefix in _API_KEY_PREFIXES):
        return
    for m in _API_KEY.finditer(text):
        value = m.group()
        if not value.startswith("sk-") or any(
            _has_letter_and_digit(run) for run in _RANDOM_RUN.findall(value)
        ):
            yield m.start(), m.end(), "api_key"


def _has_letter_and_digit(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# ---------------------------------------------------------------------------- personal data

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9!#$%&'*+/=?^_`{|}~.-])[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]*@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})(?![A-Za-z0-9-])",
    re.IGNORECASE,
)
# Numbers never start in the middle of a word, a decimal, a path or another number ("4111 1111":
# the second group is not a number of its own).
_NUM_START = r"(?<![\w.+/@-])(?<!\d[ .-])"
_NUM_END = r"(?![\w@]|[.,/-]\d)"
_CARD = re.compile(rf"{_NUM_START}\d++(?:[ -]\d++)*+")
_NUMBER_ENDS = re.compile(_NUM_END)
_SSN = re.compile(
    rf"{_NUM_START}(?!000|666|9\d\d)\d{{3}}-(?!00)\d{{2}}-(?!0000)\d{{4}}{_NUM_END}(?! \d)"
)
_SSN_LABELLED = re.compile(
    r"\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b[^\d\n]{0,15}?"
    rf"(?P<num>\d{{3}}[ -]?\d{{2}}[ -]?\d{{4}}){_NUM_END}",
    re.IGNORECASE,
)
# At most 34 characters: eight groups of four after the check digits, plus a short tail.
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){1,8}+(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)
_IBAN_TOKEN = re.compile(r"\S+")
# +CC then groups; a group may be "(0)" or "(555)". Digits are counted afterwards (8 to 15, E.164).
_PHONE_INTL = re.compile(
    r"(?<![\w+])\+[1-9]\d{0,2}+(?:[ .-]?(?:\(\d{1,5}\)|\d++)){1,7}+(?!\w|[.,]\d)"
)
# North American: (555) 123-4567, 555-123-4567, 555.123.4567, 1-555-123-4567. Separators are
# required: a bare ten-digit run is as likely an order number.
_PHONE_US = re.compile(
    rf"{_NUM_START}(?:1[ .-]?)?(?:\(\d{{3}}\)[ .-]?|\d{{3}}[ .-])\d{{3}}[ .-]\d{{4}}"
    rf"{_NUM_END}(?![ .-]\d)"
)
# European national formats start with the trunk 0: 020 7946 0958, 06 12 34 56 78, 030/1234567.
_PHONE_TRUNK = re.compile(rf"{_NUM_START}0[1-9]\d{{0,4}}+(?:[ ./-]\d{{2,8}}+){{1,5}}+{_NUM_END}")
# Any number shape counts once the text says it is a phone number: "call me at 5551234567".
_PHONE_LABELLED = re.compile(
    r"\b(?:phone|tel|telephone|mobile|cell|cellphone|call|text|whatsapp|fax|sms)"
    r"(?:\s+(?:number|no\.?|#))?\b[^\d\n]{0,20}?"
    rf"(?P<num>\+?\d[\d ().-]{{5,20}}\d){_NUM_END}",
    re.IGNORECASE,
)
_PHONE_WORDS = ("phone", "tel", "mobile", "cell", "call", "text", "whatsapp", "fax", "sms")
_DIGIT_GROUP = re.compile(r"\d+")
_IPV4 = re.compile(
    r"(?<![\w.+])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}"
    r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w]|\.\d)"
)
_HEX_GROUP = re.compile(r"[0-9A-Fa-f]+")
_VERSION_BEFORE = re.compile(r"\b(?:version|ver\.?|release|build|v)\s*$", re.IGNORECASE)
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}"
    r"(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4})?(?![\w:])"
)


def _emails(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if "@" in text:
        for m in _EMAIL.finditer(text):
            # In scheme://user:secret@host the part before @ is a password, not a mailbox.
            token_start = max(text.rfind(" ", 0, m.start()), 0)
            if text[m.start() - 1 : m.start()] == ":" and "://" in text[token_start : m.start()]:
                continue
            yield m.start(), m.end(), "email"


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _cards(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if scan.digits < 13:
        return
    for m in _CARD.finditer(text):
        groups = list(_DIGIT_GROUP.finditer(text, m.start(), m.end()))
        if sum(len(g.group()) for g in groups) < 13:
            continue
        # A run of groups may hold a card beside other numbers ("ref 12 4111 1111 1111 1111"):
        # take the longest Luhn-valid stretch of whole groups starting at each group. Cards are
        # printed in groups of 4 to 6 (the last one may be shorter: 4222 2222 2222 2), so
        # "1 2 3 4 5 6 7 8 9 10 11" is a list, not a card.
        lengths = [len(g.group()) for g in groups]
        digits_before = [0, *itertools.accumulate(lengths)]
        short_before = [0, *itertools.accumulate(n < 3 for n in lengths)]
        i = 0
        while i < len(groups):
            for j in range(min(len(groups), i + 19), i, -1):
                if not 13 <= digits_before[j] - digits_before[i] <= 19:
                    continue
                if j - i > 1 and short_before[j - 1] > short_before[i]:
                    continue
                end = groups[j - 1].end()
                digits = "".join(g.group() for g in groups[i:j])
                if _NUMBER_ENDS.match(text, end) and _luhn(digits):
                    yield groups[i].start(), end, "credit_card"
                    if tail := _CARD_TAIL.match(text, end):
                        yield tail.start("num"), tail.end("num"), "card_security_code"
                    i = j - 1
                    break
            i += 1


# The code on the back of a card (CVV/CVC): a labelled one anywhere, or an unlabelled 3-4 digits
# right after a card number and its expiry ("4111 … 1111 12/27 123"). Without the expiry, a
# number after a card is just another number ("ref 12 4111 … 1111 345").
_CARD_CODE_LABELLED = re.compile(
    r"\b(?:cvv2?|cvc2?|cvn|csc|card\s+(?:security|verification)\s+(?:code|value|number)|"
    r"security\s+code)\b[^\w\n]{0,3}(?:(?:is|was|=)\s*)?[#:]?\s*(?P<num>\d{3,4})"
    rf"{_NUM_END}",
    re.IGNORECASE,
)
_CARD_TAIL = re.compile(
    r"[ \t]*[,;]?[ \t]*(?:(?:exp(?:iry|ires|iration)?(?:\s+date)?|valid\s+(?:thru|through))"
    r"\.?[ \t]*:?[ \t]*)?(?:0?[1-9]|1[0-2])[ \t]*/[ \t]*(?:\d{4}|\d{2})[ \t]*[,;]?[ \t]*"
    rf"(?P<num>\d{{3,4}}){_NUM_END}(?![ .-]?\d)"
)


def _card_codes(scan: _Scan) -> Iterator[_Hit]:
    if not any(w in scan.lower for w in ("cv", "csc", "security code", "verification")):
        return
    for m in _CARD_CODE_LABELLED.finditer(scan.text):
        yield m.start("num"), m.end("num"), "card_security_code"


def _valid_ssn(digits: str) -> bool:
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return (
        area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )


def _ssns(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if scan.digits < 9:
        return
    for m in _SSN.finditer(text):
        yield m.start(), m.end(), "ssn"
    if "ssn" not in scan.lower and "social security" not in scan.lower:
        return
    for m in _SSN_LABELLED.finditer(text):
        if _valid_ssn(re.sub(r"\D", "", m["num"])):
            yield m.start("num"), m.end("num"), "ssn"


def _iban_valid(compact: str) -> bool:
    if not 15 <= len(compact) <= 34 or compact[2:4] in ("00", "01", "99"):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _ibans(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if scan.digits < 2:
        return
    for m in _IBAN.finditer(text):
        # The last group may have swallowed an upper-case word after the IBAN: drop groups
        # from the end until the check digits agree.
        tokens = list(_IBAN_TOKEN.finditer(text, m.start(), m.end()))
        for k in range(len(tokens), 0, -1):
            if _iban_valid("".join(t.group() for t in tokens[:k])):
                yield m.start(), tokens[k - 1].end(), "iban"
                break


def _date_shaped(groups: list[str]) -> bool:
    """01/05/2024 or 2024-05-01: two small numbers and a year, whichever way round."""
    if len(groups) < 3:
        return False
    a, b, c = groups[:3]
    if len(a) <= 2 and len(b) <= 2 and len(c) == 4:
        return c[:2] in ("19", "20") and min(int(a), int(b)) <= 12
    return len(a) == 4 and a[:2] in ("19", "20") and len(b) <= 2 and len(c) <= 2


def _phone_span(text: str, start: int, end: int, low: int, high: int) -> tuple[int, int] | None:
    """The span trimmed to at most `high` digits by whole groups, if it has at least `low`."""
    groups = list(_DIGIT_GROUP.finditer(text, start, end))
    if _date_shaped([g.group() for g in groups]):
        return None
    while groups and sum(len(g.group()) for g in groups) > high:
        groups.pop()
    if len(groups) < 1 or sum(len(g.group()) for g in groups) < low:
        return None
    last = groups[-1].end()
    # Keep the closing bracket of a trailing "(555)" group inside the span.
    return start, last + 1 if text[last : last + 1] == ")" else last


def _phones(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    if scan.digits < 7:
        return
    for m in _PHONE_INTL.finditer(text):
        # "+5 3 4 7 2 9 1 8" is arithmetic (at most one one-digit group may follow the country
        # code), and "+35236450.6" is a signed decimal.
        number = m.group()
        groups = _DIGIT_GROUP.findall(number)
        decimal = number.count(".") == 1 and not any(c in number for c in " -(")
        if not decimal and sum(len(g) == 1 for g in groups[1:]) <= 1:
            span = _phone_span(text, m.start(), m.end(), 8, 15)
            if span:
                yield *span, "phone"
    for m in _PHONE_US.finditer(text):
        yield m.start(), m.end(), "phone"
    for m in _PHONE_TRUNK.finditer(text):
        # A two-group phone number has ten digits or more (030 1234567, 07700 900123); with
        # nine it is as likely a US ZIP+4 code (02110-1301).
        groups = _DIGIT_GROUP.findall(m.group())
        if len(groups) == 2 and len("".join(groups)) < 10:
            continue
        span = _phone_span(text, m.start(), m.end(), 9, 12)
        if span and span[1] == m.end():  # more than 12 digits is no phone number
            yield *span, "phone"
    if not any(word in scan.lower for word in _PHONE_WORDS):
        return
    for m in _PHONE_LABELLED.finditer(text):
        span = _phone_span(text, m.start("num"), m.end("num"), 7, 15)
        if span:
            yield *span, "phone"


def _ip_addresses(scan: _Scan) -> Iterator[_Hit]:
    text = scan.text
    # Loopback and "any" addresses (127.0.0.1, 0.0.0.0, ::1, ::) identify no one and fill
    # technical notes ("the server listens on 127.0.0.1:8765"); they are left alone.
    if scan.digits >= 4 and "." in text:
        for m in _IPV4.finditer(text):
            address = ipaddress.IPv4Address(m.group())
            if address.is_loopback or address.is_unspecified:
                continue
            if _VERSION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
                continue
            yield m.start(), m.end(), "ip_address"
    if "::" in text or text.count(":") >= 7:
        for m in _IPV6.finditer(text):
            candidate = m.group()
            if candidate.endswith(":") and not candidate.endswith("::"):
                candidate = candidate[:-1]  # "fe80::1: reachable" — the colon is punctuation
            try:
                address6 = ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            if address6.is_loopback or address6.is_unspecified:
                continue
            # "dead::beef" and "a::b" are valid but read as words: without a digit, an address
            # needs three groups to count.
            if any(c.isdigit() for c in candidate) or len(_HEX_GROUP.findall(candidate)) >= 3:
                yield m.start(), m.start() + len(candidate), "ip_address"


# ---------------------------------------------------------------------------- secrets and passwords

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


# ---------------------------------------------------------------------------- keyword-only signals

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


# ---------------------------------------------------------------------------- the stage

_DETECTORS: tuple[Callable[[_Scan], Iterator[_Hit]], ...] = (
    _private_keys,
    _jwts,
    _aws_keys,
    _github_tokens,
    _api_keys,
    _passwords,
    _emails,
    _ibans,
    _cards,
    _card_codes,
    _ssns,
    _ip_addresses,
    _phones,
    _secrets,
)


def detect(text: str) -> list[Finding]:
    """Every finding in `text`: overlapping spans merged under the most specific type, in text
    order, then the keyword-only signals (span -1..-1, not redactable)."""
    scan = _Scan(text, text.lower(), len(text) - len(text.translate(_NO_DIGITS)))
    hits = sorted(
        (hit for detector in _DETECTORS for hit in detector(scan)), key=lambda h: (h[0], -h[1])
    )
    findings: list[Finding] = []
    current: _Hit | None = None
    for start, end, kind in hits:
        if current and start < current[1]:
            best = kind if _PRIORITY[kind] < _PRIORITY[current[2]] else current[2]
            current = (current[0], max(end, current[1]), best)
            continue
        if current:
            findings.append(Finding(current[2], current[0], current[1], True))
        current = (start, end, kind)
    if current:
        findings.append(Finding(current[2], current[0], current[1], True))
    findings.extend(Finding(kind, -1, -1, False) for kind in _keyword_only(scan))
    return findings


def apply_policy(text: str, policy: PIIPolicy) -> PIIReport:
    """Redact, reject or allow what `detect` finds. Raises PIIRejected under "reject" when
    anything is found, and under "redact" when a finding has no span that could be replaced."""
    if policy not in ("redact", "reject", "allow"):
        raise ValueError(f"unknown PII policy {policy!r}")
    findings = detect(text)
    counts = Counter(f.type for f in findings)
    found = {kind: counts[kind] for kind in PII_TYPES if counts[kind]}
    if not findings or policy == "allow":
        return PIIReport(text=text, found=found, redacted=False)
    if policy == "reject":
        raise PIIRejected(
            f"The content contains sensitive data ({_summary(found)}) and the PII policy "
            "rejects it. Remove it and try again.",
            details={"found": found},
        )
    if not all(f.redactable for f in findings):
        raise PIIRejected(
            "The content says where a password or secret is kept, or how to work it out, "
            "without giving it, so there is nothing to redact. Remove that part and try again.",
            details={"found": found},
        )
    parts: list[str] = []
    position = 0
    for f in findings:
        parts += (text[position : f.start], f"[REDACTED:{f.type}]")
        position = f.end
    parts.append(text[position:])
    return PIIReport(text="".join(parts), found=found, redacted=True)


def _summary(found: dict[str, int]) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in found.items())
