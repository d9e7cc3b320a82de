"""What every detector reads: the text and its cheap gates, computed once per ``detect``."""

from __future__ import annotations

from typing import NamedTuple

# (start, end, type) of one thing found.
Hit = tuple[int, int, str]


class Scan(NamedTuple):
    text: str
    lower: str
    digits: int


NO_DIGITS = str.maketrans("", "", "0123456789")
