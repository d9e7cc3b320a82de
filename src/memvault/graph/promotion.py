"""When a project-channel fact is prominent enough to be copied to the user's ``_global``
channel: confident, recalled often, and seen in more than one conversation.

The rule is pure so it is tested at and around every threshold; the promotion itself (the
global copy with its PROMOTED_FROM link) needs the facts table and is wired where that lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from memvault.config import Settings


@dataclass(frozen=True)
class PromotionThresholds:
    min_confidence: float = 0.85
    min_access_count: int = 5
    min_conversations: int = 2

    @classmethod
    def of(cls, settings: Settings) -> PromotionThresholds:
        return cls(
            min_confidence=settings.promotion_min_confidence,
            min_access_count=settings.promotion_min_access_count,
            min_conversations=settings.promotion_min_conversations,
        )


def is_prominent(
    confidence: float,
    access_count: int,
    conversations: int,
    thresholds: PromotionThresholds = PromotionThresholds(),
) -> bool:
    """Every threshold is inclusive: a fact exactly at all three is promoted."""
    return (
        confidence >= thresholds.min_confidence
        and access_count >= thresholds.min_access_count
        and conversations >= thresholds.min_conversations
    )
