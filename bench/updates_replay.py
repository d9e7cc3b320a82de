"""Updates first measured in seconds: each question's ranking with and without it, from one
run over the same stores (bench/recall.py's sets and protocol, both halves).

    .venv/bin/python bench/updates_replay.py capture [--out /tmp/updates_pools.pkl] \
        [--sets locomo prefeval facts longmemeval]
    .venv/bin/python bench/updates_replay.py score [--pools /tmp/updates_pools.pkl]

``capture`` imports the sets as bench/recall.py does and runs every question once with the
default recipe and updates first held back, keeping its 15 best candidates as search ranked
them (ids, texts, dates, final scores, the texts' and the question's vectors) and what the
question asks (text, named period, reference time). The top 10 of that order is the ranking
without updates first. ``score`` runs ``retrieval/updates.py`` (``asked_about``,
``replacements``, ``reorder``) over those same candidates, as search does, and prints R@10
and all@10 without and with it per set and half (even and odd places in the set's order),
and how many questions' top 10 it reordered. Only the pairing and the reordering can change
here; a change to what search fetches or how it ranks needs bench/recall.py.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings
from memvault.keys.sealing import to_record
from memvault.retrieval import search, updates
from recall import LOADERS, found_keys

DEFAULT = Path(tempfile.gettempdir()) / "updates_pools.pkl"
TOP = 10


async def capture(out: Path, names: list[str]) -> None:
    current: dict[str, Any] = {}

    async def held_back(backend, tenant_id, request, ranked, question, when, reference):  # type: ignore[no-untyped-def]
        pool = ranked[: updates.POOL]
        texts = [to_record(backend.keys, row).content for row, _ in pool]
        asked_with, index = question
        # The vectors search itself compares the candidates by (their stored ones).
        vectors = await search._statement_vectors(backend, tenant_id, pool, texts, asked_with)
        current.update(
            query=request.query,
            now=datetime.now(UTC),
            when=when,
            reference=reference,
            ids=[row.id for row, _ in pool],
            texts=texts,
            at=[row.occurred_at for row, _ in pool],
            final=[float(scores["final"] or 0.0) for _, scores in pool],
            vectors=list(vectors or []),
            question=list(asked_with.vectors[index]),
        )
        return ranked, {}

    search._updates_first = held_back  # type: ignore[assignment]
    captured: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(data_dir=Path(tmp) / "data", run_worker=False, embedding_cache_ttl_s=0)
        )
        for name in names:
            load, path = LOADERS[name]
            rows = []
            for q in await load(memory, path, False):
                current.clear()
                result = await memory.search(
                    q.text,
                    user_id=q.user,
                    limit=updates.POOL,
                    recipe="hybrid",
                    reference_time=q.asked_at,
                    track_access=False,
                )
                ids = [h.id for h in result.results]
                keys = dict(zip(ids, found_keys(result.results), strict=True))
                rows.append({**current, "gold": q.gold, "keys": keys})
            captured[name] = rows
            print(f"  {name}: {len(rows)} questions captured", flush=True)
        await memory.close()
    out.write_bytes(pickle.dumps(captured))


def ranked_with(row: dict[str, Any]) -> list[Any]:
    """The candidates' order with updates first, as search's ``_updates_first`` makes it."""
    ids: list[Any] = row.get("ids", [])
    if not ids:
        return ids
    asked, as_of = updates.asked_about(row["query"], row["when"], row["reference"])
    if asked == "none" or len(set(row["at"])) < 2 or not row["vectors"]:
        return ids
    statements = [
        updates.Statement(*fields)
        for fields in zip(ids, row["texts"], row["at"], row["vectors"], strict=True)
        if fields[2] <= row["now"]
    ]
    found = updates.replacements(statements, row["question"], asked, as_of)
    if not found:
        return ids
    moved = updates.reorder(dict(zip(ids, row["final"], strict=True)), found)
    return sorted(ids, key=lambda m: (-moved[m], str(m)))


def score(pools: Path) -> None:
    captured = pickle.loads(pools.read_bytes())
    print("| set | half | n | R@10 off | R@10 on | all@10 off | all@10 on | reordered |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in captured.items():
        for half, part in (("even", rows[::2]), ("odd", rows[1::2])):
            recall = {"off": 0.0, "on": 0.0}
            every = {"off": 0, "on": 0}
            reordered = 0
            for row in part:
                orders = {"off": row.get("ids", []), "on": ranked_with(row)}
                reordered += orders["on"][:TOP] != orders["off"][:TOP]
                for which, order in orders.items():
                    top = {row["keys"][m] for m in order[:TOP]} & row["gold"]
                    recall[which] += len(top) / len(row["gold"])
                    every[which] += top == row["gold"]
            n = len(part)
            print(
                f"| {name} | {half} | {n} | {recall['off'] / n:.3f} | {recall['on'] / n:.3f} | "
                f"{every['off'] / n:.3f} | {every['on'] / n:.3f} | {reordered} |"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    take = commands.add_parser("capture")
    take.add_argument("--out", type=Path, default=DEFAULT)
    take.add_argument("--sets", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    replay = commands.add_parser("score")
    replay.add_argument("--pools", type=Path, default=DEFAULT)
    args = parser.parse_args()
    if args.command == "capture":
        asyncio.run(capture(args.out, args.sets))
    else:
        score(args.pools)
