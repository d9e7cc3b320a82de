"""Charts drawn on the server as plain SVG geometry: no script, no inline style, readable
without JavaScript, and a table of the same numbers beside each for screen readers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
