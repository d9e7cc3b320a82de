"""Recall never goes backwards: the default recipe's R@10 on fixed small subsets of the four
development sets (conversations, preferences, personal facts, an assistant's sessions over
months), through the library with the real embedding model, against floors kept in
tests/recall_floors.json (main's figure on the subset less a small tie band).

The subsets follow the protocols of bench/recall.py and ../shared/bench/README.md on less
data: the first ten sessions of one LoCoMo conversation, every fourth PrefEval question over
all preferences, every second personal-facts question, every sixth LongMemEval entry's
sessions pooled. A change that raises a
figure raises its floor in the same commit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault import AsyncMemory

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "bench"
FACTS = ROOT / "bench" / "data" / "personal_facts.json"
FLOORS = json.loads((Path(__file__).parent / "recall_floors.json").read_text())
K = 10


@dataclass(frozen=True)
class Question:
    user: str
    text: str
    gold: frozenset[str]
    asked_at: datetime | None = None


def _item(content: str, user: str, key: str, at: datetime | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "content": content,
        "user_id": user,
        "metadata": {"key": key},
        "infer": False,
        "pii_policy": "allow",
    }
    if at is not None:
        item["occurred_at"] = at
    return item


def _locomo(data: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Question]]:
    sample = next(s for s in data if s["sample_id"] == "conv-30")
    conversation = sample["conversation"]
    user = "locomo"
    items = []
    sessions = sorted(
        (k for k in conversation if re.fullmatch(r"session_\d+", k)),
        key=lambda k: int(k.split("_")[1]),
    )
    for key in sessions[:10]:
        when = datetime.strptime(
            conversation[f"{key}_date_time"].strip(), "%I:%M %p on %d %B, %Y"
        ).replace(tzinfo=UTC)
        for turn in conversation[key]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            items.append(_item(text, user, turn["dia_id"], when))
    known = {i["metadata"]["key"] for i in items}
    asked_at = max(i["occurred_at"] for i in items)
    questions = []
    for qa in sample["qa"]:
        ids = {
            part for raw in qa.get("evidence", []) for part in re.split(r"[;\s]+", str(raw)) if part
        }
        gold = frozenset(ids & known)
        if qa["category"] in (1, 2, 3, 4) and gold:
            questions.append(Question(user, qa["question"], gold, asked_at))
    return items, questions


def _prefeval(data: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Question]]:
    items = [_item(i["preference"], "prefeval", str(i["id"])) for i in data]
    questions = [Question("prefeval", i["question"], frozenset({str(i["id"])})) for i in data]
    return items, questions[::4]


def _facts(data: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Question]]:
    items = [_item(f["text"], f"facts-{f['user_id']}", f["id"]) for f in data["facts"]]
    questions = [
        Question(f"facts-{q['user_id']}", q["question"], frozenset(q["answers"]))
        for q in data["questions"]
    ]
    return items, questions[::2]


def _lme_date(text: str) -> datetime:
    return datetime.strptime(text.split(" (")[0] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _longmemeval(data: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Question]]:
    user = "longmemeval"
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    questions = []
    for entry in data[::6]:
        gold: set[str] = set()
        sessions = zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        )
        for session_id, date, turns in sessions:
            for n, turn in enumerate(turns):
                if turn["role"] != "user":
                    continue
                key = f"{session_id}#{n}"
                if turn.get("has_answer"):
                    gold.add(key)
                if session_id not in seen:
                    items.append(_item(turn["content"], user, key, _lme_date(date)))
            seen.add(session_id)
        if gold and not entry["question_id"].endswith("_abs"):
            asked_at = _lme_date(entry["question_date"])
            questions.append(Question(user, entry["question"], frozenset(gold), asked_at))
    return items, questions


Subset = tuple[list[dict[str, Any]], list[Question]]
SETS: dict[str, tuple[Path, Callable[[Any], Subset]]] = {
    "locomo": (SHARED / "locomo_dev.json", _locomo),
    "prefeval": (SHARED / "prefeval_dev.json", _prefeval),
    "facts": (FACTS, _facts),
    "longmemeval": (SHARED / "longmemeval_dev.json", _longmemeval),
}


async def _recall_at_10(memory: AsyncMemory, questions: list[Question]) -> float:
    total = 0.0
    for q in questions:
        found = await memory.search(
            q.text, user_id=q.user, limit=K, reference_time=q.asked_at, track_access=False
        )
        keys = {str(hit.metadata["key"]) for hit in found.results}
        total += len(keys & q.gold) / len(q.gold)
    return total / len(questions)


@pytest.mark.parametrize("name", list(SETS))
async def test_default_recall_at_10_stays_above_its_floor(memory: AsyncMemory, name: str) -> None:
    path, build = SETS[name]
    if not path.exists():
        pytest.skip(f"{path} is absent: the recall guard needs the development sets there")
    items, questions = build(json.loads(path.read_text()))
    for start in range(0, len(items), 100):
        await memory.add_many(list(items[start : start + 100]))
    got = await _recall_at_10(memory, questions)
    floor = FLOORS[name]["hybrid_r10"]
    assert got >= floor, f"{name}: hybrid R@10 {got:.3f} on {len(questions)} questions < {floor}"
