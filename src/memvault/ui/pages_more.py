"""Conversations, the knowledge graph, goals, health, audit and deletion, jobs, admin."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, Response
from pydantic import SecretStr

from memvault.errors import InvalidInput, NotFound
from memvault.graph.views import GRAPH_LIMIT, GraphView
from memvault.lifecycle import merging
from memvault.lifecycle.reports import AuditQuery, HealthActionRequest
from memvault.paths import path_value
from memvault.ui.web import UIRoute, Viewer, page, viewer
from memvault.validation import validated

router = APIRouter(route_class=UIRoute)
View = Annotated[Viewer, Depends(viewer)]
MAX_NODES = 5_000
# Past this many nodes the page draws the graph on a plain canvas rather than with Cytoscape.
LARGE_GRAPH = 300
# The graph page lists this many contradictions awaiting review at a time.
REVIEWS = 20
# The goal page reads the working memory of this many recent conversations.
ACTIVE_SESSIONS = 20
# The health page previews this many near-duplicate clusters memory by memory.
PREVIEWED = 10


def _param(view: Viewer, name: str, default: str = "") -> str:
    return view.request.query_params.get(name, default).strip()[:500]


def _moment(raw: str, field: str) -> datetime | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{field} is a date and time.", details={"field": field}) from None


@router.get("/conversations", response_class=HTMLResponse)
async def conversations(view: View) -> Response:
    found = await view.memory.list_conversations(
        user_id=view.user_id, include_archived=True, limit=100
    )
    return page(view, "conversations.html", conversations=found)


@router.get("/conversations/{conversation_id}", response_class=HTMLResponse)
async def conversation(view: View, conversation_id: str) -> Response:
    conversation_id = path_value(conversation_id)
    found = await view.memory.get_conversation(conversation_id, user_id=view.user_id)
    working = await view.memory.get_context(
        conversation_id, user_id=view.user_id, channel=found.channel
    )
    return page(view, "conversation.html", c=found, working=working)


@router.get("/graph", response_class=HTMLResponse)
async def graph(view: View) -> Response:
    memory, user = view.memory, view.user_id
    q, chosen, whole = _param(view, "q"), _param(view, "entity"), _param(view, "all") == "1"
    depth = _param(view, "depth", "1")
    valid_at = _moment(_param(view, "valid_at"), "valid_at")
    known_at = _moment(_param(view, "known_at"), "known_at")
    limit = _whole_number(_param(view, "limit"), "limit")
    skipped = _whole_number(_param(view, "reviews_from"), "reviews_from") or 0
    context: dict[str, Any] = {}
    listed = (
        memory.entities(user_id=user, q=q or None, limit=50),
        # One more than a page: whether there is a next one.
        memory.fact_reviews(user_id=user, limit=REVIEWS + 1, offset=skipped),
    )
    if chosen:
        detail = await memory.entity(chosen, user_id=user)
        # The neighbourhood, the timeline and the lists are independent: read at once.
        graph_view, timeline, entities, reviews = await asyncio.gather(
            memory.entity_graph(
                detail.id,
                user_id=user,
                depth=int(depth) if depth in ("1", "2", "3") else 1,
                valid_at=valid_at,
                known_at=known_at,
                limit=limit,
            ),
            memory.facts(
                user_id=user,
                entity=str(detail.id),
                valid_at=valid_at,
                known_at=known_at,
                include_superseded=valid_at is None and known_at is None,
                limit=500,
            ),
            *listed,
        )
        context = {
            "entity": detail,
            "timeline": sorted(timeline, key=lambda f: f.recorded_at),
            "elements": _elements(graph_view, detail.id),
            "cut": _cut(view, graph_view),
        }
    elif whole:
        graph_view, entities, reviews = await asyncio.gather(
            memory.user_graph(user_id=user, valid_at=valid_at, known_at=known_at, limit=limit),
            *listed,
        )
        context = {
            "whole": True,
            "elements": _elements(graph_view, None),
            "cut": _cut(view, graph_view),
        }
    else:
        entities, reviews = await asyncio.gather(*listed)
    return page(
        view,
        "graph.html",
        q=q,
        entities=entities,
        depth=depth,
        valid_at=_param(view, "valid_at"),
        known_at=_param(view, "known_at"),
        reviews=reviews[:REVIEWS],
        reviews_from=skipped,
        reviews_pages=_pages(view, skipped, more=len(reviews) > REVIEWS),
        limit=limit,
        large=LARGE_GRAPH,
        **context,
    )


def _whole_number(raw: str, field: str) -> int | None:
    if not raw:
        return None
    if not raw.isdigit():
        raise InvalidInput(f"{field} is a whole number.", details={"field": field})
    return int(raw)


def _same_page(view: Viewer, **changes: str | int | None) -> str:
    """This page's address with ``changes`` to its query (``None`` drops a parameter)."""
    query = {k: v for k, v in view.request.query_params.items() if k not in changes}
    query |= {k: str(v) for k, v in changes.items() if v is not None}
    return f"/graph?{urlencode(query)}"


