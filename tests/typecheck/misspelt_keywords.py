"""Checked by mypy with the sources (``make check``, ``make test``): each call below misspells
a keyword, and mypy must refuse it. Strict mode warns of an ignore that is not needed, so if a
face stops refusing one, this file fails type checking."""

from __future__ import annotations

from memvault import Memory, MemoryClient


def sync_faces(memory: Memory, client: MemoryClient) -> None:
    memory.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    client.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    memory.add_goal("renew the visa", user_id="u", priorty=2)  # type: ignore[call-arg]
    memory.search("visa", user_id="u", limt=3)  # type: ignore[call-arg]
    memory.add("x", user_id="u", tags=["t"])  # spelt right: no error
