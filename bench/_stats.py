"""Small helpers shared by the benchmarks: percentiles and a printed table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(samples: list[float]) -> dict[str, float]:
    """Samples in seconds → p50/p95/p99/mean in milliseconds."""
    return {
        "p50": percentile(samples, 50) * 1000,
        "p95": percentile(samples, 95) * 1000,
        "p99": percentile(samples, 99) * 1000,
        "mean": statistics.fmean(samples) * 1000,
    }


@contextmanager
def timed(into: list[float]) -> Iterator[None]:
    start = time.perf_counter()
    yield
    into.append(time.perf_counter() - start)


def print_table(title: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print("| operation | p50 ms | p95 ms | p99 ms | mean ms |")
    print("|---|---|---|---|---|")
    for name, s in rows.items():
        print(f"| {name} | {s['p50']:.2f} | {s['p95']:.2f} | {s['p99']:.2f} | {s['mean']:.2f} |")
