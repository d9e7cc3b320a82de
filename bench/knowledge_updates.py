"""Knowledge updates: does the store know what is true now, what was true then, and what it
believed then, when facts change over a conversation? (bench/data/knowledge_updates.json)

    .venv/bin/python bench/knowledge_updates.py [--conditions structured offline llm]
    .venv/bin/python bench/knowledge_updates.py --extract-only

Three conditions, each into its own fresh store, the turns in the order they were said:

- **structured**: each turn's triple through ``memory.add_fact`` (no extraction);
- **offline**: each turn's text through ``memory.add(..., infer=True)`` with no LLM, so the
  offline extractor reads it;
- **llm**: the same with an OpenAI-compatible LLM configured: a local scripted server
  (``_scripted_llm``) answering as a good model would, from the turn's own triple.

Then every question through ``memory.facts``: *current* (the top fact now), *valid_at* (the
top fact true in the world at T) and *known_at* (the top fact the store held at T). The store
records when it learns a fact by its own clock, so a question's T (data set time) is mapped
to the wall-clock moment right after the last turn said by T was stored.

``--extract-only`` needs no store: it runs the extractor alone on every turn, offline and with
the scripted LLM, and scores the claim ((subject, predicate, value) among its facts), the
``corrects`` flag, and the start date (within 20 days of the truth; an undated claim counts as
starting when it was said, as the store takes it; a correction's date is not scored, as it
restates a fact whose start the store already holds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _scripted_llm import extraction_answer, scripted_llm
from memvault import AsyncMemory, Settings
from memvault.graph.claims import SELF, Extraction, FactClaim, canonical_predicate
from memvault.graph.extract import extract
from memvault.graph.extraction_prompt import GRAPH_EXTRACT
from memvault.llm import OpenAIChat

DATA = Path(__file__).resolve().parent / "data" / "knowledge_updates.json"
DATE_SLACK = timedelta(days=20)
QUESTION_KINDS = ("current", "valid_at", "known_at")


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def same(a: str | None, b: str | None) -> bool:
    def norm(x: str | None) -> str:
        return " ".join((x or "").casefold().removeprefix("the ").split())

    return bool(a) and norm(a) == norm(b)


def answers(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the scripted LLM says to each turn's extraction prompt (the same words said by
    two speakers are two prompts)."""
    object_type = {s["id"]: s["object_type"] for s in data["subjects"]}
    by_text = {t["text"]: extraction_answer(t, object_type[t["subject"]]) for t in data["turns"]}
    return by_text | {
        GRAPH_EXTRACT.render(
            text=t["text"],
            speaker=t["speaker"] or f"the user ({SELF})",
            reference_time=moment(t["timestamp"]).isoformat(),
        ): extraction_answer(t, object_type[t["subject"]])
        for t in data["turns"]
    }


# --- extract-only ----------------------------------------------------------------------------


@dataclass
class Tally:
    hits: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))

    def add(self, name: str, ok: bool) -> None:
        self.hits[name].append(ok)

    def share(self, name: str) -> str:
        values = self.hits.get(name, [])
        return f"{sum(values) / len(values):.3f} ({sum(values)}/{len(values)})" if values else "-"


def claim_of(extraction: Extraction, triple: dict[str, Any]) -> FactClaim | None:
    for fact in extraction.facts:
        if (
            same(fact.subject, triple["subject"])
            and canonical_predicate(fact.predicate) == triple["predicate"]
            and same(fact.object or fact.value, triple["object"] or triple["value"])
        ):
            return fact
    return None


def wrong_value(fact: FactClaim, triple: dict[str, Any]) -> bool:
    """A claim on the turn's subject and predicate with another value: worse than none, as
    the store would take it for an update."""
    return (
        same(fact.subject, triple["subject"])
        and canonical_predicate(fact.predicate) == triple["predicate"]
        and not same(fact.object or fact.value, triple["object"] or triple["value"])
    )


def score_turn(tally: Tally, turn: dict[str, Any], extraction: Extraction) -> None:
    fact = claim_of(extraction, turn["triple"])
    said = moment(turn["timestamp"])
    truth = moment(turn["triple"]["valid_from"])
    flagged = any(f.corrects for f in extraction.facts)
    tally.add("claim", fact is not None)
    tally.add(f"claim: {turn['phrasing']} phrasing", fact is not None)
    tally.add(f"claim: date {turn['date_form']}", fact is not None)
    tally.add("corrects flag right", flagged == turn["corrects"])
    if turn["corrects"]:
        tally.add("claim: correction turns", fact is not None)
        tally.add("corrects: recall", flagged)
    else:
        tally.add("corrects: no false flag", not flagged)
    dated = fact is not None and (
        turn["corrects"] or abs((fact.valid_from or said) - truth) <= DATE_SLACK
    )
    if fact is not None and not turn["corrects"]:
        tally.add("valid_from within 20 d (claims found, not corrections)", dated)
    tally.add("claim + flag + date", dated and flagged == turn["corrects"])
    tally.add(
        "a wrong value claimed", any(wrong_value(f, turn["triple"]) for f in extraction.facts)
    )


ROWS = (
    "claim",
    "claim: canonical phrasing",
    "claim: varied phrasing",
    "claim: date none",
    "claim: date relative",
    "claim: date absolute",
    "claim: correction turns",
    "corrects: recall",
    "corrects: no false flag",
    "corrects flag right",
    "valid_from within 20 d (claims found, not corrections)",
    "claim + flag + date",
    "a wrong value claimed",
)


