"""Secrets recognised by their shape: private keys, JWTs, cloud and code-host tokens, API keys."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator

from memvault.language.pii._scan import Hit as _Hit
from memvault.language.pii._scan import Scan as _Scan

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
