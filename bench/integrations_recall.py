"""Recall through each framework adapter against memvault's native search, on LoCoMo dev.

    .venv/bin/python bench/integrations_recall.py [--conversations N] [--sample K]

Each path gets its own copy of the same conversations (one memory per turn, the protocol of
bench/locomo.py) under its own user, and the same questions in the same order; R@10 is the
share of a question's evidence turns among the top 10 answers.

- **native**: ``AsyncMemory.add_many`` (text, ``occurred_at``, ``dia_id`` in metadata) and
  ``search(question, reference_time=...)``.
- **langchain**: the native write, read by ``MemvaultRetriever`` (``search_kwargs`` carry the
  same ``reference_time``).
- **mem0**: ``compat.mem0.AsyncMemory.add(text, user_id=..., metadata=..., timestamp=...,
  infer=False)`` and ``search(question, filters=..., top_k=10, threshold=0.0,
  reference_date=...)``.
- **langgraph**: ``MemvaultStore(..., index={"fields": ["text"]})``,
  ``aput(("locomo",), dia_id, {"text": text})`` and ``asearch(("locomo",), query=question,
  limit=10)``: the store searches the item's ``text`` field, but a store item has no
  ``occurred_at`` and a store search no reference time, so this path cannot use the
  conversation's dates.
- **agents-session**: ``MemvaultSession.add_items`` per LoCoMo session (plain user messages),
  read by native search: the turns' times are when they were written.

Reinforcement is off for the run (access counts are flushed every ``reinforce_flush_s``
seconds, so with it on a question's ranking depends on how many earlier questions one flush
had taken in, which differs between paths on a loaded machine): each path's answers are then
a function of what it stored and what it asked, and equal writes give equal answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from locomo import CATEGORIES, evidence_ids, import_conversation, turns
from memvault import AsyncMemory, Settings
from memvault.compat import mem0
from memvault.integrations.langchain import MemvaultRetriever
from memvault.integrations.langgraph import MemvaultStore
from memvault.integrations.openai_agents import MemvaultSession

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
K = 10

Search = Callable[[str, datetime], Awaitable[list[str]]]


async def paths(memory: AsyncMemory, sample: dict[str, Any]) -> dict[str, Search]:
    """Write the conversation once per path; answer each path's search as dia_ids."""
    sid = sample["sample_id"]
    conversation = turns(sample)
    found: dict[str, Search] = {}

    await import_conversation(memory, f"{sid}-native", conversation)

    async def native(question: str, asked_at: datetime) -> list[str]:
        result = await memory.search(
            question, user_id=f"{sid}-native", limit=K, reference_time=asked_at
        )
        return [str(h.metadata.get("dia_id")) for h in result.results]

    found["native"] = native

    await import_conversation(memory, f"{sid}-langchain", conversation)

    async def langchain(question: str, asked_at: datetime) -> list[str]:
        retriever = MemvaultRetriever(
            memory=memory,
            user_id=f"{sid}-langchain",
            k=K,
            search_kwargs={"reference_time": asked_at},
        )
        return [str(d.metadata.get("dia_id")) for d in await retriever.ainvoke(question)]

    found["langchain"] = langchain

    compat = mem0.AsyncMemory(memory)
    for turn in conversation:
        await compat.add(
            turn["content"],
            user_id=f"{sid}-mem0",
            metadata={"dia_id": turn["dia_id"]},
            timestamp=turn["occurred_at"],
            infer=False,
        )

    async def via_mem0(question: str, asked_at: datetime) -> list[str]:
        result = await compat.search(
            question,
            filters={"user_id": f"{sid}-mem0"},
            top_k=K,
            threshold=0.0,
            reference_date=asked_at,
        )
        return [str(r["metadata"]["dia_id"]) for r in result["results"]]

    found["mem0"] = via_mem0

    # dims names LangGraph's own embedder's size; memvault's model is what embeds.
    index: Any = {"dims": 0, "fields": ["text"]}
    store = MemvaultStore(memory, user_id=f"{sid}-langgraph", index=index)
    for turn in conversation:
        await store.aput(("locomo",), turn["dia_id"], {"text": turn["content"]})

    async def langgraph(question: str, asked_at: datetime) -> list[str]:
        return [i.key for i in await store.asearch(("locomo",), query=question, limit=K)]

    found["langgraph"] = langgraph

    by_session: dict[str, list[dict[str, Any]]] = {}
    for turn in conversation:
        by_session.setdefault(turn["session_id"], []).append(turn)
    session = MemvaultSession(f"{sid}-chat", memory, user_id=f"{sid}-session")
    for session_turns in by_session.values():
        await session.add_items([{"role": "user", "content": t["content"]} for t in session_turns])
    # The conversation's turns are numbered from 0 in the order added: the dataset's order.
    dia_of_turn = [t["dia_id"] for session_turns in by_session.values() for t in session_turns]

    async def agents_session(question: str, asked_at: datetime) -> list[str]:
        result = await memory.search(
            question, user_id=f"{sid}-session", limit=K, reference_time=asked_at
        )
        return [dia_of_turn[int(h.metadata["turn"])] for h in result.results]

    found["agents-session"] = agents_session
    return found


