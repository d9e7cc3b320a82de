"""Extraction of entities, facts and relations from one text: an LLM when one is configured,
offline rules otherwise (and whenever the LLM fails)."""

from __future__ import annotations

from datetime import datetime

from memvault.graph.claims import Extraction
from memvault.llm.base import LLM


async def extract(
    text: str,
    *,
    speaker: str | None,
    reference_time: datetime,
    llm: LLM | None = None,
) -> Extraction:
    """What ``text`` claims. ``speaker`` is who said it (``None``: the memory's owner, written
    ``claims.SELF``); relative dates resolve against ``reference_time``."""
    return Extraction()
