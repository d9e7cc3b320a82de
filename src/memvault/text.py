"""Text as the keyword index, the offline rules and the exact-duplicate hash read it: one Unicode
normal form (NFKC), one apostrophe, folded case, the words, the stop words and the stems.
Defined once, so a word the rules see is the word the index stores."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u00b4": "'"})

# Runs of letters, digits and underscores: the words of the keyword index (and of the hashing
# embedder's bag of words).
WORD = re.compile(r"\w+", re.UNICODE)
# Runs of letters, or a number with its separators ("1,200", "3.5", "10:30"): what the offline
# rules compare, where a number is a value an update may change.
TOKEN = re.compile(r"[^\W\d_]+|\d+(?:[.,:]\d+)*", re.UNICODE)

# Words that say nothing about what a memory is about, dropped alike by the keyword index and by
# the rules' comparison of content words. Kept short on purpose: negations ("not", "no",
# "never"), modals, quantifiers and numbers change what a memory says, and the keyword index
# matches on them (a longer list, the rules' old one, cost 1.2 points of PrefEval R@10). The
# one- and two-letter tails are what an apostrophe leaves of a contraction ("Rita's", "we've",
# "don't"): fragments, not words.
STOP_WORDS = frozenset(
    WORD.findall(
        """a an and are as at be been but by did do does for from had has have he her hers him
        his i if in into is it its me my of on or our ours she so than that the their them then
        there these they this those to was we were what when where which who whom why will with
        would you your yours s t ve ll d re m"""
    )
)

# The months, in English whatever the locale: the one table dates are read by (event times,
# the rules' time words, the graph's dates). Names folded; ``MONTHS`` adds the abbreviations.
MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
MONTHS: dict[str, int] = {
    **{name: n for n, name in enumerate(MONTH_NAMES, start=1)},
    **{name[:3]: n for n, name in enumerate(MONTH_NAMES, start=1)},
    "sept": 9,
}


def normalise(text: str) -> str:
    """NFKC, and every apostrophe as ``'``; case is kept (the rules read capitals as names)."""
    return unicodedata.normalize("NFKC", text).translate(APOSTROPHES)


def fold(text: str) -> str:
    """``normalise``, then case folded: what keyword matching compares."""
    return normalise(text).casefold()


def for_hash(text: str) -> str:
    """What the exact-duplicate hash compares: NFC, case folded, whitespace collapsed. NFC, not
    NFKC, because stored content hashes were computed so; changing it would hide duplicates."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


@lru_cache(maxsize=1)
def _english() -> Any:
    # Importing snowballstemmer loads every language's stemmer (0.1-0.2 s of CPU): only code
    # that stems pays for it, not every importer of the word lists (the HTTP client's models).
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """Snowball (English): the keyword index's stems."""
    return str(_english().stemWord(word))
