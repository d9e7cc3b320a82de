"""How fresh something is: one half-life decay, for search's ranking and remember()'s bundle."""

from __future__ import annotations

from datetime import datetime


def recency(at: datetime | None, now: datetime, half_life_days: float) -> float:
    """1.0 at ``now``, halving every ``half_life_days`` before it; a time after ``now`` counts
    as now, and no time at all as 0."""
    if at is None:
        return 0.0
    age_days = max((now - at).total_seconds(), 0.0) / 86_400
    return float(0.5 ** (age_days / half_life_days))
