"""Curation from the dashboard: create, edit and delete memories (one, or many selected on a
filtered list, with one receipt), retire and correct facts, merge and split entities, delete a
conversation, the tenant's users, a user's export and the deletion receipts.

Every action is the service call the API routes to (``operations.py``), audited there; an
action that destroys asks first on a page of its own (no script needed), and the answer shows
what changed, the receipt where something was deleted, the audit rows and, where the service
can undo it, the undo."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import FormData

from memvault.errors import InvalidInput
from memvault.lifecycle.reports import DeletionReceipt
from memvault.models import TURN_SOURCE, MemoryRecord
from memvault.paths import path_value
from memvault.ui.web import UIRoute, Viewer, page, viewer

router = APIRouter(route_class=UIRoute)
View = Annotated[Viewer, Depends(viewer)]
# A confirmation page lists this many of the memories it would delete, and counts the rest.
SHOWN = 50


async def _form(view: Viewer) -> FormData:
    form = await view.form("write")
    assert isinstance(form, FormData)
    return form


def _field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


async def _done(
    view: Viewer,
    message: str,
    *,
    receipt: DeletionReceipt | None = None,
    undo: dict[str, Any] | None = None,
    link: tuple[str, str] | None = None,
) -> HTMLResponse:
    """What an action did: one sentence, its receipt, its undo and the audit rows it wrote."""
    audit = await view.memory.audit_log(user_id=view.user_id, limit=5)
    return page(
        view,
        "curated.html",
        message=message,
        receipt=receipt,
        undo=undo,
        link=link,
        audit=audit.results,
    )


# --- one memory: create, edit ------------------------------------------------------------------


def _tags(raw: str) -> list[str]:
    return [t.strip() for t in raw.split(",") if t.strip()]


def _importance(raw: str) -> int | None:
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(
            "Importance is a whole number from 1 to 10.", details={"field": "importance"}
        ) from None


def _metadata(raw: str) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        found = json.loads(raw)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise InvalidInput(
            'Metadata is a JSON object, e.g. {"origin": "seed"}.', details={"field": "metadata"}
        )
    return found


def _moment(raw: str, field: str) -> datetime | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw).astimezone()
    except ValueError:
        raise InvalidInput(f"{field} is a date and time.", details={"field": field}) from None


@router.get("/memories/new", response_class=HTMLResponse)
async def new_memory(view: View) -> Response:
    view.require("write")
    return page(view, "memory_form.html", m=None)


@router.post("/memories/new", response_class=HTMLResponse)
async def create_memory(view: View) -> Response:
    form = await _form(view)
    importance = _importance(_field(form, "importance"))
    added = await view.memory.add(
        _field(form, "content"),
        user_id=view.user_id,
        tags=_tags(_field(form, "tags")),
        metadata=_metadata(_field(form, "metadata")),
        expires_at=_moment(_field(form, "expires_at"), "expires_at"),
        wait=True,
    )
    if importance is not None:
        await view.memory.update(added.id, user_id=view.user_id, importance=importance)
    folded = added.dedup.action not in ("stored_new", "keep_both", "pending")
    message = "Stored as a duplicate of an existing memory." if folded else "Memory stored."
    undo = None if folded else {"path": "/memories/delete", "memory_ids": [added.id]}
    return await _done(view, message, undo=undo, link=(f"/memories/{added.id}", "Open it"))


@router.get("/memories/{memory_id}/edit", response_class=HTMLResponse)
async def edit_memory(view: View, memory_id: str) -> Response:
    view.require("write")
    record = await view.memory.get(memory_id, user_id=view.user_id)
    return page(view, "memory_form.html", m=record, turn=record.source == TURN_SOURCE)


@router.post("/memories/{memory_id}/edit", response_class=HTMLResponse)
async def save_memory(view: View, memory_id: str) -> Response:
    form = await _form(view)
    old = await view.memory.get(memory_id, user_id=view.user_id)
    changes = _changes(old, form)
    if not changes:
        return await _done(view, "Nothing changed.", link=(f"/memories/{old.id}", "Back to it"))
    await view.memory.update(old.id, user_id=view.user_id, **changes)
    return await _done(
        view,
        f"Memory updated: {', '.join(sorted(changes))}.",
        undo={"path": f"/memories/{old.id}/edit", **_as_form(old)},
        link=(f"/memories/{old.id}", "Open it"),
    )


def _changes(old: MemoryRecord, form: FormData) -> dict[str, Any]:
    """What the form changes, as ``update`` takes it: a metadata key left out is removed."""
    changes: dict[str, Any] = {}
    content = _field(form, "content")
    if content and content != old.content:
        changes["content"] = content
    tags = sorted(set(_tags(_field(form, "tags"))))
    if tags != sorted(old.tags):
        changes["tags"] = tags
    importance = _importance(_field(form, "importance"))
    if importance is not None and importance != old.importance:
        changes["importance"] = importance
    metadata = _metadata(_field(form, "metadata"))
    if metadata != old.metadata:
        changes["metadata"] = {**{k: None for k in old.metadata}, **metadata}
    expires = _moment(_field(form, "expires_at"), "expires_at")
    if expires is not None and expires != old.expires_at:
        changes["expires_at"] = expires
    return changes


def _as_form(m: MemoryRecord) -> dict[str, Any]:
    """A memory's editable fields as the edit form posts them (what an undo puts back)."""
    return {
        "content": m.content,
        "tags": ", ".join(m.tags),
        "importance": "" if m.importance is None else str(m.importance),
        "metadata": json.dumps(m.metadata, ensure_ascii=False),
    }