async def explaining(memory: AsyncMemory, sample: dict[str, Any]) -> dict[str, Search]:
    """``--explain``: the steps between native and the store / session paths, one at a time."""
    sid = sample["sample_id"]
    conversation = turns(sample)
    found: dict[str, Search] = {}

    undated = [{**t, "occurred_at": None} for t in conversation]
    await import_conversation(memory, f"{sid}-undated", undated)

    async def native_undated(question: str, asked_at: datetime) -> list[str]:
        result = await memory.search(question, user_id=f"{sid}-undated", limit=K)
        return [str(h.metadata.get("dia_id")) for h in result.results]

    found["native, no dates, no reference time"] = native_undated

    # What a session does, natively: the same batches through add_messages.
    order: list[str] = []
    by_session: dict[str, list[dict[str, Any]]] = {}
    for turn in conversation:
        by_session.setdefault(turn["session_id"], []).append(turn)
    for batch in by_session.values():
        await memory.add_messages(
            [{"role": "user", "content": t["content"]} for t in batch],
            user_id=f"{sid}-messages",
            conversation_id=f"{sid}-chat",
        )
        order.extend(t["dia_id"] for t in batch)

    async def messages(question: str, asked_at: datetime) -> list[str]:
        result = await memory.search(
            question, user_id=f"{sid}-messages", limit=K, reference_time=asked_at
        )
        return [order[int(h.metadata["turn"])] for h in result.results]

    found["native add_messages (what a session calls)"] = messages

    store = MemvaultStore(memory, user_id=f"{sid}-store-json")
    for turn in conversation:
        await store.aput(("locomo",), turn["dia_id"], {"text": turn["content"]})

    async def store_json(question: str, asked_at: datetime) -> list[str]:
        return [i.key for i in await store.asearch(("locomo",), query=question, limit=K)]

    found["langgraph, no index config (whole JSON)"] = store_json
    return found


async def run(data: Path, conversations: int, sample: int, explain: bool = False) -> None:
    samples = json.loads(data.read_text())[:conversations]
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(
                data_dir=Path(tmp) / "data",
                run_worker=False,
                embedding_cache_ttl_s=0,
                reinforce_flush_s=1e9,  # never within the run: see the module's docstring
                # Turns verbatim on every path (native and the store ask for it per add; a
                # session's turns follow the store's policy, redact by default).
                pii_policy="allow",
            )
        )
        recalls: dict[str, list[float]] = {}
        done: list[str] = []
        started = time.perf_counter()
        try:
            for s in samples:
                t0 = time.perf_counter()
                searches = await paths(memory, s)
                if explain:
                    searches.update(await explaining(memory, s))
                conversation = turns(s)
                known = {t["dia_id"] for t in conversation}
                asked_at = max(t["occurred_at"] for t in conversation)
                print(f"  {s['sample_id']}: written in {time.perf_counter() - t0:.0f}s", flush=True)
                questions = [
                    (qa["question"], gold)
                    for qa in s["qa"]
                    if qa["category"] in CATEGORIES
                    and (gold := evidence_ids(qa.get("evidence", []), known))
                ][::sample]
                for name, search in searches.items():
                    for question, gold in questions:
                        top = await search(question, asked_at)
                        recalls.setdefault(name, []).append(len(set(top) & set(gold)) / len(gold))
                done.append(s["sample_id"])
                # After every conversation, so a run cut short still reports what it measured.
                _table(done, recalls, time.perf_counter() - started)
        finally:
            await memory.close()


def _table(done: list[str], recalls: dict[str, list[float]], elapsed: float) -> None:
    n = len(recalls["native"])
    print(f"\nLoCoMo dev, {len(done)} conversation(s) ({', '.join(done)}), {n} questions, R@{K}")
    print(f"({elapsed:.0f} s so far)")
    print("| path | R@10 | vs native |")
    print("|---|---|---|")
    base = sum(recalls["native"]) / n
    for name, values in recalls.items():
        r = sum(values) / n
        print(f"| {name} | {r:.3f} | {r - base:+.3f} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=1)
    parser.add_argument("--sample", type=int, default=1, help="keep every Nth question")
    parser.add_argument(
        "--explain", action="store_true", help="add the steps between native and the adapters"
    )
    args = parser.parse_args()
    asyncio.run(run(args.data, args.conversations, args.sample, args.explain))
