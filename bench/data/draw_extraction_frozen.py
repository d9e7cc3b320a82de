"""Draws the utterances of ``extraction_frozen.jsonl`` from the recall dev files, by a fixed
rule that does not look at what the extractor handles (the labels were then written by hand).

    .venv/bin/python bench/data/draw_extraction_frozen.py > /tmp/frozen_unlabelled.jsonl

- LongMemEval (``../shared/bench/longmemeval_dev.json``): every session once, in the file's
  order; its user turns of at most 200 characters, every 6th of them (the 1st, 7th, 13th …).
  The reference date is the session's date.
- LoCoMo (``../shared/bench/locomo_dev.json``): every turn of every session, conversation by
  conversation and session by session in number order, of at most 200 characters; every 16th
  (1st, 17th …). The speaker is the memory's owner (``speaker`` null), as a personal
  assistant would store a person's own words. The reference date is the session's date.
- Assistant turns (LongMemEval): every 15th assistant turn of at most 1,500 characters, in the
  same order. They must yield no fact (the speaker is ``assistant``).

Only the dev files are read; the held-out halves are never opened.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared" / "bench"
if not SHARED.exists():
    SHARED = Path("/work/shared/bench")


def _lme_date(text: str) -> str:
    return datetime.strptime(text.split(" ")[0], "%Y/%m/%d").date().isoformat()


def _locomo_date(text: str) -> str:
    return datetime.strptime(text.split(" on ")[1], "%d %B, %Y").date().isoformat()


def lme_turns() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """LongMemEval's user and assistant turns (source, date, text), every session once, in
    the file's order, within the length limits."""
    lme = json.loads((SHARED / "longmemeval_dev.json").read_text())
    seen: set[str] = set()
    users: list[tuple[str, str, str]] = []
    bots: list[tuple[str, str, str]] = []
    for entry in lme:
        sessions = zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        )
        for sid, date, turns in sessions:
            if sid in seen:
                continue
            seen.add(sid)
            for i, turn in enumerate(turns):
                text = turn["content"].strip()
                if turn["role"] == "user" and len(text) <= 200:
                    users.append((f"{sid}#{i}", _lme_date(date), text))
                elif turn["role"] == "assistant" and len(text) <= 1500:
                    bots.append((f"{sid}#{i}", _lme_date(date), text))
    return users, bots


def locomo_turns() -> list[tuple[str, str, str]]:
    """LoCoMo's turns (source, date, text) of at most 200 characters, conversation by
    conversation and session by session in number order."""
    locomo = json.loads((SHARED / "locomo_dev.json").read_text())
    turns_: list[tuple[str, str, str]] = []
    for conv in locomo:
        talk = conv["conversation"]
        numbers = sorted(
            int(m[1]) for k in talk if (m := re.fullmatch(r"session_(\d+)", k)) and talk[k]
        )
        for n in numbers:
            date = _locomo_date(talk[f"session_{n}_date_time"])
            for turn in talk[f"session_{n}"]:
                text = turn["text"].strip()
                if len(text) <= 200:
                    turns_.append((f"{conv['sample_id']}:{turn['dia_id']}", date, text))
    return turns_


def draw() -> list[dict[str, object]]:
    users, bots = lme_turns()
    rows = [_row("lme-user", source, date, None, text) for source, date, text in users[::6]]
    rows += [
        _row("lme-assistant", source, date, "assistant", text) for source, date, text in bots[::15]
    ]
    rows += [
        _row("locomo-user", source, date, None, text) for source, date, text in locomo_turns()[::16]
    ]
    return rows


def _row(
    category: str, source: str, date: str, speaker: str | None, text: str
) -> dict[str, object]:
    return {
        "id": f"{category}-{source}",
        "category": category,
        "reference": date,
        "speaker": speaker,
        "text": text,
        "facts": [],
    }


if __name__ == "__main__":
    for row in draw():
        print(json.dumps(row, ensure_ascii=False))
