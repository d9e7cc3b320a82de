"""The ``graph`` part of an export line: the facts read from that memory (current and
superseded, with both time axes, their ids and vectors) and the entities they name. Import
seals them again under the importing store's key and tenant and rebuilds their blind
postings; a row whose id the tenant has already is left as it is, so a fact or entity named by
several memories comes in once and an import can run twice.

Facts stated directly (``POST /v1/facts``, no source memory) are not in a memory's line and so
are not exported.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import graph as graph_db
from memvault.db import graph_lifecycle as db
from memvault.graph import sealed
from memvault.models import Identifier

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.crypto import KeyringSource


class ExportedEntity(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: UUID
    user_id: Identifier
    app_id: Identifier
    channel: Identifier
    type: str
    name: str
    aliases: list[str] = []
    description: str | None = None
    salience: float = Field(ge=0, le=1)
    access_count: int = Field(ge=0)
    last_accessed: datetime | None
    first_seen: datetime
    properties: dict[str, Any] = {}
    embedding: list[float] | None = None
    embedding_model: str | None = None


class ExportedFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: UUID
    user_id: Identifier
    app_id: Identifier
    channel: Identifier
    subject_id: UUID
    predicate: str
    object_id: UUID | None
    claim: str
    value: str | None
    confidence: float = Field(ge=0, le=1)
    certainty: str
    temporal: str
    source: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: UUID | None
    access_count: int = Field(ge=0)
    last_accessed: datetime | None
    embedding: list[float] | None = None
    embedding_model: str | None = None


class ExportedGraph(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entities: list[ExportedEntity]
    facts: list[ExportedFact]


def _entity(keys: KeyringSource, found: db.VectoredEntity) -> ExportedEntity:
    row = found.row
    opened = sealed.open_entity(keys.current(row.tenant_id), row)
    return ExportedEntity(
        id=row.id,
        user_id=row.user_id,
        app_id=row.app_id,
        channel=row.channel,
        type=row.type,
        name=opened.name,
        aliases=opened.aliases,
        description=opened.description,
        salience=row.salience,
        access_count=row.access_count,
        last_accessed=row.last_accessed,
        first_seen=row.first_seen,
        properties=row.properties,
        embedding=found.embedding,
        embedding_model=found.embedding_model,
    )


def _fact(keys: KeyringSource, found: db.SourcedFact) -> ExportedFact:
    row = found.row
    claim, value = sealed.open_claim(keys.current(row.tenant_id), row)
    return ExportedFact(
        id=row.id,
        user_id=row.user_id,
        app_id=row.app_id,
        channel=row.channel,
        subject_id=row.subject_id,
        predicate=row.predicate,
        object_id=row.object_id,
        claim=claim,
        value=value,
        confidence=row.confidence,
        certainty=row.certainty,
        temporal=row.temporal,
        source=row.source,
        valid_from=row.valid_from,
        valid_until=row.valid_until,
        recorded_at=row.recorded_at,
        superseded_at=row.superseded_at,
        superseded_by=row.superseded_by,
        access_count=row.access_count,
        last_accessed=row.last_accessed,
        embedding=found.embedding,
        embedding_model=found.embedding_model,
    )


async def export_part(
    backend: Backend, conn: AsyncConnection, tenant_id: str, memory_ids: list[UUID]
) -> dict[UUID, Any]:
    found = await db.facts_of_memories(conn, tenant_id, memory_ids)
    named = {i for f in found for i in (f.row.subject_id, f.row.object_id) if i is not None}
    ents = {e.row.id: e for e in await db.entities_by_id(conn, tenant_id, sorted(named))}
    lines: dict[UUID, tuple[dict[UUID, Any], list[Any]]] = {}
    for f in found:
        named_here, facts_here = lines.setdefault(f.memory_id, ({}, []))
        facts_here.append(_fact(backend.keys, f).model_dump(mode="json"))
        for ident in (f.row.subject_id, f.row.object_id):
            if ident is not None and ident in ents and ident not in named_here:
                named_here[ident] = _entity(backend.keys, ents[ident]).model_dump(mode="json")
    return {m: {"entities": list(e.values()), "facts": fs} for m, (e, fs) in lines.items()}


async def import_part(
    backend: Backend, conn: AsyncConnection, tenant_id: str, memory_id: UUID, data: Any
) -> None:
    graph = ExportedGraph.model_validate(data)
    keyring = backend.keys.current(tenant_id)
    active = backend.embeddings.active_model
    for e in graph.entities:
        values = e.model_dump(exclude={"name", "aliases", "description", "embedding"})
        values |= sealed.entity_columns(keyring, tenant_id, e.id, e.name, e.aliases, e.description)
        if e.properties.get("self"):
            values["name_key"] = sealed.self_key(keyring)
        values.update(_vector_columns(e.embedding, e.embedding_model, active))
        if await db.insert_new(conn, "entities", {"tenant_id": tenant_id, **values}):
            terms = sealed.entity_terms(keyring, e.name, e.aliases)
            await graph_db.replace_terms(conn, tenant_id, "entity", {e.id: (e.user_id, terms)})
    for f in graph.facts:
        values = f.model_dump(exclude={"claim", "value", "embedding"})
        values |= sealed.fact_columns(keyring, tenant_id, f.id, f.claim, f.value)
        values.update(_vector_columns(f.embedding, f.embedding_model, active))
        if await db.insert_new(conn, "facts", {"tenant_id": tenant_id, **values}):
            terms = sealed.text_terms(keyring, f.claim)
            await graph_db.replace_terms(conn, tenant_id, "fact", {f.id: (f.user_id, terms)})
        source = {"fact_id": f.id, "memory_id": memory_id, "user_id": f.user_id}
        await db.insert_new(conn, "fact_sources", {"tenant_id": tenant_id, **source})


def _vector_columns(vector: list[float] | None, model: str | None, active: str) -> dict[str, Any]:
    # Another model's vector could not be compared with this store's: left for re-embedding.
    if vector is None or model != active:
        return {"embedding": None, "embedding_model": None}
    return {"embedding": vector, "embedding_model": model}