# --- deleting memories: one or many, confirmed, one receipt -------------------------------------


@router.post("/memories/delete", response_class=HTMLResponse)
async def delete_memories(view: View) -> Response:
    form = await _form(view)
    ids = list(dict.fromkeys(str(i) for i in form.getlist("memory_ids") if str(i).strip()))
    if not ids:
        raise InvalidInput("Select the memories to delete.", details={"field": "memory_ids"})
    if form.get("confirmed") != "yes":
        shown = [await view.memory.get(i, user_id=view.user_id) for i in ids[:SHOWN]]
        return page(
            view,
            "confirm.html",
            title=f"Delete {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}?",
            action="/memories/delete",
            fields={"memory_ids": ids},
            memories=shown,
            more=len(ids) - len(shown),
            button="Delete for good",
        )
    chosen: list[UUID | str] = [*ids]
    receipt = await view.memory.erase_memories(chosen, user_id=view.user_id)
    return await _done(
        view,
        f"Deleted {receipt.memories} memor{'y' if receipt.memories == 1 else 'ies'}.",
        receipt=receipt,
        link=("/memories", "Back to the memories"),
    )


# --- facts and entities ----------------------------------------------------------------------


def _entity_link(form: FormData) -> tuple[str, str]:
    entity = _field(form, "entity")
    return (f"/graph?entity={entity}" if entity else "/graph", "Back to the graph")


@router.post("/graph/facts/retire", response_class=HTMLResponse)
async def retire_fact(view: View) -> Response:
    form = await _form(view)
    never = form.get("never_held") == "on"
    fact = await view.memory.retire_fact(
        _field(form, "fact_id"), user_id=view.user_id, never_held=never
    )
    what = "never held" if never else "no longer holds"
    return await _done(
        view,
        f"Retired “{fact.claim}”: it {what}, and stays in the history.",
        undo=_restore(fact.id, form),
        link=_entity_link(form),
    )


@router.post("/graph/facts/correct", response_class=HTMLResponse)
async def correct_fact(view: View) -> Response:
    form = await _form(view)
    to = _field(form, "to")
    literal = form.get("kind") == "value"
    fact = await view.memory.correct_fact(
        _field(form, "fact_id"),
        user_id=view.user_id,
        object=None if literal else to,
        value=to if literal else None,
    )
    return await _done(
        view,
        f"Corrected to “{fact.claim}”; the old fact is kept in the history, replaced.",
        undo=_restore(_field(form, "fact_id"), form),
        link=_entity_link(form),
    )


