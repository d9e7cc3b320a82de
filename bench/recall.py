"""Recall on four shapes of memory in one run: conversations, preferences, personal facts,
and a personal assistant's sessions over months.

    .venv/bin/python bench/recall.py [--sets locomo prefeval facts longmemeval] \
        [--recipes hybrid vector keyword] [--sample N]

- **locomo**: ../shared/bench/locomo_dev.json, the protocol of bench/locomo.py (one memory per
  turn, evidence recall of category 1-4 questions asked of their own conversation).
- **prefeval**: ../shared/bench/prefeval_dev.json, the protocol of ../shared/bench/README.md:
  all 505 preferences stored verbatim as one user's memories (``infer=False``: no dedup or
  enrichment that could merge them), each ``question`` searched in that store, a hit when the
  item's own preference is in the top k.
- **facts**: bench/data/personal_facts.json, written by hand before any recall ran on it:
  eight users' stores of 40 short facts about four people each; every question is asked of
  its own user's store; recall@k = the share of the question's answer facts in the top k.
- **longmemeval**: ../shared/bench/longmemeval_dev.json, the protocol of
  ../shared/bench/README.md: every user turn of every session (each session once) stored
  verbatim as one user's memory, ``occurred_at`` = its session's date; each non-abstention
  question with a gold user turn searched over the whole pool with ``reference_time`` = its
  ``question_date``. Besides R@k (the share of gold turns in the top k) the table gives
  any@10 (a gold turn in the top 10) and all@10 (every gold turn in the top 10).

``--track-access off on`` runs each recipe without and then with access tracking (the API's
default), so the second shows whether reads moved later rankings; ``--halves`` reports each
set's even and odd questions apart (a change is kept only if it holds on both).

``--sample N`` keeps every Nth question of each set (the stores stay whole): a quick figure
for trying a change, not one to report.

Every set is imported once into one fresh store; every recipe then runs the same questions
(without access tracking unless asked). Prints R@1/5/10 per set and
recipe, and query latency (query embedding included) per set.

``--infer`` imports every item with ``infer=True`` (dedup, enrichment and the offline graph
extractor, so facts exist); ``--fact-keys off on`` then runs each recipe without and with
facts as extra keys (a fact the query matches lifts the memory it was read from), on the
same store in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo import CATEGORIES, evidence_ids, import_conversation, turns
from memvault import AsyncMemory, Settings

from _stats import summary_ms

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
FACTS = Path(__file__).resolve().parent / "data" / "personal_facts.json"
KS = (1, 5, 10)


@dataclass(frozen=True)
class Question:
    user: str
    text: str
    gold: frozenset[str]
    asked_at: datetime | None = None


async def _add_all(memory: AsyncMemory, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 100):
        await memory.add_many(items[start : start + 100])


def _verbatim(content: str, user: str, key: str, infer: bool) -> dict[str, Any]:
    return {
        "content": content,
        "user_id": user,
        "metadata": {"key": key},
        "infer": infer,
        "pii_policy": "allow",
    }


async def load_locomo(memory: AsyncMemory, path: Path, infer: bool) -> list[Question]:
    questions = []
    for sample in json.loads(path.read_text()):
        conversation = turns(sample)
        user = f"locomo-{sample['sample_id']}"
        known = await import_conversation(memory, user, conversation, infer=infer)
        asked_at = max(t["occurred_at"] for t in conversation)
        for qa in sample["qa"]:
            gold = evidence_ids(qa.get("evidence", []), known)
            if qa["category"] in CATEGORIES and gold:
                questions.append(Question(user, qa["question"], frozenset(gold), asked_at))
    return questions


async def load_prefeval(memory: AsyncMemory, path: Path, infer: bool) -> list[Question]:
    items = json.loads(path.read_text())
    user = "prefeval"
    await _add_all(memory, [_verbatim(i["preference"], user, str(i["id"]), infer) for i in items])
    return [Question(user, i["question"], frozenset({str(i["id"])})) for i in items]


async def load_facts(memory: AsyncMemory, path: Path, infer: bool) -> list[Question]:
    data = json.loads(path.read_text())
    await _add_all(
        memory,
        [_verbatim(f["text"], f"facts-{f['user_id']}", f["id"], infer) for f in data["facts"]],
    )
    return [
        Question(f"facts-{q['user_id']}", q["question"], frozenset(q["answers"]))
        for q in data["questions"]
    ]


def lme_date(text: str) -> datetime:
    """LongMemEval's ``"2023/05/28 (Sun) 19:47"`` as UTC."""
    return datetime.strptime(text.split(" (")[0] + text[-6:], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def lme_pool(data: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Question]]:
    """The pooled store's memories (every user turn of every session, each session once) and
    the scored questions (non-abstention, with a gold user turn)."""
    user = "longmemeval"
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    questions = []
    for entry in data:
        gold: set[str] = set()
        sessions = zip(
            entry["haystack_session_ids"],
            entry["haystack_dates"],
            entry["haystack_sessions"],
            strict=True,
        )
        for session_id, date, turns_ in sessions:
            for n, turn in enumerate(turns_):
                if turn["role"] != "user":
                    continue
                key = f"{session_id}#{n}"
                if turn.get("has_answer"):
                    gold.add(key)
                if session_id not in seen:
                    items.append(
                        {
                            "content": turn["content"],
                            "user_id": user,
                            "occurred_at": lme_date(date),
                            "metadata": {"key": key},
                            "infer": False,
                            "pii_policy": "allow",
                        }
                    )
            seen.add(session_id)
        if gold and not entry["question_id"].endswith("_abs"):
            asked = lme_date(entry["question_date"])
            questions.append(Question(user, entry["question"], frozenset(gold), asked))
    return items, questions


