"""remember(): latency over HTTP with every kind populated, and its episodic recall on LoCoMo.

    .venv/bin/python bench/remember.py latency [--turns 10000] [--facts 2000]
        [--strategies 200] [--goals 20] [--tool-calls 200] [--requests 200]
        [--baseline-src OTHER_TREE/src]
    .venv/bin/python bench/remember.py locomo [--data PATH] [--budgets 64 256 1024]
    .venv/bin/python bench/remember.py example [--query TEXT] [--budget 400]

``latency`` starts one private PostgreSQL and ``memvault serve`` on it (auth off, embedding
cache off, so every query is embedded), and fills one user through the HTTP API: ``--turns``
conversation turns (synthetic texts, 50 per conversation, half in a project channel),
``--facts`` facts stated through ``POST /v1/facts`` (about the corpus's 20 people and the
things they like, use and visit: their entities come with them), ``--strategies``
strategies, ``--goals`` goals (half of them completed, with a result), ``--tool-calls`` tool
calls (a third in the live session, a quarter failed), a profile and one live session's
working memory. Then it
asks ``--requests`` distinct questions, alternating
``POST /v1/remember`` (project channel, with the session) and ``POST /v1/memories/search``
(the episodic part's own search, for comparison), one at a time. Reports p50/p95/p99 of
each, their ratio, and the share of remember()'s time each kind took
(``diagnostics.timings_ms``: the kinds run concurrently, so shares are of their sum).
With ``--baseline-src`` a second server runs that source tree (a worktree of an older commit)
on its own database, filled alike, and each question goes to both in turn: the two are
measured under the same load, which on a shared machine is the only fair comparison.

``locomo`` imports the LoCoMo dev conversations as bench/locomo.py does, then asks every
category 1-4 question through ``search`` (hybrid, limit 10) and through ``remember()``
(episodic only, limit 10, a large budget), each scored as evidence recall@10, side by side;
and checks at each ``--budgets`` value that the rendered prompt is exactly ``bundle.tokens``
long in the model's tokenizer and no longer than the budget.

``example`` stores one user's agent loop (a past conversation, a live one, goals, tool calls,
a strategy) through the library and prints the bundle ``remember()`` gives back: the example
in docs/remember.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa

from _corpus import PEOPLE
from _corpus import memories as corpus
from _corpus import questions as corpus_questions
from locomo import CATEGORIES, DATA, evidence_ids, import_conversation, turns
from memvault import AsyncMemory, Settings
from memvault.crypto.envelope import generate_key
from memvault.db.embedded import EmbeddedPostgres
from search_latency import Server

from _stats import percentile

KINDS = ("embed", "episodic", "procedural", "semantic", "goals", "profile", "working", "budget")
USER, PROJECT = "bench-user", "project"


async def populate(server: Server, args: argparse.Namespace) -> str:
    client = server.client
    texts = corpus(args.turns, seed=7)
    session = ""
    started = time.perf_counter()
    for n, start in enumerate(range(0, len(texts), 50)):
        channel = PROJECT if n % 2 else "_global"
        convo = await client.post("/v1/conversations", json={"user_id": USER, "channel": channel})
        convo.raise_for_status()
        session = convo.json()["id"]
        turns_body = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": text}
            for i, text in enumerate(texts[start : start + 50])
        ]
        answer = await client.post(
            f"/v1/conversations/{session}/turns?wait=true",
            json={"user_id": USER, "turns": turns_body},
        )
        answer.raise_for_status()
    print(f"  {len(texts)} turns in {time.perf_counter() - started:.0f}s", flush=True)
    started = time.perf_counter()
    for n in range(args.facts):
        person = PEOPLE[n % len(PEOPLE)]
        predicate = ("likes", "uses", "visited", "knows")[n // len(PEOPLE) % 4]
        thing = f"{PEOPLE[(n * 7 + 3) % len(PEOPLE)]}" if predicate == "knows" else None
        body: dict[str, Any] = {
            "user_id": USER,
            "channel": PROJECT if n % 2 else "_global",
            "subject": person,
            "predicate": predicate,
            **({"object": thing} if thing else {"value": f"{predicate} item {n}"}),
        }
        (await client.post("/v1/facts", json=body)).raise_for_status()
    print(f"  {args.facts} facts in {time.perf_counter() - started:.0f}s", flush=True)
    tools = ["search", "read_file", "edit", "run_tests", "deploy", "email", "calendar"]
    for n, text in enumerate(corpus(args.strategies, seed=11)):
        body = {
            "user_id": USER,
            "channel": PROJECT if n % 2 else "_global",
            "description": text,
            "tool_sequence": [tools[n % 7], tools[(n * 3 + 1) % 7]],
        }
        (await client.post("/v1/strategies", json=body)).raise_for_status()
    for n, text in enumerate(corpus(args.goals, seed=13)):
        body = {"user_id": USER, "channel": PROJECT, "description": text, "priority": 1 + n % 10}
        goal = await client.post("/v1/goals", json=body)
        goal.raise_for_status()
        if n % 2:  # half are done: what happened lately
            done = {"user_id": USER, "result": f"done: {text[:60]}"}
            (
                await client.post(f"/v1/goals/{goal.json()['id']}/complete", json=done)
            ).raise_for_status()
    for n in range(args.tool_calls):
        body = {
            "user_id": USER,
            "channel": PROJECT if n % 2 else "_global",
            "tool_name": tools[n % 7],
            "tool_input": {"query": f"input {n}"},
            "tool_output": {"result": f"output {n}", "items": list(range(n % 5))},
            "success": n % 4 != 0,
            "latency_ms": 10.0 + n % 50,
            **({"conversation_id": session} if n % 3 == 0 else {}),
        }
        (await client.post("/v1/tools/invocations", json=body)).raise_for_status()
    await client.patch(
        "/v1/profile",
        json={"user_id": USER, "communication_style": "brief", "expertise": ["python", "sql"]},
    )
    for key in ("ticket", "branch", "env"):
        await client.put(
            f"/v1/working/{session}/context/{key}",
            json={"user_id": USER, "channel": PROJECT, "value": f"{key}-value"},
        )
    return session


async def latency(args: argparse.Namespace) -> None:
    """One server from this tree; with ``--baseline-src``, a second from that source tree on
    its own database, filled alike, and every question asked of both in turn (who goes first
    alternating), so a busy machine weighs on both the same."""
    trees = {"current": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pg = EmbeddedPostgres(work / "pg")
        pg.start()
        servers: dict[str, Server] = {}
        try:
            for name, src in trees.items():
                with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                servers[name] = Server(name, src, pg.admin_url(name), generate_key(), work)
            sessions = {}
            for name, server in servers.items():
                await server.ready()
                print(f"{name} ({trees[name]}):", flush=True)
                sessions[name] = await populate(server, args)
                with psycopg.connect(pg.admin_url(name), autocommit=True) as conn:
                    conn.execute("ANALYZE")  # what autovacuum does after a bulk load
            asked = corpus_questions(args.requests + 10, seed=17)
            bodies = {
                name: {"user_id": USER, "channel": PROJECT, "conversation_id": session}
                for name, session in sessions.items()
            }
            for name, server in servers.items():
                for question in asked[:10]:  # load the model, warm the pools: not measured
                    await server.client.post(
                        "/v1/remember", json={**bodies[name], "query": question}
                    )
            remember_ms: dict[str, list[float]] = {name: [] for name in servers}
            search_ms: dict[str, list[float]] = {name: [] for name in servers}
            timings: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
            order = list(servers)
            for n, question in enumerate(asked[10:]):
                for name in order if n % 2 == 0 else order[::-1]:
                    server = servers[name]
                    for kind in ("remember", "search") if n % 4 < 2 else ("search", "remember"):
                        started = time.perf_counter()
                        if kind == "remember":
                            answer = await server.client.post(
                                "/v1/remember", json={**bodies[name], "query": question}
                            )
                        else:
                            answer = await server.client.post(
                                "/v1/memories/search",
                                json={
                                    "query": question,
                                    "user_id": USER,
                                    "limit": 20,
                                    "track_access": False,
                                },
                            )
                        elapsed = (time.perf_counter() - started) * 1000
                        answer.raise_for_status()
                        if kind == "remember":
                            remember_ms[name].append(elapsed)
                            timings[name].append(answer.json()["diagnostics"]["timings_ms"])
                        else:
                            search_ms[name].append(elapsed)
            for name in servers:
                print(f"\n### {name}: {trees[name]}")
                report(remember_ms[name], search_ms[name], timings[name])
        finally:
            for server in servers.values():
                await server.close()
            pg.stop()


def report(
    remember_ms: list[float], search_ms: list[float], timings: list[dict[str, float]]
) -> None:
    print(f"\n{len(remember_ms)} requests each, one at a time, over HTTP (ms)")
    print("| call | p50 | p95 | p99 |")
    print("|---|---|---|---|")
    for name, samples in (
        ("POST /v1/remember", remember_ms),
        ("POST /v1/memories/search", search_ms),
    ):
        cells = " | ".join(f"{percentile(samples, q):.1f}" for q in (50, 95, 99))
        print(f"| {name} | {cells} |")
    ratio = " / ".join(
        f"{percentile(remember_ms, q) / percentile(search_ms, q):.2f}" for q in (50, 95)
    )
    print(f"remember / search at p50 / p95: {ratio}")
    means = {k: statistics.fmean(t.get(k, 0.0) for t in timings) for k in KINDS}
    spent = sum(means.values())
    print("\nremember() time per kind (server side; kinds run concurrently)")
    print("| kind | mean ms | p95 ms | share |")
    print("|---|---|---|---|")
    for kind in KINDS:
        p95 = percentile([t.get(kind, 0.0) for t in timings], 95)
        print(f"| {kind} | {means[kind]:.2f} | {p95:.2f} | {means[kind] / spent:.0%} |")
    total = [t["total"] for t in timings]
    print(f"| total (server) | {statistics.fmean(total):.2f} | {percentile(total, 95):.2f} | |")


async def locomo(args: argparse.Namespace) -> None:
    samples = json.loads(args.data.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(data_dir=Path(tmp) / "data", run_worker=False, embedding_cache_ttl_s=0)
        )
        questions = []
        for sample in samples:
            conversation = turns(sample)
            known = await import_conversation(memory, sample["sample_id"], conversation)
            asked_at = max(t["occurred_at"] for t in conversation)
            for qa in sample["qa"]:
                gold = evidence_ids(qa.get("evidence", []), known)
                if qa["category"] in CATEGORIES and gold:
                    questions.append((sample["sample_id"], qa["question"], gold, asked_at))
            print(f"  imported {sample['sample_id']}", flush=True)
        async with memory._backend.ddl_engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(sa.text("ANALYZE"))
        await score(memory, questions)
        await budgets(memory, questions[:50], args.budgets)
        await memory.close()


async def score(memory: AsyncMemory, questions: list[Any]) -> None:
    recalls: dict[str, dict[int, list[float]]] = {
        "search": {5: [], 10: []},
        "remember": {5: [], 10: []},
    }
    for user, question, gold, asked_at in questions:
        result = await memory.search(
            question, user_id=user, limit=10, reference_time=asked_at, track_access=False
        )
        found = {
            "search": [str(h.metadata.get("dia_id")) for h in result.results],
            "remember": await _remembered(memory, user, question, asked_at),
        }
        for path, ids in found.items():
            for k in (5, 10):
                recalls[path][k].append(len(set(ids[:k]) & set(gold)) / len(gold))
    n = len(questions)
    print(f"\nLoCoMo dev, {n} questions: evidence recall (remember: its bundle order)")
    print("| path | R@5 | R@10 |")
    print("|---|---|---|")
    for path, name in (
        ("search", "search (hybrid, limit 10)"),
        ("remember", "remember() episodic (limit 10, default weights and share)"),
    ):
        cells = " | ".join(f"{sum(v) / n:.3f}" for v in recalls[path].values())
        print(f"| {name} | {cells} |")


async def _remembered(memory: AsyncMemory, user: str, question: str, asked_at: Any) -> list[str]:
    bundle = await memory.remember(
        question,
        user_id=user,
        include=["episodic"],
        limit=10,
        budget_tokens=100_000,
        reference_time=asked_at,
    )
    records = [await memory.get(item.id, user_id=user) for item in bundle.episodic]
    return [str(r.metadata.get("dia_id")) for r in records]


async def budgets(memory: AsyncMemory, questions: list[Any], sizes: list[int]) -> None:
    tokenizer = memory._backend.embeddings.primary.tokenizer()
    print("\ntoken budget (50 questions each, the model's tokenizer)")
    print("| budget | max tokens used | mean used | prompt == bundle.tokens | over budget |")
    print("|---|---|---|---|---|")
    for size in sizes:
        used, exact, over = [], 0, 0
        for user, question, _, asked_at in questions:
            bundle = await memory.remember(
                question, user_id=user, budget_tokens=size, reference_time=asked_at
            )
            counted = len(tokenizer.spans(bundle.as_prompt()))
            used.append(bundle.tokens)
            exact += counted == bundle.tokens
            over += counted > size
        print(
            f"| {size} | {max(used)} | {statistics.fmean(used):.0f} | "
            f"{exact}/{len(questions)} | {over} |"
        )


async def example(args: argparse.Namespace) -> None:
    """One user's agent loop, stored through the library, and the bundle it gets back: the
    example in docs/remember.md."""
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(Settings(data_dir=Path(tmp) / "data", run_worker=False))
        user = "kate"
        await memory.update_profile(user_id=user, communication_style="short answers")
        earlier = await memory.start_conversation(user_id=user, title="moving")
        await memory.add_turns(
            earlier.id,
            [{"role": "user", "content": "I live in Munich and I work for Acme."}],
            user_id=user,
            wait=True,
        )
        trip = await memory.start_conversation(user_id=user, title="Lisbon")
        await memory.add_turns(
            trip.id,
            [
                {"role": "user", "content": "Find me a hotel in Alfama for the first week of May."},
                {"role": "assistant", "content": "Memmo Alfama has river views; shall I book it?"},
                {"role": "user", "content": "Yes, book the Memmo Alfama."},
            ],
            user_id=user,
            wait=True,
        )
        goal = await memory.add_goal("Book a hotel in Lisbon", user_id=user, priority=8)
        await memory.add_goal("Plan the days in Lisbon", user_id=user, priority=6)
        await memory.record_tool_use(
            "hotel_search",
            user_id=user,
            conversation_id=trip.id,
            tool_input={"area": "Alfama", "from": "2026-05-01"},
            tool_output=[{"name": "Memmo Alfama", "price": 240}, {"name": "Solar do Castelo"}],
            success=True,
        )
        await memory.record_tool_use(
            "book_hotel",
            user_id=user,
            conversation_id=trip.id,
            tool_output={"hotel": "Memmo Alfama", "confirmation": "MA-2291"},
            success=True,
        )
        await memory.complete_goal(goal.id, user_id=user, result="booked Memmo Alfama")
        strategy = await memory.learn_strategy(
            "Book a hotel", user_id=user, tool_sequence=["hotel_search", "book_hotel"]
        )
        for success in (True, True, True, False):
            await memory.reinforce_strategy(strategy.id, user_id=user, success=success)
        bundle = await memory.remember(
            args.query, user_id=user, conversation_id=str(trip.id), budget_tokens=args.budget
        )
        print(bundle.as_prompt())
        d = bundle.diagnostics
        print(
            f"\n(tokens {bundle.tokens} of {bundle.budget_tokens}; duplicates left out "
            f"{d.duplicates_dropped}, over budget {d.budget_dropped}, entities below the bar "
            f"{d.entities_below_bar})"
        )
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="mode", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--turns", type=int, default=10_000)
    lat.add_argument("--facts", type=int, default=2000)
    lat.add_argument("--strategies", type=int, default=200)
    lat.add_argument("--goals", type=int, default=20)
    lat.add_argument("--tool-calls", type=int, default=200)
    lat.add_argument("--requests", type=int, default=200)
    lat.add_argument(
        "--baseline-src",
        type=Path,
        help="another source tree (e.g. a git worktree's src) to serve and ask alongside",
    )
    loc = sub.add_parser("locomo")
    loc.add_argument("--data", type=Path, default=DATA)
    loc.add_argument("--budgets", type=int, nargs="+", default=[64, 256, 1024])
    ex = sub.add_parser("example")
    ex.add_argument("--query", default="Where am I staying in Lisbon, and where do I live?")
    ex.add_argument("--budget", type=int, default=400)
    parsed = parser.parse_args()
    modes = {"latency": latency, "locomo": locomo, "example": example}
    asyncio.run(modes[parsed.mode](parsed))