def _restore(fact_id: UUID | str, form: FormData) -> dict[str, Any]:
    return {
        "path": "/graph/facts/restore",
        "fact_id": str(fact_id),
        "entity": _field(form, "entity"),
    }


@router.post("/graph/facts/restore", response_class=HTMLResponse)
async def restore_fact(view: View) -> Response:
    form = await _form(view)
    fact = await view.memory.restore_fact(_field(form, "fact_id"), user_id=view.user_id)
    return await _done(
        view,
        f"Undone: “{fact.claim}” holds again as it did before.",
        link=_entity_link(form),
    )


@router.post("/graph/entities/merge", response_class=HTMLResponse)
async def merge_entity(view: View) -> Response:
    form = await _form(view)
    merged = _field(form, "entity_id")
    target = await view.memory.merge_entities(
        merged, into=_field(form, "into"), user_id=view.user_id
    )
    return await _done(
        view,
        f"Merged into “{target.name}”.",
        undo={"path": "/graph/entities/split", "entity_id": merged},
        link=(f"/graph?entity={target.id}", "Open it"),
    )


@router.post("/graph/entities/split", response_class=HTMLResponse)
async def split_entity(view: View) -> Response:
    form = await _form(view)
    entity = await view.memory.split_entity(_field(form, "entity_id"), user_id=view.user_id)
    return await _done(
        view,
        f"“{entity.name}” split off again: what moved with its merge moved back.",
        link=(f"/graph?entity={entity.id}", "Open it"),
    )


# --- a conversation ---------------------------------------------------------------------------


@router.post("/conversations/delete", response_class=HTMLResponse)
async def delete_conversation(view: View) -> Response:
    form = await _form(view)
    conversation_id = path_value(_field(form, "conversation_id"))
    if form.get("confirmed") != "yes":
        found = await view.memory.get_conversation(conversation_id, user_id=view.user_id)
        return page(
            view,
            "confirm.html",
            title="Delete this conversation?",
            action="/conversations/delete",
            fields={"conversation_id": [conversation_id]},
            conversation=found,
            button="Delete for good",
        )
    receipt = await view.memory.erase_conversation(conversation_id, user_id=view.user_id)
    return await _done(
        view,
        f"Conversation deleted with its {receipt.memories} turns.",
        receipt=receipt,
        link=("/conversations", "Back to the conversations"),
    )


# --- users, exports, receipts -----------------------------------------------------------------


@router.get("/users", response_class=HTMLResponse)
async def users(view: View) -> Response:
    found = await view.memory.list_users(limit=500)
    return page(view, "users.html", users=found)


@router.get("/export")
async def export(view: View) -> Response:
    user = view.request.query_params.get("user_id", "").strip() or view.user_id
    lines = await view.memory.export_memories(user_id=user)
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    return _download(body, f"memvault-export-{_safe(user)}.jsonl", "application/x-ndjson")


@router.get("/receipts", response_class=HTMLResponse)
async def receipts(view: View) -> Response:
    user = view.request.query_params.get("user_id", "").strip() or None
    found = await view.memory.deletion_receipts(user_id=user, limit=200)
    return page(view, "receipts.html", receipts=found, user=user or "")


@router.get("/receipts/{request_id}")
async def receipt(view: View, request_id: str) -> Response:
    found = await view.memory.deletion_receipt(request_id)
    body = found.model_dump_json(indent=2) + "\n"
    return _download(body, f"deletion-receipt-{_safe(found.request_id)}.json", "application/json")


def _safe(name: str) -> str:
    """A file name's part from an id: letters, digits, dot, dash and underscore only."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)[:80]


def _download(body: str, filename: str, media_type: str) -> Response:
    return Response(
        body,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