async def load_longmemeval(memory: AsyncMemory, path: Path, infer: bool) -> list[Question]:
    items, questions = lme_pool(json.loads(path.read_text()))
    for item in items:
        item["infer"] = infer
    await _add_all(memory, items)
    return questions


LOADERS = {
    "locomo": (load_locomo, SHARED / "locomo_dev.json"),
    "prefeval": (load_prefeval, SHARED / "prefeval_dev.json"),
    "facts": (load_facts, FACTS),
    "longmemeval": (load_longmemeval, SHARED / "longmemeval_dev.json"),
}


def found_keys(hits: Iterable[Any]) -> list[str]:
    return [str(h.metadata.get("dia_id") or h.metadata.get("key")) for h in hits]


@dataclass
class Scores:
    """R@k (the share of a question's gold found in the top k, averaged), and at 10 the share
    of questions with any / all of their gold found."""

    recall: dict[int, float]
    any10: float
    all10: float
    latencies: list[float]


async def score(
    memory: AsyncMemory,
    questions: list[Question],
    recipe: str,
    fact_keys: bool = False,
    track_access: bool = False,
) -> Scores:
    recall: dict[int, list[float]] = {k: [] for k in KS}
    hit_any: list[bool] = []
    hit_all: list[bool] = []
    latencies: list[float] = []
    # Only asked for when on, so the bench also runs code from before fact keys existed.
    options: dict[str, Any] = {"fact_keys": True} if fact_keys else {}
    for q in questions:
        start = time.perf_counter()
        result = await memory.search(
            q.text,
            user_id=q.user,
            limit=max(KS),
            recipe=recipe,
            reference_time=q.asked_at,
            track_access=track_access,
            **options,
        )
        latencies.append(time.perf_counter() - start)
        found = found_keys(result.results)
        for k in KS:
            recall[k].append(len(set(found[:k]) & q.gold) / len(q.gold))
        top = set(found[: max(KS)]) & q.gold
        hit_any.append(bool(top))
        hit_all.append(top == q.gold)
    return Scores(
        {k: sum(v) / len(v) for k, v in recall.items()},
        sum(hit_any) / len(hit_any),
        sum(hit_all) / len(hit_all),
        latencies,
    )


def halves(questions: list[Question], split: bool) -> dict[str, list[Question]]:
    """The questions whole, or in two halves by a fixed rule (even and odd places in the set's
    own order), so a change is seen to hold on both."""
    if not split:
        return {"all": questions}
    return {"even": questions[::2], "odd": questions[1::2]}


async def run(
    sets: list[str],
    recipes: list[str],
    infer: bool,
    fact_keys: list[str],
    sample: int = 1,
    tracking: tuple[str, ...] = ("off",),
    split: bool = False,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(data_dir=Path(tmp) / "data", run_worker=False, embedding_cache_ttl_s=0)
        )
        questions: dict[str, list[Question]] = {}
        for name in sets:
            load, path = LOADERS[name]
            t0 = time.perf_counter()
            questions[name] = (await load(memory, path, infer))[::sample]
            print(
                f"  {name}: {len(questions[name])} questions, imported in "
                f"{time.perf_counter() - t0:.0f}s",
                flush=True,
            )
        print(
            "\n| set | half | recipe | fact keys | tracking | n | R@1 | R@5 | R@10 | any@10 "
            "| all@10 | p50 ms | p95 ms |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name in sets:
            for half, asked in halves(questions[name], split).items():
                for recipe, keys, track in itertools.product(recipes, fact_keys, tracking):
                    got = await score(
                        memory, asked, recipe, fact_keys=keys == "on", track_access=track == "on"
                    )
                    lat = summary_ms(got.latencies)
                    cells = " | ".join(f"{got.recall[k]:.3f}" for k in KS)
                    print(
                        f"| {name} | {half} | {recipe} | {keys} | {track} | {len(asked)} | "
                        f"{cells} | {got.any10:.3f} | {got.all10:.3f} | "
                        f"{lat['p50']:.1f} | {lat['p95']:.1f} |",
                        flush=True,
                    )
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--recipes", nargs="+", default=["hybrid", "vector", "keyword"])
    parser.add_argument(
        "--infer", action="store_true", help="import with infer=True (facts are extracted)"
    )
    parser.add_argument("--fact-keys", nargs="+", default=["off"], choices=["off", "on"])
    parser.add_argument("--sample", type=int, default=1, help="keep every Nth question")
    parser.add_argument(
        "--track-access",
        nargs="+",
        default=["off"],
        choices=["off", "on"],
        help="on: every search counts as an access, as the API's default does (each setting "
        "runs after the one before it on the same store, so 'off on' shows whether reads move "
        "later rankings)",
    )
    parser.add_argument(
        "--halves", action="store_true", help="report each set's even and odd questions apart"
    )
    args = parser.parse_args()
    for name in args.sets:
        if not LOADERS[name][1].exists():
            parser.error(f"{LOADERS[name][1]} not found")
    asyncio.run(
        run(
            args.sets,
            args.recipes,
            args.infer,
            args.fact_keys,
            args.sample,
            tuple(args.track_access),
            args.halves,
        )
    )
