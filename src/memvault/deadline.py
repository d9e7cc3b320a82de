"""When the caller needs its answer: the API sets it for each request (the request deadline),
so work that can be finished later (a large batch's embedding and extraction) is handed to the
worker in time, stored and said to be pending, instead of being stopped with nothing stored
and a timeout that cannot say so. Library calls have none and run to the end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_answer_by: ContextVar[float | None] = ContextVar("memvault_answer_by", default=None)


@contextmanager
def answer_within(seconds: float) -> Iterator[None]:
    """The code run in this block (and the tasks it starts) has ``seconds`` to answer."""
    token = _answer_by.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _answer_by.reset(token)


def remaining() -> float | None:
    """Seconds left before the caller's deadline; None when there is no deadline."""
    answer_by = _answer_by.get()
    return None if answer_by is None else answer_by - time.monotonic()
