"""Export and import of a user's memories as JSON lines: ids, content, every field, the
history (each version's text) and the vectors, so an import into another store (or tenant)
needs no re-embedding and keeps its history. Content is sealed again under the importing
store's key and tenant; keyword postings are rebuilt from the text.

Facts and entities join through ``PARTS`` once the graph's tables exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import health as db
from memvault.db import jobs, keywords, vectors
from memvault.errors import InvalidInput, validation_problems
from memvault.models import (
    Content,
    HistoryAction,
    Identifier,
    MemoryType,
    Metadata,
    Tier,
    Timestamp,
)
from memvault.retrieval.terms import blind_terms
from memvault.sealing import open_content, seal_content

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.db.records import HistoryRow, MemoryRow

FORMAT = 1
# Extra parts of an exported line (the graph's facts): export fills, import reads. Each gets
# the store for its keys (a part's text is sealed like a memory's).
PartExport = Callable[["Backend", AsyncConnection, str, list[UUID]], Awaitable[dict[UUID, Any]]]
PartImport = Callable[["Backend", AsyncConnection, str, UUID, Any], Awaitable[None]]
PARTS: dict[str, tuple[PartExport, PartImport]] = {}

_FIELDS = (
    "id",
    "user_id",
    "app_id",
    "project_id",
    "environment",
    "channel",
    "source",
    "tags",
    "metadata",
    "categories",
    "importance",
    "memory_type",
    "valid_until",
    "tier",
    "embedding_model",
    "access_count",
    "last_accessed",
    "occurred_at",
    "created_at",
    "updated_at",
    "expires_at",
)


class ExportedVersion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: HistoryAction
    old_content: Content | None = None
    new_content: Content | None = None
    old_metadata: Metadata | None = None
    new_metadata: Metadata | None = None
    actor: Identifier
    created_at: Timestamp


class ExportedMemory(BaseModel):
    """One line of an export."""

    model_config = ConfigDict(extra="forbid")
    memvault_export: int = Field(ge=FORMAT, le=FORMAT)
    id: UUID
    content: Content
    user_id: Identifier
    app_id: Identifier
    project_id: Identifier | None
    environment: Identifier | None
    channel: Identifier
    source: Identifier | None
    tags: list[Identifier]
    metadata: Metadata
    categories: list[Identifier]
    importance: int | None = Field(ge=1, le=10)
    memory_type: MemoryType
    valid_until: Timestamp | None
    tier: Tier
    embedding_model: Identifier | None
    access_count: int = Field(ge=0, le=2**31 - 1)
    last_accessed: Timestamp | None
    occurred_at: Timestamp
    created_at: Timestamp
    updated_at: Timestamp
    expires_at: Timestamp | None
    history: list[ExportedVersion] = Field(max_length=10_000)
    vectors: dict[Identifier, list[list[float]]]
    parts: dict[str, Any] = {}


def _open(backend: Backend, tenant_id: str, memory_id: UUID, sealed: tuple[Any, ...]) -> str | None:
    ciphertext, nonce, key_id = sealed
    if ciphertext is None:
        return None
    return open_content(backend.keys, tenant_id, memory_id, ciphertext, nonce, key_id)


async def export_user(backend: Backend, tenant_id: str, user_id: str) -> list[dict[str, Any]]:
    async with backend.engine.connect() as conn:
        rows = await db.user_memories(conn, tenant_id, user_id)
        ids = [r.id for r in rows]
        histories = await db.histories(conn, tenant_id, ids)
        chunks = await db.chunks(conn, tenant_id, ids)
        parts = {name: await out(backend, conn, tenant_id, ids) for name, (out, _) in PARTS.items()}
    return [_exported(backend, r, histories, chunks, parts) for r in rows]


def _exported(
    backend: Backend,
    row: MemoryRow,
    histories: dict[UUID, list[HistoryRow]],
    chunks: dict[UUID, dict[str, list[list[float]]]],
    parts: dict[str, dict[UUID, Any]],
) -> dict[str, Any]:
    history = [
        ExportedVersion(
            action=h.action,
            old_content=_open(
                backend, h.tenant_id, h.memory_id, (h.old_ciphertext, h.old_nonce, h.old_key_id)
            ),
            new_content=_open(
                backend, h.tenant_id, h.memory_id, (h.new_ciphertext, h.new_nonce, h.new_key_id)
            ),
            old_metadata=h.old_metadata,
            new_metadata=h.new_metadata,
            actor=h.actor,
            created_at=h.created_at,
        )
        for h in histories.get(row.id, [])
    ]
    line = ExportedMemory(
        memvault_export=FORMAT,
        content=_open(backend, row.tenant_id, row.id, (row.ciphertext, row.nonce, row.key_id))
        or "",
        history=history,
        vectors=chunks.get(row.id, {}),
        parts={name: found[row.id] for name, found in parts.items() if row.id in found},
        **{f: getattr(row, f) for f in _FIELDS},
    )
    return line.model_dump(mode="json")


# The graph's facts and entities (lifecycle/graph_portable.py).
from memvault.lifecycle import graph_portable  # noqa: E402

PARTS["graph"] = (graph_portable.export_part, graph_portable.import_part)


def parse_line(item: dict[str, Any], line: int) -> ExportedMemory:
    try:
        return ExportedMemory.model_validate(item)
    except ValidationError as exc:
        found = validation_problems(exc.errors(include_input=False, include_url=False))
        raise InvalidInput(
            "An exported memory is not valid.", details={"errors": found, "index": line}
        ) from None


async def import_memories(
    backend: Backend, tenant_id: str, items: list[ExportedMemory], actor: str
) -> dict[str, int]:
    """Insert exported memories with their ids, history and vectors, in one transaction;
    an id this tenant has already is skipped (an import can be run twice)."""
    counts = {"imported": 0, "skipped": 0, "queued_for_embedding": 0}
    active = backend.embeddings.active_model
    items = [_usable_vectors(backend, item) for item in items]
    async with backend.engine.begin() as conn:
        for item in items:
            if not await _insert(backend, conn, tenant_id, item, actor):
                counts["skipped"] += 1
                continue
            counts["imported"] += 1
            for name, (_, into) in PARTS.items():
                if name in item.parts:
                    await into(backend, conn, tenant_id, item.id, item.parts[name])
            if active not in item.vectors:
                await jobs.enqueue(conn, tenant_id, [item.id])
                counts["queued_for_embedding"] += 1
    backend.analyzer.wrote(counts["imported"])
    return counts


def _usable_vectors(backend: Backend, item: ExportedMemory) -> ExportedMemory:
    """Only the active model's vectors, and only of its size, are kept; the rest would be
    re-made by the worker anyway (the memory is queued for it)."""
    size = backend.embeddings.primary.dimensions
    vectors = item.vectors.get(backend.embeddings.active_model)
    usable = bool(vectors) and all(len(v) == size for v in vectors or [])
    kept = {backend.embeddings.active_model: vectors} if usable and vectors else {}
    return item.model_copy(update={"vectors": kept})


async def _insert(
    backend: Backend, conn: AsyncConnection, tenant_id: str, item: ExportedMemory, actor: str
) -> bool:
    active = backend.embeddings.active_model
    values = {f: getattr(item, f) for f in _FIELDS}
    terms, length = blind_terms(backend.keys.current(tenant_id), item.content)
    values.update(
        tenant_id=tenant_id,
        embedded=active in item.vectors,
        embedding_model=active if active in item.vectors else None,
        term_count=length,
        **seal_content(backend.keys, tenant_id, item.id, item.content),
    )
    if not await db.insert_exported(conn, values):
        return False
    await db.insert_history(conn, [_version(backend, tenant_id, item, v) for v in item.history])
    if active in item.vectors:
        await vectors.replace_chunks(
            conn, tenant_id, {item.id: (item.user_id, item.vectors[active])}, active
        )
    await keywords.replace_terms(conn, tenant_id, {item.id: (item.user_id, terms, length)})
    return True


def _version(
    backend: Backend, tenant_id: str, item: ExportedMemory, version: ExportedVersion
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "tenant_id": tenant_id,
        "memory_id": item.id,
        "user_id": item.user_id,
        "action": version.action,
        "old_metadata": version.old_metadata,
        "new_metadata": version.new_metadata,
        "actor": version.actor,
        "created_at": version.created_at,
    }
    for side in ("old", "new"):
        text = getattr(version, f"{side}_content")
        sealed = seal_content(backend.keys, tenant_id, item.id, text) if text is not None else {}
        row[f"{side}_ciphertext"] = sealed.get("ciphertext")
        row[f"{side}_nonce"] = sealed.get("nonce")
        row[f"{side}_key_id"] = sealed.get("key_id")
    return row
