"""What OpenTelemetry tracing costs: add and search p95 with tracing off and on, side by side.

    .venv/bin/python bench/tracing.py [--stored 300] [--rounds 5] [--calls 40]

One embedded store, served in-process over HTTP (httpx's ASGI transport, the app with its
lifespan: the request middleware and its span included). ``--stored`` memories first (offline
pipeline, no LLM), then ``--rounds`` rounds; in each, ``--calls`` adds (infer on: PII, graph
extraction, embedding, dedup, enrichment, commit) and as many searches (hybrid) per arm, the
arms alternating call by call (which goes first flips each pair), so load falls on both alike:

- off: tracing off, as by default (``tracing.span`` returns one shared no-op);
- on: every span recorded (the SDK's default sampler, parent-based always-on: 100 %) through a
  ``BatchSpanProcessor`` into an exporter that drops each batch, so the SDK's whole cost is
  measured and the network's is not.

Reports per arm the median over rounds of p50 and p95, and on / off; the mean CPU time a call
takes in this process per arm (which the machine's other load inflates far less than wall
time); then the off path alone:
the cost of one no-op span, and the spans a call makes (counted in the on arm), so the price
tracing off adds to a call is their product.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from _corpus import memories, questions
from memvault import AsyncMemory, Settings, tracing
from memvault.api import create_app

from _stats import percentile

ARMS = ("off", "on")


class Dropped(SpanExporter):
    """Takes every batch and keeps nothing: the SDK's work without a network."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


CPU: dict[tuple[str, str], list[float]] = {}


async def call(
    client: httpx.AsyncClient, op: str, text: str, user: str, arm: str | None = None
) -> float:
    """The call's wall time; its CPU time (this process, every thread: the embedding model's
    and the span processor's too) goes to ``CPU`` under (op, arm), a measure that another
    process's load on the machine does not inflate the way it does wall time."""
    body: dict[str, Any] = {"user_id": user}
    path = "/v1/memories" if op == "add" else "/v1/memories/search"
    body["content" if op == "add" else "query"] = text
    cpu = time.process_time()
    started = time.perf_counter()
    answer = await client.post(path, json=body)
    elapsed = time.perf_counter() - started
    if arm is not None:
        CPU.setdefault((op, arm), []).append(time.process_time() - cpu)
    answer.raise_for_status()
    return elapsed


async def one_round(
    client: httpx.AsyncClient,
    provider: TracerProvider,
    texts: list[str],
    asks: list[str],
    flip: bool,
) -> dict[tuple[str, str], list[float]]:
    samples: dict[tuple[str, str], list[float]] = {
        (op, arm): [] for op in ("add", "search") for arm in ARMS
    }
    for n in range(len(asks)):
        order = ARMS if (n % 2 == 0) != flip else ARMS[::-1]
        for arm in order:
            if arm == "on":
                tracing.install(provider)
            user = f"user-{n % 10}"
            samples["add", arm].append(await call(client, "add", texts.pop(), user, arm))
            samples["search", arm].append(await call(client, "search", asks[n], user, arm))
            tracing.uninstall()
    return samples


def no_op_span_ns(repeat: int = 200_000) -> float:
    """One ``with tracing.span(name, n=1): stage.set(m=2)`` with tracing off, in nanoseconds
    of CPU time (the fewest of five runs)."""
    assert not tracing.enabled()
    best = float("inf")
    for _ in range(5):
        started = time.process_time_ns()
        for _ in range(repeat):
            with tracing.span("memvault.bench", n=1) as stage:
                stage.set(m=2)
        best = min(best, (time.process_time_ns() - started) / repeat)
    return best


async def run(stored: int, rounds: int, calls: int) -> None:
    texts = memories(stored + rounds * calls * 2 + 40, seed=47)
    asks = questions(rounds * calls, seed=48)
    exporter = Dropped()
    provider = TracerProvider()  # sampler: OTEL_TRACES_SAMPLER, unset: always on
    provider.add_span_processor(BatchSpanProcessor(exporter))
    by_round: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp) / "data", auth="off", rate_limit_per_s=0, run_worker=False
        )
        memory = await AsyncMemory.open(settings)
        app = create_app(settings, memory=memory)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://bench") as client,
        ):
            for i in range(stored):
                await call(client, "add", texts.pop(), f"user-{i % 10}")
            for _ in range(10):  # warm both arms' code paths
                for arm in ARMS:
                    if arm == "on":
                        tracing.install(provider)
                    await call(client, "search", asks[0], "user-0")
                    tracing.uninstall()
            print(f"  {stored} stored; {rounds} rounds of {calls} calls per op and arm", flush=True)
            for r in range(rounds):
                found = await one_round(
                    client, provider, texts, asks[r * calls : (r + 1) * calls], r % 2 == 1
                )
                for key, samples in found.items():
                    by_round.setdefault(key, []).append(
                        {"p50": percentile(samples, 50), "p95": percentile(samples, 95)}
                    )
            per_call = {
                op: await spans_per_call(client, provider, exporter, op, texts, asks)
                for op in ("add", "search")
            }
        await memory.close()
    report(by_round, per_call)


async def spans_per_call(
    client: httpx.AsyncClient,
    provider: TracerProvider,
    exporter: Dropped,
    op: str,
    texts: list[str],
    asks: list[str],
) -> float:
    provider.force_flush()
    before = exporter.spans
    tracing.install(provider)
    for n in range(10):
        await call(client, op, texts.pop() if op == "add" else asks[n], "user-0")
    tracing.uninstall()
    provider.force_flush()
    return (exporter.spans - before) / 10


def report(
    by_round: dict[tuple[str, str], list[dict[str, float]]], per_call: dict[str, float]
) -> None:
    def median(op: str, arm: str, q: str) -> float:
        return statistics.median(r[q] for r in by_round[op, arm]) * 1000

    print("\n| operation | off p50 ms | on p50 ms | off p95 ms | on p95 ms | p95 on / off |")
    print("|---|---|---|---|---|---|")
    for op in ("add", "search"):
        off50, on50 = median(op, "off", "p50"), median(op, "on", "p50")
        off95, on95 = median(op, "off", "p95"), median(op, "on", "p95")
        print(
            f"| {op} | {off50:.2f} | {on50:.2f} | {off95:.2f} | {on95:.2f} | {on95 / off95:.3f} |"
        )
    for op in ("add", "search"):
        ratios = [
            on["p95"] / off["p95"]
            for on, off in zip(by_round[op, "on"], by_round[op, "off"], strict=True)
        ]
        print(f"  {op} p95 on/off per round: " + ", ".join(f"{x:.3f}" for x in ratios))
    print("\n| operation | off CPU ms a call | on CPU ms a call | on / off |")
    print("|---|---|---|---|")
    for op in ("add", "search"):
        off, on = (statistics.fmean(CPU[op, arm]) * 1000 for arm in ARMS)
        print(f"| {op} | {off:.2f} | {on:.2f} | {on / off:.3f} |")
    cost = no_op_span_ns()
    print(f"\noff path: one no-op span (with a set()) {cost:.0f} ns")
    for op, n in per_call.items():
        print(f"  {op}: {n:.1f} spans a call when on; off, {n * cost / 1000:.2f} µs a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stored", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(run(args.stored, args.rounds, args.calls))


if __name__ == "__main__":
    main()