async def extract_only(data: dict[str, Any]) -> None:
    with scripted_llm(answers(data)) as url:
        llm = OpenAIChat(base_url=url, model="scripted", api_key=None, timeout_s=10, attempts=1)
        tallies = {"offline": Tally(), "scripted LLM": Tally()}
        latency: dict[str, list[float]] = {"offline": [], "scripted LLM": []}
        for turn in data["turns"]:
            for name, model in (("offline", None), ("scripted LLM", llm)):
                started = time.perf_counter()
                extraction = await extract(
                    turn["text"],
                    speaker=turn["speaker"],
                    reference_time=moment(turn["timestamp"]),
                    llm=model,
                )
                latency[name].append(time.perf_counter() - started)
                if model is not None and not extraction.extractor.startswith("llm:"):
                    raise SystemExit(f"the scripted LLM failed: {extraction.extractor}")
                score_turn(tallies[name], turn, extraction)
        await llm.aclose()
    print(f"\nExtraction alone, {len(data['turns'])} turns ({DATA.name})")
    print("| measure | offline | scripted LLM |")
    print("|---|---|---|")
    for measure in ROWS:
        print(f"| {measure} | {tallies['offline'].share(measure)} | "
              f"{tallies['scripted LLM'].share(measure)} |")  # fmt: skip
    medians = {k: statistics.median(v) * 1000 for k, v in latency.items()}
    print(f"| median ms per turn | {medians['offline']:.2f} | {medians['scripted LLM']:.2f} |")


# --- through the store -----------------------------------------------------------------------


def top_value(records: list[Any]) -> str | None:
    return (records[0].object or records[0].value) if records else None


async def ingest(
    memory: AsyncMemory, condition: str, data: dict[str, Any]
) -> Callable[[datetime], datetime]:
    """Store every turn in order; returns the map from data set time to store time."""
    user = data["user_id"]
    said: list[datetime] = []
    stored: list[datetime] = []
    for turn in data["turns"]:
        if condition == "structured":
            triple = turn["triple"]
            await memory.add_fact(
                triple["subject"],
                triple["predicate"],
                user_id=user,
                object=triple["object"],
                value=triple["value"],
                valid_from=moment(triple["valid_from"]),
                source=turn["id"],
            )
        else:
            await memory.add(
                turn["text"],
                user_id=user,
                infer=True,
                wait=True,
                occurred_at=moment(turn["timestamp"]),
                metadata={"speaker": turn["speaker"]} if turn["speaker"] else {},
            )
        said.append(moment(turn["timestamp"]))
        stored.append(datetime.now(UTC))
        await asyncio.sleep(0.002)  # two turns never share a store-clock moment

    def store_time(at: datetime) -> datetime:
        index = max((i for i, t in enumerate(said) if t <= at), default=-1)
        return stored[index] if index >= 0 else stored[0] - timedelta(seconds=1)

    return store_time


async def ask(
    memory: AsyncMemory, data: dict[str, Any], store_time: Callable[[datetime], datetime]
) -> dict[str, list[bool]]:
    right: dict[str, list[bool]] = defaultdict(list)
    for q in data["questions"]:
        query: dict[str, Any] = {"user_id": data["user_id"], "entity": q["entity"]}
        query["predicate"] = q["predicate"]
        if q["kind"] == "valid_at":
            query["valid_at"] = moment(q["at"])
        elif q["kind"] == "known_at":
            query["known_at"] = store_time(moment(q["at"]))
        right[q["kind"]].append(same(top_value(await memory.facts(**query)), q["answer"]))
    return right


async def through_store(
    condition: str, data: dict[str, Any], url: str, tmp: Path
) -> dict[str, Any]:
    settings: dict[str, Any] = {"data_dir": tmp / condition, "run_worker": True}
    if condition == "llm":
        settings |= {"llm_provider": "openai", "llm_model": "scripted", "llm_base_url": url}
    memory = await AsyncMemory.open(Settings(**settings))
    try:
        started = time.perf_counter()
        store_time = await ingest(memory, condition, data)
        elapsed = time.perf_counter() - started
        right = await ask(memory, data, store_time)
    finally:
        await memory.close()
    return {"right": right, "ingest_s": elapsed}


def print_store_table(results: dict[str, dict[str, Any]], turns: int) -> None:
    print(f"\nKnowledge updates through the store ({DATA.name}, {turns} turns)")
    print("| condition | current | valid_at | known_at | ingest s |")
    print("|---|---|---|---|---|")
    for condition, result in results.items():
        cells = [_share(result["right"][kind]) for kind in QUESTION_KINDS]
        print(f"| {condition} | {' | '.join(cells)} | {result['ingest_s']:.0f} |")


def _share(values: Iterable[bool]) -> str:
    values = list(values)
    return f"{sum(values) / len(values):.3f} ({sum(values)}/{len(values)})" if values else "-"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--extract-only", action="store_true")
    parser.add_argument(
        "--conditions", nargs="+", default=["structured", "offline", "llm"],
        choices=["structured", "offline", "llm"],
    )  # fmt: skip
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    if args.extract_only:
        await extract_only(data)
        return
    if not hasattr(AsyncMemory, "add_fact"):
        raise SystemExit(
            "This build has no graph store (AsyncMemory.add_fact); try --extract-only."
        )
    with scripted_llm(answers(data)) as url, tempfile.TemporaryDirectory() as tmp:
        results = {c: await through_store(c, data, url, Path(tmp)) for c in args.conditions}
    print_store_table(results, len(data["turns"]))


if __name__ == "__main__":
    asyncio.run(main())
