"""Fusion and ranking changes measured in seconds, over the candidate lists of bench/recall.py.

    .venv/bin/python bench/fusion_replay.py capture [--out /tmp/recall_lists.pkl] \
        [--sets locomo prefeval facts longmemeval]
    .venv/bin/python bench/fusion_replay.py score [--lists /tmp/recall_lists.pkl] \
        [--set vector_floor=0.0 rrf_k=15] [--set ...]

``capture`` imports the sets as bench/recall.py does and runs every question once with
the default recipe, keeping what the search fetched before it ranked: each list's rows (ids,
distances, BM25 scores, dates), the keyword ceilings, the time span and the probe weights.
``score`` ranks those same lists again through ``search._rank`` under the default recipe with
the given fields of ``SearchConfig`` changed (one row per ``--set``, the unchanged recipe
first), and prints R@1/5/10 per set side by side. Only what ranks the candidates can change
here (fusion weights, evidence knobs, rrf_k, the score blend); a change to what is fetched
(candidate counts, keys, BM25 itself) needs bench/recall.py.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import pickle
import tempfile
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings
from memvault.language.when import about_now
from memvault.retrieval import search
from recall import KS, LOADERS

DEFAULT = Path(tempfile.gettempdir()) / "recall_lists.pkl"


async def capture(out: Path, names: list[str]) -> None:
    recipe = search.RECIPES["hybrid"]
    captured: dict[str, Any] = {}
    rank = search._rank

    def keep(lists: Any, weights: Any, *args: Any, **kwargs: Any) -> Any:
        ceilings = args[4] if len(args) > 4 else kwargs.get("ceilings")
        captured["last"] = {
            "lists": {name: list(rows) for name, rows in lists.items()},
            # Per probe, so a recipe's own list weights can be applied again.
            "probe_weights": {
                name: w
                / (recipe.vector_weight if name.endswith(":vector") else recipe.keyword_weight)
                for name, w in weights.items()
            },
            "ceilings": dict(ceilings or {}),
            # The moment the question was asked, which ages are measured from.
            "now": args[1],
            "when": args[2],
            "superseded": kwargs.get("superseded", frozenset()),
        }
        return rank(lists, weights, *args, **kwargs)

    search._rank = keep
    sets: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(data_dir=Path(tmp) / "data", run_worker=False, embedding_cache_ttl_s=0)
        )
        for name in names:
            load, path = LOADERS[name]
            sets[name] = []
            for q in await load(memory, path, False):
                await memory.search(
                    q.text,
                    user_id=q.user,
                    limit=max(KS),
                    recipe="hybrid",
                    reference_time=q.asked_at,
                    track_access=False,
                )
                sets[name].append({**captured.pop("last"), "gold": q.gold, "query": q.text})
            print(f"  {name}: {len(sets[name])} questions captured", flush=True)
        await memory.close()
    out.write_bytes(pickle.dumps(sets))


def _key(row: Any) -> str:
    return str(row.metadata.get("dia_id") or row.metadata.get("key"))


def score(sets: dict[str, list[dict[str, Any]]], recipe: search.SearchConfig) -> dict[str, str]:
    """R@1/5/10 per set, then any@10 and all@10 (a / every gold item in the top 10), then,
    over questions about now with gold items of different dates in the top 10, the share that
    rank the newest of them above the oldest."""
    figures = {}
    for name, items in sets.items():
        recall = dict.fromkeys(KS, 0.0)
        every = some = 0
        newest_first: list[bool] = []
        for item in items:
            weights = {
                n: w * (recipe.vector_weight if n.endswith(":vector") else recipe.keyword_weight)
                for n, w in item["probe_weights"].items()
            }
            ranked = search._rank(
                item["lists"],
                weights,
                recipe,
                item["now"],
                item["when"],
                max(KS),
                item["ceilings"] if recipe.vector_weight and recipe.keyword_weight else None,
                superseded=item.get("superseded", frozenset()),
            )
            found = [_key(row) for row, _ in ranked]
            for k in KS:
                recall[k] += len(set(found[:k]) & item["gold"]) / len(item["gold"])
            every += item["gold"] <= set(found)
            some += bool(item["gold"] & set(found))
            dated = [row.occurred_at for row, _ in ranked if _key(row) in item["gold"]]
            if about_now(item.get("query", "")) and len(set(dated)) > 1:
                newest_first.append(dated.index(max(dated)) < dated.index(min(dated)))
        cells = [f"{recall[k] / len(items):.3f}" for k in KS]
        cells += [f"{some / len(items):.3f}", f"{every / len(items):.3f}"]
        if newest_first:
            cells.append(f"{sum(newest_first)}/{len(newest_first)}")
        figures[name] = " / ".join(cells)
    return figures


def _changed(pairs: list[str]) -> dict[str, Any]:
    fields = {f.name: f for f in dataclasses.fields(search.SearchConfig)}
    changes: dict[str, Any] = {}
    for pair in pairs:
        name, _, text = pair.partition("=")
        if name not in fields:
            raise SystemExit(f"no SearchConfig field {name!r}")
        changes[name] = (
            None if text == "none" else type(getattr(search.RECIPES["hybrid"], name))(float(text))
        )
    return changes


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["capture", "score"])
    parser.add_argument("--out", "--lists", dest="path", type=Path, default=DEFAULT)
    parser.add_argument("--sets", dest="names", nargs="+", default=list(LOADERS))
    parser.add_argument("--set", dest="sets", nargs="+", action="append", default=[])
    args = parser.parse_args()
    if args.mode == "capture":
        asyncio.run(capture(args.path, args.names))
    else:
        data = pickle.loads(args.path.read_bytes())
        names = list(data)
        print(f"| change | {' | '.join(f'{n} R@1/5/10, any/all@10' for n in names)} |")
        print(f"|---|{'---|' * len(names)}")
        for pairs in [[], *args.sets]:
            recipe = dataclasses.replace(search.RECIPES["hybrid"], **_changed(pairs))
            figures = score(data, recipe)
            label = " ".join(pairs) or "default"
            print(f"| {label} | {' | '.join(figures[n] for n in names)} |", flush=True)
