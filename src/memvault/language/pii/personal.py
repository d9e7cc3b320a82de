"""Personal data: emails, card numbers and their codes, SSNs, IBANs, phone numbers, IP
addresses, each validated (Luhn, mod-97, area rules, each country's numbering plan) so dates,
prices and versions pass."""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Iterator

import phonenumbers
from stdnum import iban, luhn

from memvault.language.pii._scan import Hit as _Hit
from memvault.language.pii._scan import Scan as _Scan

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
# +CC then groups; a group may be "(0)" or "(555)". Whether the digits are a number that can be
# dialled (a country code that exists, a length its numbering plan has) is libphonenumber's call.
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
    return bool(luhn.is_valid(digits))


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
    # python-stdnum knows each country's length and layout besides the mod-97 checksum; the
    # national check digits are left out: a plausible number is still someone's to protect.
    return bool(iban.is_valid(compact, check_country=False))


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


def _dialable(number: str) -> bool:
    """An international number (``+CC …``) whose country code exists and whose length is one
    that country's plan dials from abroad (a number only dialable locally is not enough)."""
    try:
        parsed = phonenumbers.parse(number, None)
    except phonenumbers.NumberParseException:
        return False
    reason = phonenumbers.is_possible_number_with_reason(parsed)
    return bool(reason == phonenumbers.ValidationResult.IS_POSSIBLE)


def _international_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The longest run of whole groups from ``start`` that is a dialable number: a number
    may be followed by another ("+44 20 7946 0958 1234")."""
    groups = list(_DIGIT_GROUP.finditer(text, start, end))
    if _date_shaped([g.group() for g in groups]):
        return None
    for k in range(len(groups), 0, -1):
        last = groups[k - 1].end()
        last = last + 1 if text[last : last + 1] == ")" else last
        if _dialable(text[start:last]):
            return start, last
    return None


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
            span = _international_span(text, m.start(), m.end())
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
