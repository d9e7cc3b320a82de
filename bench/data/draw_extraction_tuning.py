"""Draws real turns for developing the offline extractor's rules, disjoint from the frozen
set (``draw_extraction_frozen.py``), so the frozen set stays unseen by whoever writes rules.

    .venv/bin/python bench/data/draw_extraction_tuning.py > /tmp/tuning.jsonl
    .venv/bin/python bench/extraction.py --data /tmp/tuning.jsonl --facts

Same sources and the same length limits as the frozen draw, other positions:
LongMemEval user turns at positions 1, 3 and 4 modulo 6 (the frozen set takes 0 modulo 6),
LoCoMo turns at 4, 8 and 12 modulo 16 (the frozen set takes 0 modulo 16). The rows carry no
labels: ``--facts`` prints what the rules extract, for a reader to judge each fact.
"""

from __future__ import annotations

import json

from draw_extraction_frozen import _row, lme_turns, locomo_turns


def draw() -> list[dict[str, object]]:
    users, _ = lme_turns()
    turns = locomo_turns()
    rows = [
        _row("lme-user", source, date, None, text)
        for n, (source, date, text) in enumerate(users)
        if n % 6 in (1, 3, 4)
    ]
    rows += [
        _row("locomo-user", source, date, None, text)
        for n, (source, date, text) in enumerate(turns)
        if n % 16 in (4, 8, 12)
    ]
    return rows


if __name__ == "__main__":
    for row in draw():
        print(json.dumps(row, ensure_ascii=False))
