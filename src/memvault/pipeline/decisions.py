"""What the write pipeline's judgement calls return, whoever makes them (an LLM or the offline
rules): the same validated shapes, so a caller never knows or cares which one answered."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DedupAction = Literal["merge", "replace", "keep_both"]
MemoryType = Literal["persistent", "temporal"]


class DedupDecision(BaseModel):
    """For a new memory that resembles an existing one (cosine 0.70 to 0.98)."""

    model_config = ConfigDict(extra="ignore")

    action: DedupAction = Field(
        description="merge: one memory holding both; replace: the new text supersedes the old; "
        "keep_both: they say different things"
    )
    merged_text: str | None = Field(
        default=None, description="with merge: the combined memory, in one or two sentences"
    )
    reason: str = Field(default="", max_length=500)


class Enrichment(BaseModel):
    """Importance, lasting or time-bound, and topic tags for one memory."""

    model_config = ConfigDict(extra="ignore")

    importance: int = Field(ge=1, le=10, description="1 trivial … 10 critical to remember")
    memory_type: MemoryType = Field(
        description="temporal: true only for a while (plans, appointments, moods, 'this week')"
    )
    valid_until: datetime | None = Field(
        default=None, description="with temporal: when it stops being true, ISO 8601"
    )
    categories: list[str] = Field(
        default_factory=list,
        max_length=8,
        description="snake_case topics, e.g. food_preference, travel, health, work",
    )
    event_at: datetime | None = Field(
        default=None,
        description="when the event it tells of happened (or will), if the text dates it, ISO 8601",
    )
