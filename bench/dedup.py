"""Offline dedup decision quality on a labelled set of memory pairs (bench/data/dedup_pairs.jsonl).

Embeds every text with the bundled local model (all-MiniLM-L6-v2), then decides each pair the
way the write pipeline does without an LLM: an exact match after normalisation (NFC, casefold,
whitespace collapse) or cosine >= the upper threshold is a duplicate; between the thresholds
``rules.decide_duplicate`` answers merge / replace / keep_both; below the lower one the new
memory is stored as new. Prints precision and recall per predicted class, the similarity band
each gold label falls in (are 0.98 / 0.70 the right cuts?), and the headline precision of the
duplicate call.

    .venv/bin/python bench/dedup.py [--thresholds 0.98 0.70] [--no-guard] [--data FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from memvault.embedding import LocalEmbedder
from memvault.pipeline.rules import decide_duplicate
from memvault.text import for_hash

DATA = Path(__file__).parent / "data" / "dedup_pairs.jsonl"
# Gold label → the outcome that is right for it.
EXPECTED = {
    "duplicate": "duplicate",
    "merge": "merge",
    "replace": "replace",
    "keep_both": "keep_both",
    "unrelated": "new",
}
CLASSES = ("duplicate", "merge", "replace", "keep_both", "new")
SEPARATE = {"keep_both", "new"}  # either way the new memory is stored beside the old one


@dataclass(frozen=True)
class Outcome:
    label: str
    kind: str
    similarity: float
    band: str
    predicted: str


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # the vectors are normalised


def band_of(similarity: float, exact: bool, upper: float, lower: float) -> str:
    if exact:
        return "exact"
    if similarity >= upper:
        return f">= {upper:.2f}"
    if similarity >= lower:
        return f"{lower:.2f}-{upper:.2f}"
    return f"< {lower:.2f}"


def decide(
    existing: str, new: str, similarity: float, upper: float, lower: float, guard: bool
) -> str:
    if for_hash(existing) == for_hash(new):
        return "duplicate"
    if similarity >= upper:
        if not guard:
            return "duplicate"
        # As the pipeline does: the rules still see near-identical pairs, and only a merge
        # verdict (same content) stays a duplicate; "2 cats" / "3 cats" sits near 0.99.
        action = decide_duplicate(existing, new, similarity).action
        return "duplicate" if action == "merge" else action
    if similarity >= lower:
        return decide_duplicate(existing, new, similarity).action
    return "new"


def precision_recall(pairs: list[tuple[str, str]], cls: str) -> tuple[float, float, int, int]:
    """(precision, recall, predicted count, support) of one class over (gold, predicted)."""
    predicted = sum(1 for _, p in pairs if p == cls)
    support = sum(1 for g, _ in pairs if g == cls)
    hits = sum(1 for g, p in pairs if g == p == cls)
    return (
        hits / predicted if predicted else float("nan"),
        hits / support if support else float("nan"),
        predicted,
        support,
    )


def print_classes(title: str, pairs: list[tuple[str, str]], classes: tuple[str, ...]) -> None:
    print(f"\n{title}")
    print("| predicted class | precision | recall | predicted | support |")
    print("|---|---|---|---|---|")
    for cls in classes:
        p, r, n, support = precision_recall(pairs, cls)
        print(f"| {cls} | {p:.3f} | {r:.3f} | {n} | {support} |")
    correct = sum(1 for g, p in pairs if g == p)
    print(f"| **all** | accuracy {correct / len(pairs):.3f} | | {len(pairs)} | {len(pairs)} |")


def print_bands(outcomes: list[Outcome], bands: list[str], key: str) -> None:
    counts = Counter((getattr(o, key), o.band) for o in outcomes)
    rows = sorted({getattr(o, key) for o in outcomes})
    print(f"\nsimilarity band of each gold {key}")
    print(f"| {key} | " + " | ".join(bands) + " | min cos | max cos |")
    print("|---|" + "---|" * (len(bands) + 2))
    for row in rows:
        sims = [o.similarity for o in outcomes if getattr(o, key) == row]
        cells = " | ".join(str(counts[(row, b)]) for b in bands)
        print(f"| {row} | {cells} | {min(sims):.3f} | {max(sims):.3f} |")


def print_confusion(outcomes: list[Outcome]) -> None:
    counts = Counter((o.label, o.predicted) for o in outcomes)
    print("\nconfusion (rows: gold label, columns: predicted)")
    print("| gold | " + " | ".join(CLASSES) + " |")
    print("|---|" + "---|" * len(CLASSES))
    for label in EXPECTED:
        print(f"| {label} | " + " | ".join(str(counts[(label, c)]) for c in CLASSES) + " |")


async def run(data: Path, upper: float, lower: float, guard: bool) -> None:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    texts = sorted({t for row in rows for t in (row["existing"], row["new"])})
    started = time.perf_counter()
    vectors = dict(zip(texts, await LocalEmbedder().embed_batch(texts), strict=True))
    embed_s = time.perf_counter() - started

    outcomes: list[Outcome] = []
    started = time.perf_counter()
    for row in rows:
        existing, new = row["existing"], row["new"]
        similarity = cosine(vectors[existing], vectors[new])
        exact = for_hash(existing) == for_hash(new)
        outcomes.append(
            Outcome(
                label=row["label"],
                kind=row["kind"],
                similarity=similarity,
                band=band_of(similarity, exact, upper, lower),
                predicted=decide(existing, new, similarity, upper, lower, guard),
            )
        )
    decide_ms = (time.perf_counter() - started) * 1000 / len(rows)

    print(
        f"{len(rows)} pairs, {len(texts)} texts embedded in {embed_s:.1f} s; "
        f"decision {decide_ms:.3f} ms/pair; thresholds {upper:.2f} / {lower:.2f}"
        + ("; rules also above the upper threshold" if guard else "")
    )
    pairs = [(EXPECTED[o.label], o.predicted) for o in outcomes]
    print_classes("offline dedup decision, per predicted class", pairs, CLASSES)
    stored_apart = [
        ("separate" if g in SEPARATE else g, "separate" if p in SEPARATE else p) for g, p in pairs
    ]
    print_classes(
        "secondary: keep_both and new both count as 'stored separately'",
        stored_apart,
        ("duplicate", "merge", "replace", "separate"),
    )
    bands = ["exact", f">= {upper:.2f}", f"{lower:.2f}-{upper:.2f}", f"< {lower:.2f}"]
    print_bands(outcomes, bands, "label")
    print_bands(outcomes, bands, "kind")
    print_confusion(outcomes)
    precision, _, flagged, _ = precision_recall(pairs, "duplicate")
    verdict = "meets" if precision >= 0.95 else "BELOW"
    print(
        f"\nprecision on duplicate_exact: {precision:.3f} over {flagged} pairs flagged "
        f"duplicate ({verdict} the 0.95 target)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--thresholds",
        nargs=2,
        type=float,
        default=[0.98, 0.70],
        metavar=("UPPER", "LOWER"),
        help="cosine at/above UPPER is a duplicate; below LOWER is stored as new",
    )
    parser.add_argument(
        "--no-guard",
        action="store_true",
        help="treat every non-exact pair above UPPER as a duplicate, without asking the rules "
        "(the product asks them: only a 'merge' verdict stays a duplicate)",
    )
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    upper, lower = args.thresholds
    if not 0 <= lower <= upper <= 1:
        parser.error("thresholds must satisfy 0 <= LOWER <= UPPER <= 1")
    asyncio.run(run(args.data, upper, lower, not args.no_guard))


if __name__ == "__main__":
    main()
