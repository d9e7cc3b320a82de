"""Bulk writes with the default offline pipeline (PII, dedup, enrichment, extraction, graph), as
memories a second, on LoCoMo dev turns (../shared/bench/locomo_dev.json, read in place):

    .venv/bin/python bench/ingest.py --bulk [--turns 2760] [--batch 100] [--baseline-src DIR]

1. ``add_many``: every turn of the five conversations, one user each, in batches.
2. ``POST /v1/memories/batch`` in process (the app's full middleware: deadline, auth off), as
   many of the turns that follow (texts the embedding cache has not seen), for other users, in
   batches of the same size; and one batch of 1,000 (the documented maximum): its status, its
   time, and how many of its items were left pending.
3. ``add_messages``: the longest conversation as one conversation, ``--batch`` turns a call.
4. import: the export of one ``add_many`` user loaded into a fresh store.

``--provider hash`` swaps the model for the hashing embedder: what the pipeline costs besides
the model (on a loaded 2-core machine the model's share swamps the rest). With the model, the
run also times the model alone on the same turns, first and last, so the rates can be read
against what the model allows at that load.
Each tree's line is followed by the CPU a turn of ``add_many`` and ``add_messages`` (this
process's, the worker's included, and its embedded PostgreSQL's): the measure that holds on a
shared machine, where the wall rates swing by a third between runs of one tree.
``--baseline-src DIR`` runs the same in a second interpreter with ``DIR`` (another checkout's
``src``) first on the path, before this one, so both figures come from one run at one load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from locomo import DATA, turns
from memvault import AsyncMemory, Settings


def _items(conversation: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    return [
        {
            "content": t["content"],
            "user_id": user,
            "occurred_at": t["occurred_at"],
            "metadata": {"dia_id": t["dia_id"], "speaker": t["speaker"]},
        }
        for t in conversation
    ]


def _cut(
    conversations: list[list[dict[str, Any]]], limit: int, part: int = 0
) -> list[list[dict[str, Any]]]:
    """``limit`` turns spread over the conversations as evenly as they allow: the first
    share of each, or with ``part`` the next ones (texts the embedding cache has not seen)."""
    share = max(1, limit // len(conversations))
    return [c[part * share : (part + 1) * share] for c in conversations]


def _cpu(data_dir: Path) -> tuple[float, float]:
    """CPU seconds so far of this process and of the embedded PostgreSQL in ``data_dir`` (its
    postmaster and every backend): on a shared machine the wall rate swings by a third
    between runs of one tree, the CPU a write costs far less."""
    pidfile = next(data_dir.rglob("postmaster.pid"))
    master = psutil.Process(int(pidfile.read_text().split()[0]))
    server = 0.0
    for process in [master, *master.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            server += times.user + times.system
    return time.process_time(), server


def _per_turn(before: tuple[float, float], after: tuple[float, float], n: int) -> list[float]:
    return [(b - a) * 1000 / n for a, b in zip(before, after, strict=True)]


async def _add_many(memory: AsyncMemory, convs: list[list[Any]], batch: int, tag: str) -> float:
    items = [i for n, c in enumerate(convs) for i in _items(c, f"{tag}-{n}")]
    start = time.perf_counter()
    for i in range(0, len(items), batch):
        await memory.add_many(items[i : i + batch])
    return len(items) / (time.perf_counter() - start)


def _route(settings: Settings, convs: list[list[Any]], batch: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from memvault.api import create_app

    items = [i for n, c in enumerate(convs) for i in _items(c, f"route-{n}")]
    for item in items:
        item["occurred_at"] = item["occurred_at"].isoformat()
    with TestClient(create_app(settings)) as api:
        api.post("/v1/memories/batch", json={"memories": items[:1]})
        start = time.perf_counter()
        for i in range(0, len(items), batch):
            answer = api.post("/v1/memories/batch", json={"memories": items[i : i + batch]})
            assert answer.status_code == 201, answer.text[:300]
        rate = len(items) / (time.perf_counter() - start)
        whole = [dict(i, user_id="route-max") for i in _every(1000)]
        start = time.perf_counter()
        answer = api.post("/v1/memories/batch", json={"memories": whole})
        took = time.perf_counter() - start
        results = answer.json().get("results", []) if answer.status_code == 201 else []
        pending = sum(r["dedup"]["action"] == "pending" for r in results)
    return {"rate": rate, "max_status": answer.status_code, "max_s": took, "pending": pending}


def _every(count: int) -> list[dict[str, Any]]:
    """``count`` distinct turns of the dev set, as bodies of the batch route."""
    every = [t for s in json.loads(DATA.read_text()) for t in turns(s)][:count]
    return [dict(i, occurred_at=i["occurred_at"].isoformat()) for i in _items(every, "")]


async def _messages(memory: AsyncMemory, conversation: list[Any], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(conversation), batch):
        messages = [
            {"role": "user", "name": t["speaker"], "content": t["content"]}
            for t in conversation[i : i + batch]
        ]
        await memory.add_messages(messages, user_id="talker", conversation_id="long")
    return len(conversation) / (time.perf_counter() - start)


async def measure(turn_limit: int, batch: int, provider: str = "local") -> dict[str, Any]:
    samples = json.loads(DATA.read_text())
    convs = _cut([turns(s) for s in samples], turn_limit)
    others = _cut([turns(s) for s in samples], turn_limit, part=1)
    longest = max((turns(s) for s in samples), key=len)[:turn_limit]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp) / "a", run_worker=True, auth="off", embedding_provider=provider
        )
        memory = await AsyncMemory.open(settings)
        await memory.add("warm up", user_id="warm")
        figures: dict[str, Any] = {"turns": sum(map(len, convs)), "batch": batch}
        before = _cpu(settings.data_dir)
        figures["add_many"] = await _add_many(memory, convs, batch, "many")
        middle = _cpu(settings.data_dir)
        figures["add_messages"] = await _messages(memory, longest, batch)
        figures["cpu"] = {
            "add_many": _per_turn(before, middle, figures["turns"]),
            "add_messages": _per_turn(middle, _cpu(settings.data_dir), len(longest)),
        }
        lines = await memory.export_memories(user_id="many-0")
        await memory.close()
        figures["route"] = await asyncio.to_thread(_route, settings, others, batch)
        fresh = await AsyncMemory.open(
            Settings(data_dir=Path(tmp) / "b", run_worker=False, embedding_provider=provider)
        )
        start = time.perf_counter()
        counts = await fresh.import_memories(lines)
        figures["import"] = counts.get("memories", 0) / (time.perf_counter() - start)
        await fresh.close()
    return figures


def _print(label: str, f: dict[str, Any]) -> None:
    route = f["route"]
    print(
        f"{label}: {f['turns']} turns, batches of {f['batch']}: add_many {f['add_many']:.0f}/s · "
        f"batch route {route['rate']:.0f}/s · add_messages {f['add_messages']:.0f}/s · "
        f"import {f['import']:.0f}/s · 1,000-item batch: {route['max_status']} in "
        f"{route['max_s']:.1f} s, {route['pending']} pending",
        flush=True,
    )
    cpu = " · ".join(f"{k} {py:.2f} + {pg:.2f}" for k, (py, pg) in f["cpu"].items())
    print(f"  CPU a turn, ms, this process (worker included) + PostgreSQL: {cpu}", flush=True)


async def model_alone(turn_limit: int, batch: int) -> float:
    """Texts a second the bundled model embeds on its own: the same turns, the same batches
    (what every path here is bounded by)."""
    from memvault.embedding import LocalEmbedder

    samples = json.loads(DATA.read_text())
    texts = [t["content"] for c in _cut([turns(s) for s in samples], turn_limit) for t in c]
    embedder = LocalEmbedder()
    await embedder.embed_batch(["warm up"])
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        await embedder.embed_batch(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - start)


def _model(turn_limit: int, batch: int, provider: str) -> None:
    if provider == "local":
        rate = asyncio.run(model_alone(turn_limit, batch))
        print(f"the model alone: {rate:.0f} texts/s (load {os.getloadavg()})", flush=True)


def run(turn_limit: int, batch: int, baseline_src: str | None, provider: str = "local") -> None:
    print(f"load before: {os.getloadavg()}", flush=True)
    _model(turn_limit, batch, provider)
    if baseline_src:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([baseline_src, str(Path(__file__).parent)]),
        }
        call = f"ingest_bulk.measure({turn_limit}, {batch}, {provider!r})"
        code = (
            f"import asyncio, json, ingest_bulk; print('FIGURES', json.dumps(asyncio.run({call})))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        line = next(x for x in done.stdout.splitlines() if x.startswith("FIGURES"))
        _print(f"baseline ({baseline_src})", json.loads(line.removeprefix("FIGURES ")))
        print(f"load: {os.getloadavg()}", flush=True)
    _print("this tree", asyncio.run(measure(turn_limit, batch, provider)))
    _model(turn_limit, batch, provider)
    print(f"load after: {os.getloadavg()}", flush=True)