def _cut(view: Viewer, found: GraphView) -> dict[str, Any]:
    """What the node and edge limits left out, and the address that shows the rest (or as
    much of it as one view holds)."""
    shown, reached = len(found.nodes), found.reached_nodes
    more = min(reached, GRAPH_LIMIT) if reached > shown else None
    return {
        "nodes": shown,
        "reached": reached,
        "edges": len(found.edges),
        "reached_edges": found.reached_edges,
        "more": more,
        "more_url": _same_page(view, limit=more) if more else None,
        "fewer_url": _same_page(view, limit=None) if "limit" in view.request.query_params else None,
        "default": view.admin.settings.graph_max_nodes,
    }


def _pages(view: Viewer, skipped: int, *, more: bool) -> dict[str, str | None]:
    earlier = max(skipped - REVIEWS, 0)
    return {
        "newer": _same_page(view, reviews_from=earlier or None) if skipped else None,
        "older": _same_page(view, reviews_from=skipped + REVIEWS) if more else None,
    }


@router.post("/graph/reviews/resolve", response_class=HTMLResponse)
async def resolve_review(view: View) -> Response:
    form = await view.form("write")
    resolved = await view.memory.resolve_fact_review(
        str(form.get("review_id", "")), user_id=view.user_id, keep=str(form.get("keep", ""))
    )
    audit = await view.memory.audit_log(user_id=view.user_id, operation="update", limit=5)
    return page(view, "done.html", resolved=resolved, audit=audit.results)


def _elements(found: GraphView, centre: UUID | None) -> dict[str, Any]:
    """What the page's script draws: the fields it reads, not whole entities; each link
    names its two ends (the list beside the drawing reads them)."""
    kept = found.nodes[:MAX_NODES]
    if centre is None:
        # A whole graph: the most salient in the middle of the drawing.
        kept = sorted(kept, key=lambda n: -n.salience)
    names = {n.id: n.name for n in kept}
    nodes = [
        {
            "id": str(n.id),
            "label": n.name,
            "type": n.type,
            "depth": n.depth,
            "centre": n.id == centre,
        }
        for n in kept
    ]
    edges = [
        {
            "source": str(e.source_id),
            "target": str(e.target_id),
            "label": e.type,
            "from": names[e.source_id],
            "to": names[e.target_id],
        }
        for e in found.edges
        if e.source_id in names and e.target_id in names
    ]
    return {"nodes": nodes, "edges": edges, "whole": centre is None}


@router.get("/goals", response_class=HTMLResponse)
async def goals(view: View) -> Response:
    task = _param(view, "task")
    found, tools = await asyncio.gather(
        view.memory.list_goals(user_id=view.user_id, limit=500),
        view.memory.tool_stats(user_id=view.user_id),
    )
    strategies = (
        await view.memory.find_strategies(task, user_id=view.user_id, limit=20) if task else []
    )
    children: dict[UUID | None, list[Any]] = {}
    for goal in found:
        children.setdefault(goal.parent_id, []).append(goal)
    known = {g.id for g in found}
    roots = [g for g in found if g.parent_id is None or g.parent_id not in known]
    by_id = {g.id: g for g in found}
    return page(
        view,
        "goals.html",
        roots=roots,
        children=children,
        by_id=by_id,
        finished={g.id for g in found if g.status in ("completed", "abandoned")},
        active_goals=await _active_goals(view),
        tools=tools,
        task=task,
        strategies=strategies,
    )


