"""Overview, memories, one memory, and the recall debugger."""

from __future__ import annotations

import asyncio
import difflib
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse, Response

from memvault.cognitive.bundle import BundleItem, ItemKind, MemoryBundle
from memvault.cognitive.kinds import RememberRequest
from memvault.errors import InvalidInput
from memvault.models import MemoryQuery, SearchRequest, SearchResult
from memvault.ui import charts, latency
from memvault.ui.web import UIRoute, Viewer, page, redirect, sessions, viewer

router = APIRouter(route_class=UIRoute)
View = Annotated[Viewer, Depends(viewer)]
# A memory's page lists at most this many of the facts read from it (the most the graph lists).
DERIVED_CAP = 1000
_LIST_FIELDS = {"tags", "tags_any", "categories", "channels"}
_PLAIN = set(MemoryQuery.model_fields) - {"user_id", "limit", "cursor", "metadata"}


@router.get("")
async def root(view: View) -> Response:
    return redirect(view, "/")


@router.get("/", response_class=HTMLResponse)
async def overview(view: View) -> Response:
    memory, user = view.memory, view.user_id
    queue = await view.admin.queue_counts(tenant_id=memory.tenant_id)
    held, health = await asyncio.gather(
        memory.user_overview(user_id=user), memory.memory_health(user_id=user)
    )
    counts = [
        ("Memories", held.memories),
        ("Conversations", held.conversations),
        ("Turns", held.turns),
        ("Facts", held.facts),
        ("Entities", held.entities),
        ("Goals", held.goals),
    ]
    return page(
        view,
        "overview.html",
        counts=counts,
        queue=queue,
        backlog=held.turns_unconsolidated,
        findings=health.findings,
        per_day=charts.bars([(g.start.date().isoformat(), g.memories) for g in held.per_day]),
        per_week=charts.bars([(g.start.date().isoformat(), g.memories) for g in held.per_week]),
        days=len(held.per_day),
        weeks=len(held.per_week),
        kinds=charts.bars(counts),
        latency=latency.recall_latency(),
    )


@router.get("/user")
async def switch_user(view: View, user_id: Annotated[str, Query(max_length=255)]) -> Response:
    wanted = user_id.strip()
    if not wanted:
        raise InvalidInput("Name a user.", details={"field": "user_id"})
    view.session.user_id = wanted
    await sessions(view.request).save(view.session)
    return redirect(view, "/")


def _filters(params: dict[str, str]) -> dict[str, Any]:
    picked: dict[str, Any] = {}
    for name in _PLAIN:
        value = params.get(name, "").strip()
        if not value:
            continue
        picked[name] = (
            [v.strip() for v in value.split(",") if v.strip()] if (name in _LIST_FIELDS) else value
        )
    return picked


@router.get("/memories", response_class=HTMLResponse)
async def memories(view: View) -> Response:
    params = dict(view.request.query_params)
    filters = _filters(params)
    q = params.get("q", "").strip()
    found: SearchResult | None = None
    next_cursor = None
    rows: list[Any] = []
    refused: list[dict[str, str]] = []
    try:
        if q:
            # As typed: a recipe the search does not know is refused (InvalidInput, below).
            recipe: Any = params.get("recipe") or "hybrid"
            found = await view.memory.search(
                q, user_id=view.user_id, recipe=recipe, limit=50, track_access=False, **filters
            )
            rows = found.results
        else:
            listed = await view.memory.list(
                user_id=view.user_id, limit=50, cursor=params.get("cursor") or None, **filters
            )
            rows, next_cursor = listed.results, listed.next_cursor
    except InvalidInput as exc:
        # Said on the page, by field, with no rows: the rows of the last good filter would
        # read as this filter's answer (htmx swaps in a 2xx answer only).
        refused = _refusals(exc)
    keep = {k: v for k, v in params.items() if k != "cursor" and v}
    htmx = view.request.headers.get("hx-request") == "true"
    return page(
        view,
        "memories.html",
        http_status=422 if refused and not htmx else 200,
        refused=refused,
        rows=rows,
        q=q,
        params=params,
        keep=keep,
        next_cursor=next_cursor,
        searched=found,
        fields=sorted(_PLAIN),
        list_fields=_LIST_FIELDS,
    )


def _refusals(exc: InvalidInput) -> list[dict[str, str]]:
    """What was wrong with each filter, by the field's name as the form labels it."""
    listed = exc.details.get("errors")
    problems = listed if isinstance(listed, list) else [exc.details]
    return [
        {
            "field": str(p.get("field") or "the filter").split(".")[-1].replace("_", " "),
            "problem": str(p.get("problem") or exc.message),
        }
        for p in problems
        if isinstance(p, dict)
    ]


