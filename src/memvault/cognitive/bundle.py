"""The ``remember()`` bundle: what is recalled, how it is scored and merged, and the prompt
block it renders, cut to a token budget.

Scoring is data: each recalled item scores ``weights[kind] x relevance + weights["recency"] x
recency``, relevance in 0..1 within its kind, recency halving every half-life. Context that is
not ranked (profile, active goals, the live session) comes first in the prompt; ranked items
fill what budget is left, best first. A line that does not fit is left out whole, and the
prompt is exactly the lines counted, so ``tokens`` is the prompt's length in the model's
tokens and never exceeds the budget.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from memvault.cognitive.models import Goal, Profile, WorkingContext

ItemKind = Literal["episodic", "facts", "entities", "procedural"]
DEFAULT_WEIGHTS = {
    "episodic": 0.30,
    "facts": 0.25,
    "entities": 0.20,
    "procedural": 0.15,
    "recency": 0.10,
}
MAX_ITEM_CHARS = 1_000
# What a turn past its conversation's share is worth, relative to its own score.
DIVERSITY_PENALTY = 0.5


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


class BundleDiagnostics(BaseModel):
    timings_ms: dict[str, float] = Field(description="wall time per kind, and total")
    candidates: dict[str, int] = Field(description="what each kind offered before the cut")
    diversity_demoted: int = Field(
        description="turns past the per-conversation share, their scores scaled down"
    )
    budget_dropped: int = Field(description="lines that did not fit the token budget")
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
        return "\n".join(line for _, line, _ in _entries(self))


# --- scoring -----------------------------------------------------------------------------------


def recency(at: datetime | None, now: datetime, half_life_days: float) -> float:
    if at is None:
        return 0.0
    age_days = max((now - at).total_seconds(), 0.0) / 86_400
    return float(0.5 ** (age_days / half_life_days))


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


# --- the prompt and the budget -----------------------------------------------------------------

HEADERS = {
    "profile": "## Profile",
    "goals": "## Active goals",
    "working": "## This session",
    "memories": "## Relevant memories",
}


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_ITEM_CHARS else flat[: MAX_ITEM_CHARS - 1] + "…"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def item_line(item: BundleItem) -> str:
    if item.kind == "procedural":
        steps = " > ".join(item.detail.get("tool_sequence", []))
        done, failed = item.detail.get("success_count", 0), item.detail.get("failure_count", 0)
        record = f"{done} ok, {failed} failed"
        return f"- [strategy, {item.channel}] {_clip(item.content)} -> {steps} ({record})"
    when = f" {item.occurred_at:%Y-%m-%d}" if item.occurred_at else ""
    label = {"episodic": "turn", "facts": "fact", "entities": "entity"}[item.kind]
    return f"- [{label}, {item.channel}{when}] {_clip(item.content)}"


def goal_line(goal: Goal) -> str:
    due = f", due {goal.deadline:%Y-%m-%d}" if goal.deadline else ""
    state = ", blocked" if goal.status == "blocked" else ""
    return f"- {_clip(goal.description)} (priority {goal.priority}{due}{state})"


# An entry: (section, line, what it renders) — the same list drives the cut and the prompt.
Entry = tuple[str, str, tuple[str, Any]]


def _profile_entries(profile: Profile | None) -> list[Entry]:
    if profile is None:
        return []
    found: list[Entry] = []
    if profile.communication_style:
        found.append(("profile", f"style: {_clip(profile.communication_style)}", ("style", None)))
    if profile.expertise:
        found.append(("profile", f"expertise: {', '.join(profile.expertise)}", ("expertise", None)))
    for key, value in sorted(profile.preferences.items()):
        found.append(("profile", f"prefers: {key} = {_clip(_value(value))}", ("preference", key)))
    return found


def _working_entries(working: WorkingContext | None) -> list[Entry]:
    if working is None:
        return []
    found: list[Entry] = []
    if working.active_goal:
        found.append(("working", f"goal now: {_clip(working.active_goal)}", ("goal", None)))
    for n, thought in enumerate(working.thoughts):
        found.append(("working", f"thought: {_clip(thought)}", ("thought", n)))
    for key, value in sorted(working.values.items()):
        found.append(("working", f"{key}: {_clip(_value(value))}", ("value", key)))
    for n, turn in enumerate(working.turns):
        text = f"{turn.get('role', '?')}: {_clip(str(turn.get('content', '')))}"
        found.append(("working", text, ("turn", n)))
    return found


def _entries(bundle: MemoryBundle) -> list[Entry]:
    """Every line the bundle renders, in prompt order, headers included."""
    body: list[Entry] = [
        *_profile_entries(bundle.profile),
        *(("goals", goal_line(g), ("goal", n)) for n, g in enumerate(bundle.goals)),
        *_working_entries(bundle.working),
        *(("memories", item_line(i), ("item", i.id)) for i in bundle.items),
    ]
    lines: list[Entry] = []
    opened: set[str] = set()
    for section, line, ref in body:
        if section not in opened:
            opened.add(section)
            lines.append((section, HEADERS[section], ("header", section)))
        lines.append((section, line, ref))
    return lines


@dataclass
class _Cut:
    kept: set[tuple[str, Any]]
    tokens: int
    dropped: int


def _cut(entries: list[Entry], count: Callable[[str], int], budget: int) -> _Cut:
    """Greedy in prompt order: a line goes in when it (and its section's header, the first
    time) still fits."""
    kept: set[tuple[str, Any]] = set()
    total = dropped = 0
    header_cost: dict[str, int] = {}
    for section, line, ref in entries:
        if ref[0] == "header":
            header_cost[section] = count(line)
            continue
        opening = ("header", section) not in kept
        cost = count(line) + (header_cost[section] if opening else 0)
        if total + cost > budget:
            dropped += 1
            continue
        total += cost
        kept.add(ref)
        if opening:
            kept.add(("header", section))
    return _Cut(kept, total, dropped)


def fit(bundle: MemoryBundle, count: Callable[[str], int]) -> MemoryBundle:
    """The bundle with only what fits its budget, and its prompt's token count."""
    cut = _cut(_entries(bundle), count, bundle.budget_tokens)
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
        return [i for i in items if ("item", i.id) in keep]

    diagnostics = bundle.diagnostics.model_copy(update={"budget_dropped": cut.dropped})
    return bundle.model_copy(
        update={
            "profile": profile,
            "working": working,
            "goals": [g for n, g in enumerate(bundle.goals) if ("goal", n) in keep],
            "episodic": kept_items(bundle.episodic),
            "semantic": kept_items(bundle.semantic),
            "procedural": kept_items(bundle.procedural),
            "tokens": cut.tokens,
            "diagnostics": diagnostics,
        }
    )
