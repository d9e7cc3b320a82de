"""The pipeline's judgement calls — is this a duplicate, how important is it, how long is it
true — asked of the LLM when one is configured, else of the offline rules. A failing or
confused LLM falls back to the rules: a memory is never lost to an LLM error, and the answer
says which path produced it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Literal

from memvault.llm import DEDUP_DECISION, ENRICH, LLM, LLMError
from memvault.metrics import LLM_FALLBACKS
from memvault.pipeline import rules
from memvault.pipeline.decisions import DedupDecision, Enrichment

log = logging.getLogger(__name__)
Source = Literal["llm", "rules"]


class Judge:
    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm

    async def decide(
        self, existing: str, new: str, similarity: float
    ) -> tuple[DedupDecision, Source]:
        if self.llm is not None:
            try:
                decision = await self.llm.structured(
                    DEDUP_DECISION,
                    DedupDecision,
                    existing=existing,
                    new=new,
                    similarity=similarity,
                )
                if decision.action != "merge" or (decision.merged_text or "").strip():
                    return decision, "llm"
            except LLMError as exc:
                self._fell_back("dedup_decision", exc)
        return rules.decide_duplicate(existing, new, similarity), "rules"

    async def enrich(self, text: str, reference_time: datetime) -> tuple[Enrichment, Source]:
        if self.llm is not None:
            try:
                # A card's expiry is no date for the memory: the model does not see it either.
                answer = await self.llm.structured(
                    ENRICH,
                    Enrichment,
                    text=rules.without_card_expiry(text),
                    reference_time=reference_time.isoformat(),
                )
                return _tidy(answer, reference_time), "llm"
            except LLMError as exc:
                self._fell_back("enrich", exc)
        return rules.enrich(text, reference_time), "rules"

    def _fell_back(self, task: str, exc: LLMError) -> None:
        LLM_FALLBACKS.labels(task, exc.code).inc()
        log.warning("llm %s failed (%s); using the offline rules", task, exc.code)


def _tidy(answer: Enrichment, reference_time: datetime) -> Enrichment:
    """Hold an LLM's answer to the same invariants the rules keep."""
    categories = sorted({rules.normalise_category(c) for c in answer.categories if c.strip()})
    valid_until = answer.valid_until
    if valid_until is not None and valid_until.tzinfo is None:
        valid_until = valid_until.replace(tzinfo=UTC)
    if answer.memory_type == "persistent" or (valid_until and valid_until <= reference_time):
        valid_until = None
    memory_type = (
        answer.memory_type if valid_until or answer.memory_type == "persistent" else "temporal"
    )
    event_at = answer.event_at
    if event_at is not None and event_at.tzinfo is None:
        event_at = event_at.replace(tzinfo=UTC)
    return Enrichment(
        importance=answer.importance,
        memory_type=memory_type,
        valid_until=valid_until,
        categories=categories or ["general"],
        event_at=event_at,
    )