@router.get("/memories/{memory_id}", response_class=HTMLResponse)
async def one_memory(view: View, memory_id: str) -> Response:
    memory, user = view.memory, view.user_id
    record = await memory.get(memory_id, user_id=user)
    history, facts = await asyncio.gather(
        memory.history(record.id, user_id=user),
        memory.facts(user_id=user, include_superseded=True, memory_id=record.id, limit=DERIVED_CAP),
    )
    changes = [
        (
            entry,
            list(
                difflib.unified_diff(
                    (entry.old_content or "").splitlines(),
                    (entry.new_content or "").splitlines(),
                    "before",
                    "after",
                    lineterm="",
                )
            ),
        )
        for entry in history
    ]
    return page(view, "memory.html", m=record, changes=changes, derived=facts)


_SEARCH_KNOBS = ("recipe", "limit", "time_mode", "fact_keys", "reference_time")
_REMEMBER_KNOBS = ("limit", "budget_tokens", "recency", "include")


def _setting(params: dict[str, str], side: str, knobs: tuple[str, ...]) -> dict[str, Any]:
    chosen: dict[str, Any] = {}
    for knob in knobs:
        value = params.get(f"{side}_{knob}", "").strip()
        if value in ("", "default"):
            continue
        chosen[knob] = {"on": True, "off": False}.get(value, value)
    return chosen


def _sides(params: dict[str, str], knobs: tuple[str, ...]) -> list[dict[str, Any]]:
    """Setting A, and B where it differs from A (B's knobs left at "as A" take A's)."""
    a = _setting(params, "a", knobs)
    b = {**a, **_setting(params, "b", knobs)}
    return [a, b] if b != a else [a]


def _remember_fields(chosen: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in chosen.items() if k not in ("recency", "include")}
    if "recency" in chosen:
        fields["weights"] = {"recency": chosen["recency"]}
    if "include" in chosen:
        fields["include"] = [chosen["include"]]
    return fields


@router.get("/recall", response_class=HTMLResponse)
async def recall(view: View) -> Response:
    params = dict(view.request.query_params)
    q = params.get("q", "").strip()
    user = params.get("user_id", "").strip() or view.user_id
    runs: list[tuple[dict[str, Any], SearchResult]] = []
    bundles: list[tuple[dict[str, Any], MemoryBundle]] = []
    if q and params.get("mode") == "remember":
        for chosen in _sides(params, _REMEMBER_KNOBS):
            asked = RememberRequest.model_validate(
                # A look in the debugger is not a use: nothing it shows counts as accessed.
                {"query": q, "user_id": user, "track_access": False, **_remember_fields(chosen)}
            )
            bundle = await view.memory.remember(**asked.model_dump(exclude_none=True))
            bundles.append((chosen, bundle))
    elif q:
        for chosen in _sides(params, _SEARCH_KNOBS):
            request = SearchRequest.model_validate({"query": q, "user_id": user, **chosen})
            found = await view.memory.search(**{**request.model_dump(), "track_access": False})
            runs.append((chosen, found))
    ranked = [[str(h.id) for h in found.results] for _, found in runs] or [
        [item.id for item in _items(bundle)] for _, bundle in bundles
    ]
    return page(
        view,
        "recall.html",
        q=q,
        user=user,
        params=params,
        runs=runs,
        bundles=[(chosen, bundle, _items(bundle)) for chosen, bundle in bundles],
        moved=_moves(ranked),
        recipes=SearchRequest.model_fields["recipe"].annotation.__args__,  # type: ignore[union-attr]
        kinds=ItemKind.__args__,  # type: ignore[attr-defined]
    )


def _items(bundle: MemoryBundle) -> list[BundleItem]:
    """The bundle's recalled items in the order the prompt shows them."""
    return [*bundle.episodic, *bundle.semantic, *bundle.procedural]


def _moves(ranked: list[list[str]]) -> dict[str, str]:
    """For each item of the second setting: where it stood in the first (new, up n, down n);
    items of the first that the second lost: dropped."""
    if len(ranked) < 2:
        return {}
    before = {item: i for i, item in enumerate(ranked[0])}
    moved: dict[str, str] = {}
    for i, item in enumerate(ranked[1]):
        was = before.get(item)
        if was is None:
            moved[item] = "new"
        elif was != i:
            moved[item] = f"{'up' if was > i else 'down'} {abs(was - i)}"
    moved.update({item: "dropped" for item in set(before) - set(ranked[1])})
    return moved
