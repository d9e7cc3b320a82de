"""Text as the keyword index and the offline rules read it: one Unicode normal form (NFKC), one
apostrophe, and (for matching) folded case. Defined once, so a word the rules see is the word
the index stores."""

from __future__ import annotations

import unicodedata

APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u00b4": "'"})


def normalise(text: str) -> str:
    """NFKC, and every apostrophe as ``'``; case is kept (the rules read capitals as names)."""
    return unicodedata.normalize("NFKC", text).translate(APOSTROPHES)


def fold(text: str) -> str:
    """``normalise``, then case folded: what keyword matching compares."""
    return normalise(text).casefold()
