"""LoCoMo evidence recall on the development split (../shared/bench/locomo_dev.json).

    .venv/bin/python bench/locomo.py [--data PATH] [--recipes hybrid vector keyword]

Follows the scoring protocol in ../shared/bench/README.md: each conversation is imported on
its own (one memory per turn, verbatim, ``occurred_at`` = the session's date, the turn's
``dia_id`` recorded in metadata; turns that shared an image carry its caption), then every
category 1-4 question with a resolvable evidence id is asked of its own conversation. A gold
``dia_id`` is covered when a retrieved memory came from it; recall@k = covered / resolvable
gold ids of the question. Reports mean recall@k per category and overall, the share of
questions with all evidence covered, and query latency (query embedding included), for each
recipe in the same run. The data is read in place, never copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from memvault import AsyncMemory, Settings

from _stats import summary_ms

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
KS = (1, 3, 5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def session_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    conversation = sample["conversation"]
    out = []
    for key in sorted(
        (k for k in conversation if re.fullmatch(r"session_\d+", k)),
        key=lambda k: int(k.split("_")[1]),
    ):
        when = session_date(conversation[f"{key}_date_time"])
        for index, turn in enumerate(conversation[key]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append(
                {
                    "content": text,
                    "occurred_at": when,
                    "dia_id": turn["dia_id"],
                    "speaker": turn["speaker"],
                    "session_id": key,
                    "turn": index,
                }
            )
    return out


def evidence_ids(raw: list[Any], known: set[str]) -> list[str]:
    """The README's normalisation: split lists, repair two malformed ids, drop the rest."""
    ids = []
    for item in raw:
        for part in re.split(r"[;\s]+", str(item)):
            part = part.strip()
            if part == "D:11:26":
                part = "D11:26"
            match = re.fullmatch(r"D(\d+):0*(\d+)", part)
            if match:
                part = f"D{match.group(1)}:{match.group(2)}"
            if part in known:
                ids.append(part)
    return sorted(set(ids))


async def import_conversation(
    memory: AsyncMemory, user: str, conversation: list[dict[str, Any]], *, infer: bool = False
) -> set[str]:
    items = [
        {
            "content": t["content"],
            "user_id": user,
            "occurred_at": t["occurred_at"],
            # What add_messages records, plus the dataset's turn id.
            "metadata": {
                "dia_id": t["dia_id"],
                "speaker": t["speaker"],
                "session_id": t["session_id"],
                "turn": t["turn"],
            },
            "infer": infer,
            "pii_policy": "allow",
        }
        for t in conversation
    ]
    for start in range(0, len(items), 100):
        await memory.add_many(items[start : start + 100])
    return {str(i["metadata"]["dia_id"]) for i in items}


async def run(data: Path, recipes: list[str], backend: str = "auto") -> dict[str, float]:
    """Prints each recipe's table; returns each recipe's overall R@10."""
    samples = json.loads(data.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(
                data_dir=Path(tmp) / "data",
                run_worker=False,
                embedding_cache_ttl_s=0,
                embedding_backend=backend,
            )
        )
        questions = []
        for sample in samples:
            t0 = time.perf_counter()
            conversation = turns(sample)
            known = await import_conversation(memory, sample["sample_id"], conversation)
            # Questions are asked after the conversation: "last week" means before its end.
            asked_at = max(t["occurred_at"] for t in conversation)
            print(
                f"  imported {sample['sample_id']}: {len(known)} turns in "
                f"{time.perf_counter() - t0:.0f}s",
                flush=True,
            )
            for qa in sample["qa"]:
                gold = evidence_ids(qa.get("evidence", []), known)
                if qa["category"] in CATEGORIES and gold:
                    questions.append(
                        (sample["sample_id"], qa["question"], qa["category"], gold, asked_at)
                    )
        # What autovacuum does shortly after a bulk import; without it the first queries on
        # fresh tables are planned blind.
        async with memory._backend.ddl_engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(sa.text("ANALYZE"))
        print(f"{len(questions)} questions (categories 1-4 with resolvable evidence)")
        recall_at_10 = {recipe: await score(memory, questions, recipe) for recipe in recipes}
        await memory.close()
    return recall_at_10


async def score(
    memory: AsyncMemory, questions: list[tuple[str, str, int, list[str], datetime]], recipe: str
) -> float:
    recalls: dict[int, dict[int, list[float]]] = {c: {k: [] for k in KS} for c in CATEGORIES}
    complete: dict[int, list[bool]] = {k: [] for k in KS}
    latencies: list[float] = []
    for user, question, category, gold, asked_at in questions:
        start = time.perf_counter()
        # Each question is scored on its own: earlier questions must not reinforce answers.
        result = await memory.search(
            question,
            user_id=user,
            limit=max(KS),
            recipe=recipe,
            reference_time=asked_at,
            track_access=False,
        )
        latencies.append(time.perf_counter() - start)
        found = [str(h.metadata.get("dia_id")) for h in result.results]
        for k in KS:
            covered = len(set(found[:k]) & set(gold))
            recalls[category][k].append(covered / len(gold))
            complete[k].append(covered == len(gold))
    print(f"\nrecipe `{recipe}`: evidence recall@k (mean over questions)")
    print("| category | n | " + " | ".join(f"R@{k}" for k in KS) + " |")
    print("|---|---|" + "---|" * len(KS))
    for category, name in CATEGORIES.items():
        n = len(recalls[category][1])
        cells = " | ".join(f"{sum(v) / n:.3f}" for v in recalls[category].values())
        print(f"| {category} {name} | {n} | {cells} |")
    everything = {k: [r for c in CATEGORIES for r in recalls[c][k]] for k in KS}
    total = len(everything[1])
    print(
        f"| **all** | {total} | "
        + " | ".join(f"**{sum(v) / total:.3f}**" for v in everything.values())
        + " |"
    )
    print(
        "| all evidence found | | "
        + " | ".join(f"{sum(v) / len(v):.3f}" for v in complete.values())
        + " |"
    )
    lat = summary_ms(latencies)
    print(f"query latency: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms", flush=True)
    return sum(everything[10]) / total


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--recipes", nargs="+", default=["hybrid", "vector", "keyword"])
    parser.add_argument("--backend", choices=["auto", "onnx", "torch"], default="auto")
    args = parser.parse_args()
    if not args.data.exists():
        parser.error(f"{args.data} not found: the LoCoMo dev split lives in ../shared/bench")
    asyncio.run(run(args.data, args.recipes, args.backend))
