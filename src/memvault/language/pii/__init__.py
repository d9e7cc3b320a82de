"""PII protection for the write pipeline: find personal data and secrets in a memory before it
is stored, then redact them, refuse the write or let it through, as the policy says. Validation
(Luhn, mod-97, JWT header, entropy) on top of the patterns lets dates, prices and version numbers
pass. Values are never logged, and never returned in reports or errors.

One module per family of detectors (``tokens``, ``personal``, ``secrets``, ``signals``); this
one merges what they find and applies the policy."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from memvault.errors import PIIRejected
from memvault.language.pii._scan import NO_DIGITS as _NO_DIGITS
from memvault.language.pii._scan import Hit as _Hit
from memvault.language.pii._scan import Scan as _Scan
from memvault.language.pii.personal import (
    _card_codes,
    _cards,
    _emails,
    _ibans,
    _ip_addresses,
    _phones,
    _ssns,
)
from memvault.language.pii.secrets import _passwords, _secrets
from memvault.language.pii.signals import _keyword_only
from memvault.language.pii.tokens import _api_keys, _aws_keys, _github_tokens, _jwts, _private_keys

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
