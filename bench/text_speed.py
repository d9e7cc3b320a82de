"""Speed of the offline text rules on the write path, printed (and checked against their
budgets) here rather than asserted in the test suite, where a busy machine made them flaky.

    .venv/bin/python bench/text_speed.py

- enrichment (dates, importance, categories) per short memory, once warm: budget 2 ms;
- enrichment of a 32,000-character memory: budget 2 s;
- PII detection over 500 characters dense with look-alikes (a guard against catastrophic
  backtracking in the detectors): budget 10 ms;
- offline extraction of pathological texts (one 50,000-character word, 5,000 names, …:
  once quadratic scans that ran for minutes; about 0.05-0.5 s now): budget 5 s each.
Exits 1 when a figure is over its budget.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from memvault.graph.extract_rules import extract_offline
from memvault.language.pii import detect
from memvault.pipeline.rules import enrich

REF = datetime(2024, 5, 1, 12, tzinfo=UTC)
PII_TEXT = (
    "Alice said the key idea is simple: ship version 1.2.3 on 2024-05-01 at 10:30, "
    "mail bob@example.com or call +44 20 7946 0958, card 4111 1111 1111 1111, "
    "ssn 123-45-6789, IBAN DE89 3704 0044 0532 0130 00, host 10.1.2.3, "
    "token: 8f3kd92jd83kdm2q, my password is hunter2 and I forgot the other password. "
) * 2


PATHOLOGICAL = {
    "one long word": "A" * 50_000,
    "many names": " ".join(["Dana"] * 5_000),
    "many auxiliaries": "I " + "am not still now just " * 2_000 + "live in Lyon",
    "long favourite": "my favourite " + "x " * 10_000 + "is",
}


def _extract(text: str) -> object:
    return extract_offline(text, speaker="Sam", reference_time=REF)


def _median_s(work: Callable[[], object], repeats: int) -> float:
    work()  # warm caches
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    shorts = ["Dentist appointment tomorrow at 3pm", "Alice prefers tea", "I'm sick today"]
    figures = [
        (
            "enrich, short memory",
            _median_s(lambda: [enrich(t, REF) for t in shorts], 20) / 3,
            0.002,
        ),
        (
            "enrich, 32,000 characters",
            _median_s(
                lambda: enrich("I moved to Lisbon on 3 June and like it there. " * 700, REF), 3
            ),
            2.0,
        ),
        ("PII detect, 500 characters", _median_s(lambda: detect(PII_TEXT[:500]), 20), 0.01),
        *(
            (f"extract, {name}", _median_s(lambda t=text: _extract(t), 1), 5.0)
            for name, text in PATHOLOGICAL.items()
        ),
    ]
    over = False
    print(f"{'what':<30} {'median':>12} {'budget':>10}")
    for name, seconds, budget in figures:
        flag = "" if seconds <= budget else "  OVER"
        over |= bool(flag)
        print(f"{name:<30} {seconds * 1000:>9.2f} ms {budget * 1000:>7.0f} ms{flag}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
