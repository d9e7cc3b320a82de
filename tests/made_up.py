"""Texts of made-up words for tests that write many memories: they share next to nothing, so
dedup folds none of them and the offline extractor claims nothing from them."""

from __future__ import annotations

import random

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "nu",
    "pe",
    "ro",
    "sa",
    "ti",
    "vu",
    "ze",
    "bo",
    "da",
    "fi",
    "gu",
    "he",
]


def made_up_texts(count: int, seed: int) -> list[str]:
    """``count`` texts of six four-syllable words, the same for the same ``seed``."""
    rng = random.Random(seed)
    word = lambda: "".join(rng.choice(_SYLLABLES) for _ in range(4))  # noqa: E731
    return [" ".join(word() for _ in range(6)) for _ in range(count)]