async def _active_goals(view: Viewer) -> dict[str, list[str]]:
    """Which recent conversations' working memory holds which active goal (by the goal's text
    or id), so the goal page says what the conversation page says."""
    recent = await view.memory.list_conversations(user_id=view.user_id, limit=ACTIVE_SESSIONS)
    contexts = await asyncio.gather(
        *(view.memory.get_context(c.id, user_id=view.user_id, channel=c.channel) for c in recent)
    )
    held: dict[str, list[str]] = {}
    for context in contexts:
        if context.active_goal:
            held.setdefault(context.active_goal, []).append(context.conversation_id)
    return held


@router.get("/health", response_class=HTMLResponse)
async def health(view: View) -> Response:
    found = await view.memory.memory_health(user_id=view.user_id)
    clusters = [c for f in found.findings for c in f.clusters]
    return page(view, "health.html", health=found, previews=await _previews(view, clusters))


async def _previews(view: Viewer, clusters: list[list[UUID]]) -> list[dict[str, Any]]:
    """What merging each of the first clusters touches and keeps: the merge's own plan."""
    shown = []
    for cluster in clusters[:PREVIEWED]:
        copies = merging.order([await view.memory.get(i, user_id=view.user_id) for i in cluster])
        shown.append({"copies": copies, "plan": merging.plan(copies), "ids": cluster})
    return shown


def _id_lists(raw: list[str]) -> list[list[str]]:
    return [[i for i in r.split(",") if i.strip()] for r in raw if r.strip()]


@router.post("/health/action", response_class=HTMLResponse)
async def health_action(view: View) -> Response:
    form = await view.form("write")
    ids = [i for i in str(form.get("memory_ids", "")).split(",") if i.strip()]
    clusters = _id_lists([str(c) for c in getattr(form, "getlist", lambda _: [])("clusters")])
    request = validated(
        HealthActionRequest,
        user_id=view.user_id,
        action=form.get("action"),
        memory_ids=ids,
        clusters=clusters,
    )
    result = await view.memory.health_action(request)
    audit = await view.memory.audit_log(user_id=view.user_id, limit=5)
    return page(view, "done.html", result=result, audit=audit.results)


@router.post("/health/merges/undo", response_class=HTMLResponse)
async def undo_merge(view: View) -> Response:
    form = await view.form("write")
    undone = await view.memory.undo_merge(str(form.get("merge_id", "")), user_id=view.user_id)
    audit = await view.memory.audit_log(user_id=view.user_id, limit=5)
    return page(view, "done.html", merge_undone=undone, audit=audit.results)


async def _holds_anything(view: Viewer, user: str) -> bool:
    memory = view.memory
    found = await asyncio.gather(
        memory.count(user_id=user),
        memory.list_conversations(user_id=user, include_archived=True, limit=1),
        memory.facts(user_id=user, include_superseded=True, limit=1),
    )
    return any(found)


@router.get("/audit", response_class=HTMLResponse)
async def audit(view: View) -> Response:
    return await _audit_page(view)


async def _audit_page(view: Viewer, *, empty: str | None = None) -> Response:
    query = validated(
        AuditQuery,
        user_id=_param(view, "user_id") or None,
        operation=_param(view, "operation") or None,
        since=_param(view, "since") or None,
        limit=200,
    )
    rows = await view.memory.audit_log(**query.model_dump())
    deletions = await view.memory.audit_log(operation="delete", limit=20)
    return page(
        view,
        "audit.html",
        rows=rows.results,
        deletions=deletions.results,
        filters={k: _param(view, k) for k in ("user_id", "operation", "since")},
        empty=empty,
    )


@router.post("/erase", response_class=HTMLResponse)
async def erase_user(view: View) -> Response:
    form = await view.form("write")
    user = str(form.get("user_id", "")).strip()
    if not user or form.get("confirm") != user:
        raise InvalidInput("Type the user id exactly to confirm the erasure.")
    if form.get("empty_ok") != "yes" and not await _holds_anything(view, user):
        # A mistyped id would be "erased" with nothing in it: say so, and ask again.
        return await _audit_page(view, empty=user)
    receipt = await view.memory.erase_user(user_id=user)
    audit = await view.memory.audit_log(user_id=user, limit=5)
    return page(view, "done.html", receipt=receipt, audit=audit.results, erased=user)


