"""Preparing text for a model: clean, cap, and split what exceeds the model's window."""

from __future__ import annotations

from memvault.embedding.base import Tokenizer
from memvault.errors import InvalidInput

# [CLS] and [SEP] (or the model's equivalents) take two places in every window.
_SPECIAL_TOKENS = 2


def clean(text: str, max_chars: int) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise InvalidInput("Cannot embed empty text.")
    return cleaned[:max_chars]


def chunk(text: str, tokenizer: Tokenizer, window: int, overlap: int) -> list[str]:
    """Overlapping pieces of ``text`` of at most ``window`` tokens each, cut on token bounds.

    The pieces are slices of the original text (not decoded tokens), so casing and spacing
    survive.
    """
    size = max(1, window - _SPECIAL_TOKENS)
    if len(text) <= size:
        return [text]  # every token covers at least one character: it cannot overflow
    spans = tokenizer.spans(text)
    if len(spans) <= size:
        return [text]
    step = max(1, size - min(overlap, size - 1))
    pieces = []
    for start in range(0, len(spans), step):
        end = min(start + size, len(spans))
        pieces.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            break
    return pieces
