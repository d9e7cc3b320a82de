"""The ``remember()`` bundle: what is recalled, how it is scored and merged, and the prompt
block it renders, cut to a token budget.

Scoring is data: each recalled item scores ``weights[kind] x relevance + weights["recency"] x
recency``, relevance in 0..1 within its kind, recency halving every half-life. Context that is
not ranked (profile, active goals, the live session, what happened lately) comes first in the
prompt; ranked items fill what budget is left, best first.

Each text is shown once: a line whose text (or memory, or conversation turn) an earlier line
already shows is left out, and a fact carries the memory it was learned from under it instead of
that memory being a second item. The budget is counted on what is shown, after that: a line
that does not fit is left out whole (a fact whose source does not fit is shown without it), and
the prompt is exactly the lines counted, so ``tokens`` is the prompt's length in the model's
tokens and never exceeds the budget.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import accumulate
from typing import Any, Literal

from pydantic import BaseModel, Field

from memvault.cognitive.kinds import Goal, Profile, WorkingContext
from memvault.text import WORD, fold

ItemKind = Literal["episodic", "facts", "entities", "procedural"]
DEFAULT_WEIGHTS = {
    "episodic": 0.30,
    "facts": 0.25,
    "entities": 0.20,
    "procedural": 0.15,
    "recency": 0.10,
}
MAX_ITEM_CHARS = 1_000
# A tool's output is evidence of what happened, not something to read whole in a prompt.
MAX_OUTCOME_CHARS = 200
# What a turn past its conversation's share is worth, relative to its own score.
DIVERSITY_PENALTY = 0.5
# What happened: how far back, and how much of it, the bundle shows.
RECENT_DAYS = 30
RECENT_GOALS = 3
RECENT_TOOL_CALLS = 5


class BundleItem(BaseModel):
    kind: ItemKind
    id: str
    channel: str = Field(description="the channel it was recalled from")
    content: str
    score: float
    scores: dict[str, float] = Field(description="relevance, recency and the weights applied")
    conversation_id: str | None = None
    occurred_at: datetime | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class ToolOutcome(BaseModel):
    """A tool call lately made, and how it went."""

    id: str
    tool_name: str
    channel: str
    conversation_id: str | None
    success: bool
    summary: str = Field(description="the output (or, when it failed, the error), shortened")
    latency_ms: float | None
    created_at: datetime


class BundleDiagnostics(BaseModel):
    timings_ms: dict[str, float] = Field(description="wall time per kind, and total")
    candidates: dict[str, int] = Field(description="what each kind offered before the cut")
    diversity_demoted: int = Field(
        description="turns past the per-conversation share, their scores scaled down"
    )
    budget_dropped: int = Field(description="lines that did not fit the token budget")
    duplicates_dropped: int = Field(
        default=0, description="lines left out because an earlier line shows the same text"
    )
    entities_below_bar: int = Field(
        default=0,
        description="entities left out: no current fact about them and mentioned by fewer "
        "than two memories",
    )
    degraded: list[str] = Field(
        default=[], description="kinds left out because their store was unavailable"
    )


class MemoryBundle(BaseModel):
    query: str
    user_id: str
    channel: str
    channels: list[str] = Field(description="recalled: the channel and _global")
    episodic: list[BundleItem] = []
    semantic: list[BundleItem] = Field(
        default=[], description="facts and entities (from the knowledge graph)"
    )
    procedural: list[BundleItem] = []
    goals: list[Goal] = []
    finished_goals: list[Goal] = Field(
        default=[], description="goals completed or abandoned lately, with their results"
    )
    tool_outcomes: list[ToolOutcome] = Field(
        default=[], description="tool calls lately made: this session's first, then the latest"
    )
    profile: Profile | None = None
    working: WorkingContext | None = None
    weights: dict[str, float]
    tokens: int = Field(description="the prompt's length in the embedding model's tokens")
    budget_tokens: int
    diagnostics: BundleDiagnostics

    @property
    def facts(self) -> list[BundleItem]:
        return [i for i in self.semantic if i.kind == "facts"]

    @property
    def entities(self) -> list[BundleItem]:
        return [i for i in self.semantic if i.kind == "entities"]

    @property
    def items(self) -> list[BundleItem]:
        """Every ranked item, best first."""
        merged = [*self.episodic, *self.semantic, *self.procedural]
        return sorted(merged, key=lambda i: (-i.score, i.kind, i.id))

    def as_prompt(self) -> str:
        return "\n".join(_cut(_lines(self), lambda _: 0, 0).shown)


# --- scoring -----------------------------------------------------------------------------------


def weighted(
    kind: ItemKind, relevance: float, fresh: float, weights: dict[str, float]
) -> tuple[float, dict[str, float]]:
    w_kind, w_recency = weights.get(kind, 0.0), weights.get("recency", 0.0)
    score = w_kind * relevance + w_recency * fresh
    return score, {"relevance": relevance, "recency": fresh, "weight": w_kind}


def diversify(
    items: Iterable[BundleItem], per_conversation: int, penalty: float = DIVERSITY_PENALTY
) -> tuple[list[BundleItem], int]:
    """A rerank, not a filter: past ``per_conversation`` items from one conversation (best
    first), an item's score is scaled by ``penalty``, so other conversations' items come before
    it when the budget is tight. Returns the items best first and how many were demoted."""
    taken: Counter[str] = Counter()
    reranked, demoted = [], 0
    for item in sorted(items, key=lambda i: (-i.score, i.id)):
        if item.conversation_id is not None:
            taken[item.conversation_id] += 1
            if taken[item.conversation_id] > per_conversation:
                demoted += 1
                item = item.model_copy(
                    update={
                        "score": item.score * penalty,
                        "scores": {**item.scores, "diversity": penalty},
                    }
                )
        reranked.append(item)
    return sorted(reranked, key=lambda i: (-i.score, i.id)), demoted


def attach_sources(
    semantic: list[BundleItem], episodic: list[BundleItem]
) -> tuple[list[BundleItem], list[BundleItem]]:
    """A fact and the memory it was learned from are one item, the fact first: a recalled
    memory that is a recalled fact's source moves under the fact (``detail["sources"]``).
    The best of the facts learned from a memory carries it, and ranks as the better of the
    two; the others keep their own score. Returns (semantic, episodic)."""
    recalled = {i.id: i for i in episodic}
    facts = [i for i in semantic if i.kind == "facts"]
    carrier: dict[str, str] = {}  # memory id: the fact that ranks with it
    for fact in sorted(facts, key=lambda i: (-i.score, i.id)):
        for m in fact.detail.get("memory_ids", []):
            if m in recalled:
                carrier.setdefault(m, fact.id)
    merged: list[BundleItem] = []
    for item in semantic:
        found = [recalled[m] for m in item.detail.get("memory_ids", []) if m in recalled]
        if item.kind != "facts" or not found:
            merged.append(item)
            continue
        carried = [s.score for s in found if carrier[s.id] == item.id]
        sources = [
            {
                "id": s.id,
                "content": s.content,
                "channel": s.channel,
                "conversation_id": s.conversation_id,
                "turn_index": s.detail.get("turn_index"),
                "occurred_at": s.occurred_at,
            }
            for s in sorted(found, key=lambda s: carrier[s.id] != item.id)
        ]
        update: dict[str, Any] = {"detail": {**item.detail, "sources": sources}}
        if carried and max(carried) > item.score:
            update["score"] = max(carried)
            update["scores"] = {**item.scores, "source": max(carried)}
        merged.append(item.model_copy(update=update))
    merged.sort(key=lambda i: (-i.score, i.kind, i.id))
    return merged, [i for i in episodic if i.id not in carrier]


# What an item a later recalled memory updates keeps of the score of the item showing that
# update: just under it, so the update leads and the older one still follows as history.
REPLACED_SHARE = 0.99


def show_replaced(
    semantic: list[BundleItem],
    episodic: list[BundleItem],
    replaced: dict[str, tuple[str, datetime]],
) -> tuple[list[BundleItem], list[BundleItem]]:
    """Turns, and facts learned only from turns, that a later recalled memory updates
    (``replaced``: memory id -> (the later memory's id, when it was said); search's
    ``replaced_by``) are shown as past ("until October 2025") and rank under the item that shows
    the update, or at half their score when none does. Returns (semantic, episodic)."""
    if not replaced:
        return semantic, episodic
    shown: dict[str, float] = {}  # memory id: the best score of an item showing it
    for item in (*semantic, *episodic):
        ids = [item.id] if item.kind == "episodic" else []
        ids += [str(s["id"]) for s in item.detail.get("sources", [])]
        for m in ids:
            shown[m] = max(shown.get(m, 0.0), item.score)

    def past(item: BundleItem, memory_ids: list[str]) -> BundleItem:
        if not memory_ids or any(m not in replaced for m in memory_ids):
            return item
        later = [shown[replaced[m][0]] for m in memory_ids if replaced[m][0] in shown]
        score = min(item.score, min(later) * REPLACED_SHARE) if later else item.score / 2
        return item.model_copy(
            update={
                "score": score,
                "scores": {**item.scores, "replaced": score / item.score if item.score else 0.0},
                "detail": {**item.detail, "until": max(replaced[m][1] for m in memory_ids)},
            }
        )

    semantic = [
        past(i, [str(m) for m in i.detail.get("memory_ids", [])]) if i.kind == "facts" else i
        for i in semantic
    ]
    episodic = [past(i, [i.id]) for i in episodic]
    semantic.sort(key=lambda i: (-i.score, i.kind, i.id))
    episodic.sort(key=lambda i: (-i.score, i.id))
    return semantic, episodic


# --- the prompt and the budget -----------------------------------------------------------------

HEADERS = {
    "profile": "## Profile",
    "goals": "## Active goals",
    "working": "## This session",
    "happened": "## What happened",
    "memories": "## Relevant memories",
}


def _clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def same_text(text: str) -> tuple[str, str]:
    """What two texts are compared by: their words, case folded (punctuation, spacing and
    capitals do not make a text new)."""
    return ("text", " ".join(WORD.findall(fold(text))))


# Words a description made from a tool sequence wraps it in ("Tool sequence that worked: a ->
# b"): with the tools' own names, such a description says nothing the steps do not.
_SEQUENCE_WORDS = frozenset({"tool", "tools", "sequence", "steps", "that", "worked", "then"})


def restates(description: str, sequence: Sequence[str]) -> bool:
    """Whether ``description`` only names the tools of ``sequence``."""
    words = set(WORD.findall(fold(description)))
    return bool(words) and words <= _SEQUENCE_WORDS | {fold(t) for t in sequence}


def strategy_text(
    description: str, sequence: Sequence[str], success_count: int, failure_count: int
) -> str:
    """A strategy as a reader takes it in: what it is for, its steps numbered, and how it went
    ("Book a hotel: 1. hotel_search 2. book_hotel (3 succeeded, 1 failed)"). A description
    that only restates the steps is not said twice."""
    steps = " ".join(f"{n}. {tool}" for n, tool in enumerate(sequence, 1))
    if success_count or failure_count:
        record = f"{success_count} succeeded, {failure_count} failed"
    else:
        record = "no outcomes recorded yet"
    name = description.strip().rstrip(":")
    if not sequence:
        return f"{name} ({record})"
    if restates(name, sequence):
        name = "Steps that worked"
    return f"{name}: {steps} ({record})"


def item_line(item: BundleItem) -> str:
    """An item's line, without the sources a fact may carry under it (``source_line``)."""
    if item.kind == "procedural":
        text = strategy_text(
            item.content,
            item.detail.get("tool_sequence", []),
            item.detail.get("success_count", 0),
            item.detail.get("failure_count", 0),
        )
        return f"- [strategy, {item.channel}] {_clip(text)}"
    when = f" {item.occurred_at:%Y-%m-%d}" if item.occurred_at else ""
    until = item.detail.get("until")
    if isinstance(until, str):  # a bundle read back from JSON
        until = datetime.fromisoformat(until)
    if isinstance(until, datetime):
        # Updated later: what held until then, not what holds now.
        when += f", until {until:%B %Y}"
    label = {"episodic": "turn", "facts": "fact", "entities": "entity"}[item.kind]
    return f"- [{label}, {item.channel}{when}] {_clip(item.content)}"


def source_line(source: dict[str, Any]) -> str:
    """A memory a fact was learned from, shown under the fact (part of its line)."""
    return f"\n  source: {_clip(source['content'])}"


def goal_line(goal: Goal) -> str:
    due = f", due {goal.deadline:%Y-%m-%d}" if goal.deadline else ""
    state = ", blocked" if goal.status == "blocked" else ""
    return f"- {_clip(goal.description)} (priority {goal.priority}{due}{state})"


def finished_line(goal: Goal) -> str:
    when = f" {goal.completed_at:%Y-%m-%d}" if goal.completed_at else ""
    result = f" -> {_clip(goal.result)}" if goal.result else ""
    return f"- [goal {goal.status}{when}] {_clip(goal.description)}{result}"


def outcome_line(outcome: ToolOutcome) -> str:
    how = "succeeded" if outcome.success else "failed"
    said = f": {outcome.summary}" if outcome.summary else ""
    return f"- [tool {outcome.tool_name} {how} {outcome.created_at:%Y-%m-%d %H:%M}]{said}"


def outcome_summary(output: Any, error: str | None, success: bool) -> str:
    """What a prompt needs of a call: its output, or why it failed, shortened."""
    said = error if not success and error else output
    if said is None or said == "":
        return ""
    return _clip(_value(said), MAX_OUTCOME_CHARS)


Keys = frozenset[Hashable]


@dataclass(frozen=True)
class _Source:
    id: str
    text: str
    keys: Keys


@dataclass(frozen=True)
class _Line:
    """One line of the prompt: its section, what it renders (``ref``), its text, and the
    identities of what it shows (``keys``). A fact's line carries along the memories it was
    learned from (``sources``) that no earlier line shows, budget allowing."""

    section: str
    ref: tuple[str, Any]
    text: str
    keys: Keys
    sources: tuple[_Source, ...] = ()


def _profile_lines(profile: Profile | None) -> list[_Line]:
    if profile is None:
        return []
    found: list[tuple[str, tuple[str, Any]]] = []
    if profile.communication_style:
        found.append((f"style: {_clip(profile.communication_style)}", ("style", None)))
    if profile.expertise:
        found.append((f"expertise: {', '.join(profile.expertise)}", ("expertise", None)))
    for key, value in sorted(profile.preferences.items()):
        found.append((f"prefers: {key} = {_clip(_value(value))}", ("preference", key)))
    return [_Line("profile", ref, text, frozenset({ref})) for text, ref in found]


def _working_lines(working: WorkingContext | None) -> list[_Line]:
    if working is None:
        return []
    found: list[_Line] = []
    if working.active_goal:
        found.append(
            _Line(
                "working",
                ("goal", None),
                f"goal now: {_clip(working.active_goal)}",
                frozenset({same_text(working.active_goal)}),
            )
        )
    for n, thought in enumerate(working.thoughts):
        found.append(
            _Line(
                "working",
                ("thought", n),
                f"thought: {_clip(thought)}",
                frozenset({same_text(thought)}),
            )
        )
    for key, value in sorted(working.values.items()):
        ref = ("value", key)
        found.append(_Line("working", ref, f"{key}: {_clip(_value(value))}", frozenset({ref})))
    for n, turn in enumerate(working.turns):
        content = str(turn.get("content", ""))
        keys: set[Hashable] = {same_text(content)}
        if isinstance(turn.get("index"), int):
            keys.add(("turn", working.conversation_id, turn["index"]))
        text = f"{turn.get('role', '?')}: {_clip(content)}"
        found.append(_Line("working", ("turn", n), text, frozenset(keys)))
    return found


def _item_keys(item: BundleItem) -> set[Hashable]:
    keys: set[Hashable] = {(item.kind, item.id), same_text(item.content)}
    if item.kind == "episodic":
        keys.add(("memory", item.id))
        if item.conversation_id is not None and item.detail.get("turn_index") is not None:
            keys.add(("turn", item.conversation_id, item.detail["turn_index"]))
    return keys


def _item_lines(item: BundleItem) -> _Line:
    sources = []
    for source in item.detail.get("sources", []):
        keys: set[Hashable] = {("memory", source["id"]), same_text(source["content"])}
        if source.get("conversation_id") is not None and source.get("turn_index") is not None:
            keys.add(("turn", source["conversation_id"], source["turn_index"]))
        sources.append(_Source(source["id"], source_line(source), frozenset(keys)))
    return _Line(
        "memories", ("item", item.id), item_line(item), frozenset(_item_keys(item)), tuple(sources)
    )


def _lines(bundle: MemoryBundle) -> list[_Line]:
    """Every line the bundle may render, in prompt order, before duplicates and the budget."""
    return [
        *_profile_lines(bundle.profile),
        *(
            _Line(
                "goals",
                ("goal", n),
                goal_line(g),
                frozenset({("goal", g.id), same_text(g.description)}),
            )
            for n, g in enumerate(bundle.goals)
        ),
        *_working_lines(bundle.working),
        *(
            _Line(
                "happened",
                ("finished", n),
                finished_line(g),
                frozenset({("goal", g.id), same_text(g.description)}),
            )
            for n, g in enumerate(bundle.finished_goals)
        ),
        *(
            _Line("happened", ("tool", n), outcome_line(o), frozenset({("tool", o.id)}))
            for n, o in enumerate(bundle.tool_outcomes)
        ),
        *(_item_lines(i) for i in bundle.items),
    ]


@dataclass
class _Cut:
    kept: dict[tuple[str, Any], set[str]] = field(default_factory=dict)  # ref: sources shown
    shown: list[str] = field(default_factory=list)  # the prompt's lines, headers included
    tokens: int = 0
    dropped: int = 0
    duplicates: int = 0


def _cut(lines: list[_Line], count: Callable[[str], int], budget: int) -> _Cut:
    """Greedy in prompt order: a line that shows nothing already shown goes in when it (and
    its section's header, the first time) still fits; a fact goes in with its sources that no
    earlier line shows, or, when they do not fit, without them."""
    cut = _Cut()
    seen: set[Hashable] = set()
    opened: set[str] = set()
    for line in lines:
        if line.keys & seen:
            cut.duplicates += 1
            continue
        header = 0 if line.section in opened else count(HEADERS[line.section])
        carried: list[_Source] = []
        known = set(seen)
        for source in line.sources:
            if not source.keys & known:
                carried.append(source)
                known |= source.keys
        forms = [carried, []] if carried else [[]]
        chosen: tuple[str, list[_Source], int] | None = None
        for form in forms:
            # A source starts on a line of its own, and no token crosses a line break.
            cost = header + count(line.text) + sum(count(s.text) for s in form)
            if cut.tokens + cost <= budget:
                chosen = (line.text + "".join(s.text for s in form), form, cost)
                break
        if chosen is None:
            cut.dropped += 1
            continue
        text, form, cost = chosen
        if line.section not in opened:
            opened.add(line.section)
            cut.shown.append(HEADERS[line.section])
        cut.shown.append(text)
        cut.tokens += cost
        cut.kept[line.ref] = {s.id for s in form}
        seen |= line.keys
        for source in form:
            seen |= source.keys
    return cut


# Texts counted in one tokenizer call stay under a model's longest input (256 tokens for the
# default model), which the tokenizer would otherwise warn about.
BATCH_CHARS = 600
KNOWN_COUNTS = 4_096


def counted_together(
    spans: Callable[[str], list[tuple[int, int]]],
    known: MutableMapping[bytes, int] | None = None,
) -> Callable[[list[str]], list[int]]:
    """Token counts of many texts from few tokenizer calls: texts joined by line breaks (which
    no token crosses), each token counted for the text it starts in. One call per line cost
    more than the rest of the cut. ``known``: counts from earlier calls by the texts' digests
    (never the texts), for what a user's bundles show again and again (headers, goals, the
    profile, strategies); at most ``KNOWN_COUNTS`` of them."""

    def count_many(texts: list[str]) -> list[int]:
        if known is None:
            return count_all(texts)
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        new = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if len(known) + len(new) > KNOWN_COUNTS:
            known.clear()
        known.update(zip(new, count_all(list(new.values())), strict=True))
        return [known[k] for k in keys]

    def count_all(texts: list[str]) -> list[int]:
        counts: list[int] = []
        batch: list[str] = []
        for text in [*texts, None]:
            if batch and (text is None or sum(len(t) + 1 for t in batch) + len(text) > BATCH_CHARS):
                ends = list(accumulate(len(t) + 1 for t in batch))
                found = [0] * len(batch)
                at = 0
                for start, _ in spans("\n".join(batch)):
                    while start >= ends[at]:
                        at += 1
                    found[at] += 1
                counts += found
                batch = []
            if text is not None:
                batch.append(text)
        return counts

    return count_many


def fit(
    bundle: MemoryBundle,
    count: Callable[[str], int],
    count_many: Callable[[list[str]], list[int]] | None = None,
) -> MemoryBundle:
    """The bundle with only what it shows within its budget, and its prompt's token count.
    ``count_many``, when given, counts every text the cut may need at once (the same counts
    as ``count``, fewer calls)."""
    lines = _lines(bundle)
    if count_many is not None:
        texts = list(
            dict.fromkeys(
                [
                    *HEADERS.values(),
                    *(line.text for line in lines),
                    *(s.text for line in lines for s in line.sources),
                ]
            )
        )
        count = dict(zip(texts, count_many(texts), strict=True)).__getitem__
    cut = _cut(lines, count, bundle.budget_tokens)
    keep = cut.kept
    profile = bundle.profile
    if profile is not None:
        profile = profile.model_copy(
            update={
                "communication_style": profile.communication_style
                if ("style", None) in keep
                else None,
                "expertise": profile.expertise if ("expertise", None) in keep else [],
                "preferences": {
                    k: v for k, v in profile.preferences.items() if ("preference", k) in keep
                },
            }
        )
    working = bundle.working
    if working is not None:
        working = working.model_copy(
            update={
                "active_goal": working.active_goal if ("goal", None) in keep else None,
                "thoughts": [t for n, t in enumerate(working.thoughts) if ("thought", n) in keep],
                "values": {k: v for k, v in working.values.items() if ("value", k) in keep},
                "turns": [t for n, t in enumerate(working.turns) if ("turn", n) in keep],
            }
        )

    def kept_items(items: list[BundleItem]) -> list[BundleItem]:
        found = []
        for item in items:
            ref = ("item", item.id)
            if ref not in keep:
                continue
            if item.detail.get("sources"):
                # Only the sources shown under it: the others are shown elsewhere, or did not
                # fit (``memory_ids`` still names them all).
                shown = [s for s in item.detail["sources"] if s["id"] in keep[ref]]
                item = item.model_copy(update={"detail": {**item.detail, "sources": shown}})
            found.append(item)
        return found

    diagnostics = bundle.diagnostics.model_copy(
        update={"budget_dropped": cut.dropped, "duplicates_dropped": cut.duplicates}
    )
    return bundle.model_copy(
        update={
            "profile": profile,
            "working": working,
            "goals": [g for n, g in enumerate(bundle.goals) if ("goal", n) in keep],
            "finished_goals": [
                g for n, g in enumerate(bundle.finished_goals) if ("finished", n) in keep
            ],
            "tool_outcomes": [o for n, o in enumerate(bundle.tool_outcomes) if ("tool", n) in keep],
            "episodic": kept_items(bundle.episodic),
            "semantic": kept_items(bundle.semantic),
            "procedural": kept_items(bundle.procedural),
            "tokens": cut.tokens,
            "diagnostics": diagnostics,
        }
    )
