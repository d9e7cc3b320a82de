"""What the store compares and indexes without holding the words: keyed hashes of names and
values (two spellings of one name hash alike) and the blind terms of graph text. Below the
tables, so key rotation can make them again for the rows it re-seals."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvault.crypto.envelope import Keyring
from memvault.language.terms import terms
from memvault.text import fold

# The subject or object that means "the memory's owner" ("I work at Acme" with no speaker
# known). The store resolves it to the user's own entity.
SELF = "@user"

_PUNCTUATION = re.compile(r"[^\w@]+", re.UNICODE)
_LEADING_THE = re.compile(r"^the\s+")


def normalise_name(name: str) -> str:
    """What makes two surface names one: case, punctuation, spacing and a leading "the"."""
    folded = " ".join(_PUNCTUATION.sub(" ", fold(name)).split())
    return _LEADING_THE.sub("", folded) or folded


def name_key(keyring: Keyring, name: str, key_id: str | None = None) -> bytes:
    """Keyed hash of a normalised name (domain-separated from memory content hashes)."""
    return keyring.content_hash("entity\x00" + normalise_name(name), key_id)


def name_keys(keyring: Keyring, names: Sequence[str]) -> list[bytes]:
    """The names' hashes under every key held, so rows written before a rotation match."""
    return [name_key(keyring, n, k) for n in names for k in sorted(keyring.key_ids)]


def value_key(keyring: Keyring, value: str) -> bytes:
    return keyring.content_hash("value\x00" + normalise_name(value))


def self_key(keyring: Keyring, key_id: str | None = None) -> bytes:
    """The user's own entity: no surface name can hash to it."""
    return keyring.content_hash("entity-self\x00", key_id)


def entity_terms(keyring: Keyring, name: str, aliases: Sequence[str]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for text in (name, *aliases):
        if text == SELF:
            continue
        for term, tf in terms(text).items():
            term_id = keyring.term_id(term)
            counts[term_id] = counts.get(term_id, 0) + tf
    return counts


def text_terms(keyring: Keyring, text: str) -> dict[int, int]:
    counts: dict[int, int] = {}
    for term, tf in terms(text).items():
        term_id = keyring.term_id(term)
        counts[term_id] = counts.get(term_id, 0) + tf
    return counts
