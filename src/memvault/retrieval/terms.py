"""Keyword terms for the blind index: normalised, tokenised, stop words dropped, stemmed
(Snowball, English). Terms are HMAC-ed before they reach the database."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import snowballstemmer

from memvault.crypto import Keyring
from memvault.text import fold

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no retrieval signal; kept short on purpose: "not", "no" and numbers stay,
# because negations and amounts matter to a memory.
_STOP = frozenset(
    _WORD.findall(
        """a an and are as at be been but by did do does for from had has have he her hers him
        his i if in into is it its me my of on or our ours she so than that the their them then
        there these they this those to was we were what when where which who whom why will with
        would you your yours"""
    )
)
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def terms(text: str) -> Counter[str]:
    """Term frequencies of a text."""
    folded = fold(text)
    return Counter(_stem(w) for w in _WORD.findall(folded) if w not in _STOP)


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
