"""Keyword terms for the blind index: normalised, tokenised, stop words dropped, stemmed
(Snowball, English). Terms are HMAC-ed before they reach the database."""

from __future__ import annotations

from collections import Counter

from memvault.crypto.envelope import Keyring
from memvault.text import STOP_WORDS, WORD, fold, stem


def terms(text: str) -> Counter[str]:
    """Term frequencies of a text."""
    return Counter(stem(w) for w in WORD.findall(fold(text)) if w not in STOP_WORDS)


def blind_terms(keyring: Keyring, text: str) -> tuple[dict[int, int], int]:
    """(term id → frequency, document length) under the active key."""
    counts = terms(text)
    ids: dict[int, int] = {}
    for term, tf in counts.items():
        term_id = keyring.term_id(term)
        ids[term_id] = ids.get(term_id, 0) + tf
    return ids, sum(counts.values())


def query_terms(keyring: Keyring, text: str) -> dict[str, list[int]]:
    """A query's words, each with its term ids under every key held, so rows written before a
    key rotation finished still match."""
    return {w: [keyring.term_id(w, key_id) for key_id in keyring.key_ids] for w in terms(text)}


def query_term_ids(keyring: Keyring, text: str) -> list[int]:
    """A query's term ids under every key held."""
    return sorted({i for ids in query_terms(keyring, text).values() for i in ids})
