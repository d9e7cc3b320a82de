"""Updates win for questions about now: does the newer statement about the same thing rank
above the one it replaced, in search and in remember(), and does a question about then still
find the old one first? (bench/data/update_first.json, frozen)

    .venv/bin/python bench/update_first.py [--cases u00 u07] [--show]

Each case is a fresh user of one store: the old statement in conversation ``a`` (January to
March 2025) between a greeting and an assistant's tip, the update in conversation ``b`` months
later among chit-chat, both through ``add_messages(..., wait=True)`` with the conversation's
date as ``occurred_at`` (offline: no LLM, so the offline extractor reads every turn). Then:

- **search, now**: the present-tense question, no reference time; right when the update ranks
  above the old statement in the top 10 (or the old one is not there at all);
- **remember, now**: the same question through ``remember()``; right when the first line of
  the prompt that names either value (``old_key`` / ``new_key``: a turn, a fact or a fact's
  source) names the new one; **old past or absent**: every line naming the old value and not
  the new is marked as past (``until``, or the graph's ``(formerly)``) or missing;
- **search, then**: the same question with ``reference_time`` two weeks after the old
  statement; right when the old statement ranks above the update (or the update is absent);
- **search, past**: the past-tense question naming the month ("In February 2025, where did
  the user live?"), no reference time; right when the old statement ranks first of the two;
- **remember, then**: ``remember()`` with the reference time; the first line naming a value
  names the old one.

Every figure for all cases and each half (even and odd case index) apart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings

_HAS_SWITCH = "search_updates_first" in Settings.model_fields
DATA = Path(__file__).resolve().parent / "data" / "update_first.json"
MEASURES = (
    "search now: update first",
    "remember now: update first",
    "remember now: old past or absent",
    "search then: old first",
    "search past (month named): old first",
    "remember then: old first",
)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def place(texts: list[str], wanted: str) -> int | None:
    return next((n for n, t in enumerate(texts) if t == wanted), None)


def before(first: int | None, second: int | None) -> bool:
    """``first`` ranks above ``second``: it is there, and the other is lower or absent."""
    return first is not None and (second is None or first < second)


def value_lines(prompt: str) -> list[str]:
    """The prompt's memory lines, each with the source lines under it."""
    lines: list[str] = []
    for line in prompt.splitlines():
        if line.startswith("  ") and lines:
            lines[-1] += "\n" + line
        elif line.startswith("- "):
            lines.append(line)
    return lines


def lead(prompt: str, case: dict[str, Any]) -> str | None:
    """'new' or 'old': the value the first line naming either names (the update's line may
    name both: it is the new one)."""
    old, new = case["old_key"].casefold(), case["new_key"].casefold()
    for line in value_lines(prompt):
        text = line.casefold()
        if new in text:
            return "new"
        if old in text:
            return "old"
    return None


def _past(line: str) -> bool:
    """A line marked as no longer holding: "until <when>", or the graph's "(formerly)"."""
    return "until " in line or "(formerly)" in line


def old_past_or_absent(prompt: str, case: dict[str, Any]) -> bool:
    old, new = case["old_key"].casefold(), case["new_key"].casefold()
    for line in value_lines(prompt):
        for part in line.split("\n"):
            text = part.casefold()
            if old in text and new not in text and not _past(text):
                # a source under a fact that is marked past is past too
                if part.startswith("  ") and _past(line.split("\n")[0].casefold()):
                    continue
                return False
    return True


async def ingest(memory: AsyncMemory, case: dict[str, Any]) -> str:
    user = f"upd-{case['id']}"
    for name in ("a", "b"):
        conversation = case[name]
        await memory.add_messages(
            conversation["messages"],
            user_id=user,
            conversation_id=f"{case['id']}-{name}",
            occurred_at=moment(conversation["at"]),
            wait=True,
        )
    return user


async def ask(memory: AsyncMemory, case: dict[str, Any], user: str, show: bool) -> dict[str, bool]:
    then = moment(case["then_at"])
    now_hits = [
        h.content for h in (await memory.search(case["now"], user_id=user, limit=10)).results
    ]
    then_hits = [
        h.content
        for h in (
            await memory.search(case["now"], user_id=user, limit=10, reference_time=then)
        ).results
    ]
    past_hits = [
        h.content for h in (await memory.search(case["past"], user_id=user, limit=10)).results
    ]
    now_prompt = (await memory.remember(case["now"], user_id=user)).as_prompt()
    then_prompt = (
        await memory.remember(case["now"], user_id=user, reference_time=then)
    ).as_prompt()
    old, new = case["old"], case["new"]
    got = {
        MEASURES[0]: before(place(now_hits, new), place(now_hits, old)),
        MEASURES[1]: lead(now_prompt, case) == "new",
        MEASURES[2]: old_past_or_absent(now_prompt, case),
        MEASURES[3]: before(place(then_hits, old), place(then_hits, new)),
        MEASURES[4]: before(place(past_hits, old), place(past_hits, new)),
        MEASURES[5]: lead(then_prompt, case) == "old",
    }
    if show and not all(got.values()):
        print(f"\n## {case['id']} ({case['topic']}): {[m for m, ok in got.items() if not ok]}")
        print("search now:", *now_hits[:4], sep="\n  ")
        print("search then:", *then_hits[:4], sep="\n  ")
        print("search past:", *past_hits[:4], sep="\n  ")
        print("remember now:\n" + now_prompt)
        print("remember then:\n" + then_prompt)
    return got


def share(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.3f} ({sum(values)}/{len(values)})" if values else "-"


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", help="only these case ids")
    parser.add_argument("--show", action="store_true", help="print what a wrong case returned")
    args = parser.parse_args()
    cases = json.loads(DATA.read_text())["cases"]
    if args.cases:
        cases = [c for c in cases if c["id"] in set(args.cases)]
    results: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(
            Settings(
                data_dir=Path(tmp) / "data",
                run_worker=False,
                embedding_cache_ttl_s=0,
                # on where the build has it (off by default); a build without it runs as it is
                **({"search_updates_first": True} if _HAS_SWITCH else {}),
            )
        )
        try:
            for case in cases:
                user = await ingest(memory, case)
                got = await ask(memory, case, user, args.show)
                for measure, ok in got.items():
                    results["all"][measure].append(ok)
                    results[case["half"]][measure].append(ok)
        finally:
            await memory.close()
    print(
        f"\nUpdates first ({DATA.name}, {len(cases)} cases, {time.perf_counter() - started:.0f} s)"
    )
    print("| measure | all | even | odd |")
    print("|---|---|---|---|")
    for measure in MEASURES:
        cells = " | ".join(share(results[h][measure]) for h in ("all", "even", "odd"))
        print(f"| {measure} | {cells} |")


if __name__ == "__main__":
    asyncio.run(main())
