"""Extraction of entities, facts and relations from one text: an LLM when one is configured,
offline rules otherwise (and whenever the LLM fails).

A failing LLM never loses the extraction: on any :class:`~memvault.llm.LLMError` — the service
unavailable or timing out after its retries (``llm_unavailable``), refusing the request
(``llm_rejected``) or answering twice with something that is not the JSON asked for
(``llm_invalid_answer``) — the offline rules answer instead, and ``Extraction.extractor``
says so: ``"offline (llm:openai/gpt-4o-mini failed: llm_unavailable)"``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from memvault.graph.claims import Extraction
from memvault.graph.extract_llm import extract_with_llm
from memvault.graph.extract_rules import ASSISTANT_ROLES, extract_offline
from memvault.graph.extraction_prompt import GRAPH_EXTRACT
from memvault.llm.base import LLM, LLMError
from memvault.metrics import LLM_FALLBACKS

log = logging.getLogger(__name__)


async def extract(
    text: str,
    *,
    speaker: str | None,
    reference_time: datetime,
    llm: LLM | None = None,
) -> Extraction:
    """What ``text`` claims. ``speaker`` is who said it (``None``: the memory's owner, written
    ``claims.SELF``); relative dates resolve against ``reference_time``."""
    if llm is None or (speaker or "").strip().casefold() in ASSISTANT_ROLES:
        # An assistant's turn is advice and guesses about the user, which a model reads as
        # facts about them; the rules read only what it restates of the user's own words.
        return extract_offline(text, speaker=speaker, reference_time=reference_time)
    try:
        return await extract_with_llm(text, speaker=speaker, reference_time=reference_time, llm=llm)
    except LLMError as exc:
        LLM_FALLBACKS.labels(GRAPH_EXTRACT.name, exc.code).inc()
        log.warning("llm %s failed (%s); using the offline rules", GRAPH_EXTRACT.name, exc.code)
        offline = extract_offline(text, speaker=speaker, reference_time=reference_time)
        return replace(
            offline, extractor=f"offline (llm:{llm.provider}/{llm.model} failed: {exc.code})"
        )