@router.get("/jobs", response_class=HTMLResponse)
async def jobs(view: View) -> Response:
    admin = view.admin
    status = _param(view, "status") or None
    tenant_jobs = (
        await admin.list_jobs(tenant_id=view.memory.tenant_id, status=status, limit=100)
        if view.can("admin")
        else []
    )
    # Scheduled jobs and their runs' counts span every tenant: an operator's view only.
    operator = view.can("operator")
    schedule = await admin.schedule() if operator else []
    runs = await admin.scheduled_runs(limit=20) if operator else []
    return page(
        view,
        "jobs.html",
        tenant_jobs=tenant_jobs,
        schedule=schedule,
        runs=runs,
        status=status or "",
        store_wide=operator,
    )


@router.post("/jobs/retry", response_class=HTMLResponse)
async def retry_jobs(view: View) -> Response:
    await view.form("admin")
    retried = await view.admin.retry_jobs(tenant_id=view.memory.tenant_id)
    return page(view, "done.html", retried=retried)


@router.post("/jobs/run", response_class=HTMLResponse)
async def run_job(view: View) -> Response:
    form = await view.form("admin")
    _store_wide(view)
    ran = await view.admin.run_scheduled(
        str(form.get("job", "")), dry_run=form.get("dry_run") == "1"
    )
    return page(view, "done.html", ran=ran)


@router.post("/jobs/undo", response_class=HTMLResponse)
async def undo_job(view: View) -> Response:
    form = await view.form("admin")
    _store_wide(view)
    try:
        run_id = int(str(form.get("run_id", "")))
    except ValueError:
        raise InvalidInput("Name a run.", details={"field": "run_id"}) from None
    undone = await view.admin.undo_scheduled(str(form.get("job", "")), run_id)
    return page(view, "done.html", undone=undone)


def _store_wide(view: Viewer) -> None:
    """Scheduled jobs act on every tenant: only an operator (an operator key, or the local
    mode with auth off) runs them here; a tenant's admin is a tenant's only."""
    view.require("operator")


@router.get("/admin", response_class=HTMLResponse)
async def admin_page(view: View) -> Response:
    keys = await view.admin.list_api_keys(view.memory.tenant_id) if view.can("admin") else None
    return page(view, "admin.html", keys=keys, settings=_masked(view), created=None, revoked=None)


def _masked(view: Viewer) -> list[tuple[str, str]]:
    if not view.can("operator"):  # the server's settings, not a tenant's
        return []
    shown = []
    for name, value in view.admin.settings.model_dump().items():
        if isinstance(value, SecretStr):
            value = "•••••• (set)" if value.get_secret_value() else "—"
        shown.append((name, "—" if value is None else str(value)))
    return sorted(shown)


@router.post("/admin/keys", response_class=HTMLResponse)
async def create_key(view: View) -> Response:
    form = await view.form("admin")
    scopes = [s for s in ("read", "write", "admin") if form.get(f"scope_{s}") == "on"]
    name = str(form.get("name", "")).strip()[:100] or None
    created = await view.admin.create_api_key(view.memory.tenant_id, scopes, name)
    keys = await view.admin.list_api_keys(view.memory.tenant_id)
    return page(view, "admin.html", keys=keys, settings=_masked(view), created=created)


@router.post("/admin/keys/revoke", response_class=HTMLResponse)
async def revoke_key(view: View) -> Response:
    form = await view.form("admin")
    prefix = str(form.get("prefix", "")).strip()
    tenant = view.memory.tenant_id
    # Only a key of this tenant: another tenant's prefix is as unknown here as a made-up one.
    if prefix not in {k.prefix for k in await view.admin.list_api_keys(tenant)}:
        raise NotFound("No API key of this tenant has that prefix.")
    revoked = await view.admin.revoke_api_key(prefix)
    keys = await view.admin.list_api_keys(tenant)
    return page(view, "admin.html", keys=keys, settings=_masked(view), revoked=revoked)
