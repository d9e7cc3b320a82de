"""The dashboard's webhooks page: a tenant's subscriptions, each one's deliveries with their
state, and replay (a tenant admin's, like the API's webhook routes)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, Response

from memvault.errors import InvalidInput
from memvault.ui.web import UIRoute, Viewer, page, viewer

router = APIRouter(route_class=UIRoute)
View = Annotated[Viewer, Depends(viewer)]
STATES = ("pending", "delivered", "dead")


@router.get("/webhooks", response_class=HTMLResponse)
async def webhooks(view: View) -> Response:
    return await _page(view)


async def _page(view: Viewer, replayed: int | None = None) -> Response:
    if not view.can("admin"):
        return page(view, "webhooks.html", hooks=None, chosen=None, deliveries=[], state="")
    hooks = await view.memory.list_webhooks()
    wanted = view.request.query_params.get("webhook", "").strip()[:64]
    chosen = next((h for h in hooks if str(h.id) == wanted), hooks[0] if hooks else None)
    state = view.request.query_params.get("state", "").strip()
    state = state if state in STATES else ""
    deliveries = (
        await view.memory.webhook_deliveries(chosen.id, state=state or None, limit=100)
        if chosen is not None
        else []
    )
    return page(
        view,
        "webhooks.html",
        hooks=hooks,
        chosen=chosen,
        deliveries=deliveries,
        state=state,
        replayed=replayed,
    )


@router.post("/webhooks/replay", response_class=HTMLResponse)
async def replay(view: View) -> Response:
    form = await view.form("admin")
    raw = str(form.get("delivery_id", "")).strip()
    try:
        delivery_id = int(raw) if raw else None
    except ValueError:
        raise InvalidInput("Name a delivery.", details={"field": "delivery_id"}) from None
    done = await view.memory.replay_webhook(
        str(form.get("webhook_id", "")), delivery_id=delivery_id
    )
    return await _page(view, replayed=done.replayed)
