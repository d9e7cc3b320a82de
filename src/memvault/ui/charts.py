"""Charts drawn on the server as plain SVG geometry: no script, no inline style, readable
without JavaScript, and a table of the same numbers beside each for screen readers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

WIDTH, HEIGHT = 280, 90


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    x: float
    y: float
    width: float
    height: float


def bars(series: Sequence[tuple[str, int]]) -> list[Bar]:
    if not series:
        return []
    top = max(v for _, v in series) or 1
    step = WIDTH / len(series)
    drawn = []
    for i, (label, value) in enumerate(series):
        height = round(value / top * (HEIGHT - 12), 1)
        drawn.append(Bar(label, value, round(i * step + 1, 1), HEIGHT - height, step - 2, height))
    return drawn


def per_day(moments: Iterable[datetime], *, days: int = 14, today: date | None = None) -> list[Bar]:
    """How many things appeared on each of the last ``days`` days (UTC), oldest first."""
    end = today or datetime.now(UTC).date()
    counted = Counter(m.astimezone(UTC).date() for m in moments)
    span = [end - timedelta(days=n) for n in range(days - 1, -1, -1)]
    return bars([(d.isoformat(), counted.get(d, 0)) for d in span])
