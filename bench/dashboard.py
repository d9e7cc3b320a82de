"""The dashboard's speed on one big user: 10,000 memories and a graph of 3,000 facts. The
overview and health pages (targets: p95 <= 300 ms), the memory list and a memory's page
(p95 <= 100 ms), and the knowledge-graph page with 2,000 nodes in headless Chromium (target:
interactive <= 1.5 s, from navigation start to the graph drawn and answering).

A served store (uvicorn on 127.0.0.1, auth off, hash embeddings, no worker) on a private
embedded PostgreSQL; the pages are fetched over HTTP as a browser would, after a warm-up. The
graph is written as rows, not through add_fact: a 2,000-node star (every node distinct) that
the graph page draws, and the rest of ``--facts`` as pairs of entities apart from it.

    .venv/bin/python bench/dashboard.py [--memories 10000] [--requests 200] [--nodes 2000]
                                        [--facts 3000] [--graph-runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import uvicorn
from playwright.sync_api import sync_playwright

from _corpus import memories as corpus
from memvault import AsyncMemory, Settings
from memvault.api import create_app
from memvault.crypto.envelope import generate_key
from memvault.db import graph as graph_db
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.tenancy import tenant_scope
from memvault.graph import sealed
from memvault.runtime import open_backend

from _stats import print_table, summary_ms

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# One user holds it all: the overview and health pages cost what the user's graph costs.
USER = "bench"


KEY = generate_key()


def _settings(url: str, work: Path, nodes: int) -> Settings:
    return Settings(
        database_url=url,
        encryption_key=KEY,
        data_dir=work / "data",
        embedding_provider="hash",
        auth="off",
        rate_limit_per_s=0,
        run_worker=False,
        graph_max_nodes=nodes + 100,
        graph_max_edges=nodes * 2,
        graph_fanout=1000,  # every neighbour, so depth 2 reaches the whole star
    )


async def _fill(store: AsyncMemory, count: int) -> list[str]:
    ids: list[str] = []
    texts = corpus(count)
    for start in range(0, count, 500):
        items = [
            {"content": t, "user_id": USER, "infer": False} for t in texts[start : start + 500]
        ]
        ids += [str(r.id) for r in await store.add_many(items)]
    return ids


def _plan(nodes: int, facts: int) -> tuple[list[str], list[tuple[int, int]]]:
    """Names, and facts as (subject, object) indexes into them. A hub knowing 40 entities, each
    knowing (nodes - 41) / 40 others: depth 2 from the hub reaches exactly ``nodes`` entities.
    The facts past the star's ``nodes - 1`` are pairs of entities of their own, apart from it,
    so the graph page draws the same star whatever ``facts`` is."""
    hubs = 40
    rng = random.Random(11)
    pairs = max(0, facts - (nodes - 1))
    names = ["Hub"] + [f"{rng.getrandbits(40):010x}" for _ in range(nodes - 1 + 2 * pairs)]
    star = [(0 if n < hubs else 1 + n % hubs, n + 1) for n in range(nodes - 1)]
    apart = [(nodes + 2 * n, nodes + 2 * n + 1) for n in range(pairs)]
    return names, star + apart


async def _graph(settings: Settings, nodes: int, facts: int) -> str:
    """The user's graph (``_plan``), written as rows sealed as the graph writer seals them, not
    through add_fact: the writer resolves a new name to a similar existing entity, and with
    the hash embedder random names resolve into each other (a 2,000-name star drew ~740)."""
    tenant = "default"
    names, edges = _plan(nodes, facts)
    ids = [uuid.uuid4() for _ in names]
    backend = await open_backend(settings)
    try:
        keyring = backend.keys.current(tenant)
        owner = {"tenant_id": tenant, "user_id": USER}
        with tenant_scope(tenant):
            async with backend.engine.begin() as conn:
                for ident, name in zip(ids, names, strict=True):
                    columns = sealed.entity_columns(keyring, tenant, ident, name, [], None)
                    await graph_db.insert_entity(
                        conn, {**owner, "id": ident, "type": "person", **columns}
                    )
                for subject, target in edges:
                    fact_id = uuid.uuid4()
                    claim = f"{names[subject]} knows {names[target]}"
                    await graph_db.insert_fact(
                        conn,
                        {
                            **owner,
                            "id": fact_id,
                            "subject_id": ids[subject],
                            "predicate": "knows",
                            "object_id": ids[target],
                            "confidence": 0.9,
                            **sealed.fact_columns(keyring, tenant, fact_id, claim, None),
                        },
                    )
    finally:
        await backend.close()
    return str(ids[0])


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_config=None, log_level="warning", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# The pages and their target p95 in ms; each with a baseline of the API's own JSON beside it.
SUMMARY_PAGES, LIST_PAGES = 300, 100


def _targets(ids: list[str], cursor: str) -> dict[str, tuple[int, Any]]:
    rng = random.Random(7)
    return {
        "overview": (SUMMARY_PAGES, lambda: "/ui/"),
        "health": (SUMMARY_PAGES, lambda: "/ui/health"),
        "API GET /v1/health/memory (JSON)": (
            SUMMARY_PAGES,
            lambda: f"/v1/health/memory?user_id={USER}",
        ),
        "API GET /v1/memories (JSON, 50)": (
            LIST_PAGES,
            lambda: f"/v1/memories?user_id={USER}&limit=50",
        ),
        "list (50 rows)": (LIST_PAGES, lambda: "/ui/memories"),
        "list, next page": (LIST_PAGES, lambda: f"/ui/memories?cursor={cursor}"),
        "memory page": (LIST_PAGES, lambda: f"/ui/memories/{rng.choice(ids)}"),
    }


def _pages(
    base: str, ids: list[str], requests: int
) -> tuple[float, dict[int, dict[str, dict[str, float]]]]:
    """The first health report's time (the server's first near-duplicate scan of the user is
    a full one), and each page's timings by the page's target: every page in turn,
    ``requests`` rounds."""
    with httpx.Client(base_url=base, timeout=60) as http:
        http.get("/ui/user", params={"user_id": USER})
        first = http.get("/ui/memories")
        cursor = first.text.split("cursor=", 1)[1].split('"', 1)[0].replace("&amp;", "&")
        targets = _targets(ids, cursor)
        start = time.perf_counter()
        http.get("/v1/health/memory", params={"user_id": USER}).raise_for_status()
        cold = time.perf_counter() - start
        for _ in range(10):  # warm: plans, pools, templates
            for _target, make in targets.values():
                http.get(make())
        samples: dict[str, list[float]] = {name: [] for name in targets}
        for _ in range(requests):
            for name, (_target, make) in targets.items():
                start = time.perf_counter()
                answer = http.get(make())
                samples[name].append(time.perf_counter() - start)
                assert answer.status_code == 200, (name, answer.status_code)
    tables: dict[int, dict[str, dict[str, float]]] = {}
    for name, (target, _make) in targets.items():
        tables.setdefault(target, {})[name] = summary_ms(samples[name])
    return cold, tables


def _graph_page(base: str, path: str, runs: int) -> tuple[list[float], list[float], int]:
    interactive: list[float] = []
    drawing: list[float] = []
    nodes = 0
    if not runs:  # --graph-runs 0: the HTTP pages only
        return interactive, drawing, nodes
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(f"{base}/ui/user?user_id={USER}")
        for _ in range(runs + 1):
            page.goto(f"{base}/ui{path}")
            page.wait_for_selector("#graph[data-ready]", timeout=60_000)
            # Interactive: drawn, and the next frame painted (the main thread is free to take
            # a tap); measured from navigation start, so the page's own load counts too.
            at, drawn, nodes = page.evaluate(
                """() => new Promise((done) => requestAnimationFrame(() => {
                   const el = document.getElementById('graph');
                   done([performance.now(), Number(el.dataset.ready),
                         JSON.parse(document.getElementById('graph-data').textContent)
                             .nodes.length]); }))"""
            )
            interactive.append(at / 1000)
            drawing.append(drawn / 1000)
        browser.close()
    return interactive[1:], drawing[1:], nodes


async def _prepare(
    url: str, work: Path, memories: int, nodes: int, facts: int
) -> tuple[list[str], str]:
    settings = _settings(url, work, nodes)
    store = await AsyncMemory.open(settings)
    try:
        ids = await _fill(store, memories)
    finally:
        await store.close()
    return ids, await _graph(settings, nodes, facts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--facts", type=int, default=3_000)
    parser.add_argument("--graph-runs", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memvault-bench-dashboard-"))
    pg = EmbeddedPostgres(work / "pg")
    try:
        pg.start()
        with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "bench"')
        url = pg.admin_url("bench")
        started = time.perf_counter()
        ids, hub = asyncio.run(_prepare(url, work, args.memories, args.nodes, args.facts))
        facts = max(args.facts, args.nodes - 1)
        print(
            f"seeded {len(ids)} memories and {facts} facts (a {args.nodes}-node star and "
            f"{facts - args.nodes + 1} pairs apart) in {time.perf_counter() - started:.0f} s"
        )
        print(f"load average (1, 5, 15 min) before: {os.getloadavg()}")
        with _serving(create_app(_settings(url, work, args.nodes))) as base:
            cold, tables = _pages(base, ids, args.requests) if ids else (0.0, {})
            interactive, drawing, nodes = _graph_page(
                base, f"/graph?entity={hub}&depth=2", args.graph_runs
            )
            # The user's whole graph: the same entities, every one at depth 0 (a spiral).
            whole = _graph_page(base, "/graph?all=1", args.graph_runs)
        print(
            f"\nfirst GET /v1/health/memory of the server (a full near-duplicate scan): "
            f"{cold * 1000:.0f} ms"
        )
        for target, rows in tables.items():
            print_table(
                f"dashboard pages over HTTP, user with {len(ids)} memories and {facts} facts, "
                f"{args.requests} requests each (target p95 <= {target} ms)",
                rows,
            )
        if not interactive:
            print(f"\nload average (1, 5, 15 min): {os.getloadavg()}, cores: {os.cpu_count()}")
            return
        print(
            f"\ngraph page, {nodes} nodes, depth 2, headless Chromium, {args.graph_runs} loads "
            "(target <= 1.5 s)"
        )
        print("| measure | median s | max s |")
        print("|---|---|---|")
        print(
            f"| interactive (navigation start -> drawn, next frame painted) | "
            f"{statistics.median(interactive):.2f} | {max(interactive):.2f} |"
        )
        print(
            f"| of which drawing (script start -> drawn) | "
            f"{statistics.median(drawing):.2f} | {max(drawing):.2f} |"
        )
        print(
            f"| whole graph of the user ({whole[2]} nodes): interactive | "
            f"{statistics.median(whole[0]):.2f} | {max(whole[0]):.2f} |"
        )
        print(f"| of which drawing | {statistics.median(whole[1]):.2f} | {max(whole[1]):.2f} |")
        print(f"\nload average (1, 5, 15 min): {os.getloadavg()}, cores: {os.cpu_count()}")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
