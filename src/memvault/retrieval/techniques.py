"""LLM recall techniques: extra ways into the store for a question, asked of the configured
model in parallel, each under a deadline.

* expansion — the question rewritten as statements a memory would contain;
* HyDE — a hypothetical answer, embedded as one more query (Gao et al., 2022);
* self-query — filters read from the question (time span, topics, memory type).

None of them replaces the base search: what they find is fused with it, so a slow, failing or
confused model costs its own contribution and nothing else. The query is PII-redacted before it
leaves the process, as memory text is in the write pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from memvault.errors import PIIRejected
from memvault.language import pii
from memvault.language.categories import normalise_category
from memvault.llm import LLM, LLMError
from memvault.llm.prompts import RECALL_EXPAND, RECALL_HYDE, RECALL_SELF_QUERY
from memvault.metrics import LLM_FALLBACKS
from memvault.models import TechniqueReport

log = logging.getLogger(__name__)
Technique = Literal["expansion", "hyde", "self_query"]


class Expansion(BaseModel):
    statements: list[str] = Field(max_length=5)


class Hypothesis(BaseModel):
    answer: str


class SelfQuery(BaseModel):
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    categories: list[str] = Field(default=[], max_length=5)
    memory_type: Literal["persistent", "temporal"] | None = None
    query: str | None = None


@dataclass
class Extras:
    """What the techniques contributed: more query texts, a filtered query, and reports."""

    statements: list[str] = field(default_factory=list)
    hypothesis: str | None = None
    self_query: SelfQuery | None = None
    reports: dict[str, TechniqueReport] = field(default_factory=dict)

    def filters(self) -> dict[str, Any]:
        """The self-query's filters, in the shape ``list_filters`` reads."""
        if self.self_query is None:
            return {}
        sq = self.self_query
        found: dict[str, Any] = {
            "occurred_after": _utc(sq.occurred_after),
            "occurred_before": _utc(sq.occurred_before),
            "categories": sorted({normalise_category(c) for c in sq.categories if c.strip()}),
            "memory_type": sq.memory_type,
        }
        return {k: v for k, v in found.items() if v}


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


async def run(
    llm: LLM | None,
    query: str,
    wanted: set[Technique],
    *,
    reference: datetime,
    timeout_s: float,
) -> Extras:
    """Run the ``wanted`` techniques concurrently; never raises."""
    extras = Extras()
    if not wanted:
        return extras
    if llm is None:
        for name in sorted(wanted):
            extras.reports[name] = TechniqueReport(
                status="unavailable", ms=0.0, detail="no_llm_configured"
            )
        return extras
    try:
        text = pii.apply_policy(query, "redact").text
    except PIIRejected:
        # A secret that cannot be cut out of the question must not reach the model.
        for name in sorted(wanted):
            extras.reports[name] = TechniqueReport(status="failed", ms=0.0, detail="pii_rejected")
        return extras

    async def expansion() -> int:
        answer = await llm.structured(RECALL_EXPAND, Expansion, query=text)
        extras.statements = [s.strip() for s in answer.statements if s.strip()][:3]
        return len(extras.statements)

    async def hyde() -> int:
        answer = await llm.structured(RECALL_HYDE, Hypothesis, query=text)
        extras.hypothesis = answer.answer.strip() or None
        return int(extras.hypothesis is not None)

    async def self_query() -> int:
        answer = await llm.structured(
            RECALL_SELF_QUERY, SelfQuery, query=text, reference_time=reference.isoformat()
        )
        extras.self_query = answer
        return len(extras.filters())

    jobs: dict[Technique, Callable[[], Awaitable[int]]] = {
        "expansion": expansion,
        "hyde": hyde,
        "self_query": self_query,
    }
    names = sorted(wanted)
    reports = await asyncio.gather(*(_timed(n, jobs[n], timeout_s) for n in names))
    extras.reports = dict(zip(names, reports, strict=True))
    return extras


async def _timed(name: str, job: Callable[[], Awaitable[int]], timeout_s: float) -> TechniqueReport:
    started = time.perf_counter()
    detail: str | None = None
    try:
        added = await asyncio.wait_for(job(), timeout_s)
    except TimeoutError:
        detail = "timeout"
    except LLMError as exc:
        detail = exc.code
    except Exception as exc:  # a technique is optional: its failure must not fail the search
        detail = "internal_error"
        log.error("recall technique %s raised %s", name, type(exc).__name__)
    ms = (time.perf_counter() - started) * 1000
    if detail is None:
        return TechniqueReport(status="ok", ms=ms, added=added)
    LLM_FALLBACKS.labels(f"recall_{name}", detail).inc()
    log.warning("recall technique %s failed (%s); searching without it", name, detail)
    return TechniqueReport(status="failed", ms=ms, detail=detail)
