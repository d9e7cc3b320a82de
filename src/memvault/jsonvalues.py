"""What a JSON value (a memory's metadata, a metadata filter) may hold, checked before anything is
stored: every value must survive PostgreSQL's ``jsonb`` and come back out through the API.

``jsonb`` refuses ``NaN``/``Infinity`` and the NUL character; a lone surrogate has no UTF-8
form; and a value nested hundreds of levels deep is stored but cannot be serialised back, so
one such row would break every later list and search of its owner. Checks walk the value
iteratively: a hostile depth cannot exhaust the Python stack either.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32
MAX_BYTES = 65_536
TRUNCATED = "_memvault_truncated"


def check(value: Any) -> None:
    """Raise ``ValueError`` saying what is wrong when ``value`` cannot be stored as given."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                raise ValueError(f"must not be nested more than {MAX_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
            if isinstance(item, dict):
                for key in item:
                    _check_text(key)
        elif isinstance(item, str):
            _check_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("must not contain NaN or Infinity")
        elif not (item is None or isinstance(item, bool | int | float)):
            raise ValueError("must hold only JSON values")
    if len(json.dumps(value, ensure_ascii=False).encode()) > MAX_BYTES:
        raise ValueError(f"must be at most {MAX_BYTES} bytes as JSON")


def _check_text(text: Any) -> None:
    if not isinstance(text, str):
        raise ValueError("must have string keys")
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None


def bounded(value: dict[str, Any]) -> dict[str, Any]:
    """A stored value as it can be answered: nesting past ``MAX_DEPTH`` (rows written before the
    check existed) is cut to null and the value marked, instead of failing every read."""
    if _depth(value) <= MAX_DEPTH:
        return value
    cut = _cut(value, MAX_DEPTH)
    return {**cut, TRUNCATED: True} if isinstance(cut, dict) else {TRUNCATED: True}


def _depth(value: Any) -> int:
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return deepest


def _cut(value: Any, levels: int) -> Any:
    if not isinstance(value, dict | list):
        return value
    if levels == 0:
        return None
    if isinstance(value, dict):
        return {k: _cut(v, levels - 1) for k, v in value.items()}
    return [_cut(v, levels - 1) for v in value]
