"""The knowledge graph's lines of an export: entities (with the memories that mention them),
facts current and superseded with both time axes (with the memories they were read from),
relations (with theirs) and open fact reviews, each with its id and, for entities and facts,
its vector. Facts stated directly (no source memory) are there too.

Import seals every text again under the importing store's key and tenant and rebuilds the
blind postings. A vector made by this store's model is kept (its size checked before); one
of another model is made again here, as the graph would make it (a name, a claim).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.db import graph as graph_db
from memvault.db import portable as db
from memvault.db.tables import (
    entity_mentions,
    entity_merges,
    fact_promotions,
    fact_reviews,
    fact_sources,
    relation_sources,
)
from memvault.embedding.chunking import clean
from memvault.errors import MemvaultError
from memvault.graph import sealed
from memvault.language import keyed
from memvault.lifecycle.portable_format import (
    FORMAT,
    EntityLine,
    EntityMergeLine,
    FactLine,
    FactPromotionLine,
    FactReviewLine,
    Line,
    Plan,
    Read,
    RelationLine,
    StrategyLine,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend

# (kind, id) -> (model, vector) for the rows an import embeds or keeps the vector of.
Vectors = dict[tuple[str, Any], tuple[str | None, list[float] | None]]


async def export_lines(
    backend: Backend, conn: AsyncConnection, tenant_id: str, rows: dict[str, list[dict[str, Any]]]
) -> list[Line]:
    keyring = backend.keys.current(tenant_id)
    eids = [r["id"] for r in rows["entity"]]
    fids = [r["id"] for r in rows["fact"]]
    rids = [r["id"] for r in rows["relation"]]
    mentions = _sources(await db.children(conn, entity_mentions, tenant_id, "entity_id", eids))
    facts_from = _sources(await db.children(conn, fact_sources, tenant_id, "fact_id", fids))
    relations_from = _sources(
        await db.children(conn, relation_sources, tenant_id, "relation_id", rids)
    )
    known = set(eids)
    lines: list[Line] = []
    for r in rows["entity"]:
        opened = sealed.open_entity(keyring, graph_db.EntityRow(**_columns(graph_db.EntityRow, r)))
        lines.append(
            EntityLine(
                memvault_export=FORMAT,
                kind="entity",
                name=opened.name,
                aliases=opened.aliases,
                description=opened.description,
                memory_ids=mentions.get(r["id"], []),
                **_fields(EntityLine, r, {"merged_into"}),
                merged_into=r["merged_into"] if r["merged_into"] in known else None,
            )
        )
    exported = set(fids)
    for r in rows["fact"]:
        claim, value = sealed.open_claim(keyring, graph_db.FactRow(**_columns(graph_db.FactRow, r)))
        lines.append(
            FactLine(
                memvault_export=FORMAT,
                kind="fact",
                claim=claim,
                value=value,
                memory_ids=facts_from.get(r["id"], []),
                **_fields(FactLine, r, {"superseded_by", "value"}),
                superseded_by=r["superseded_by"] if r["superseded_by"] in exported else None,
            )
        )
    for r in rows["relation"]:
        row = graph_db.RelationRow(**_columns(graph_db.RelationRow, r))
        lines.append(
            RelationLine(
                memvault_export=FORMAT,
                kind="relation",
                properties=sealed.open_relation_properties(keyring, row),
                memory_ids=relations_from.get(r["id"], []),
                **_fields(RelationLine, r, {"properties"}),
            )
        )
    for r in rows["fact_review"]:
        lines.append(
            FactReviewLine(memvault_export=FORMAT, kind="fact_review", **_fields(FactReviewLine, r))
        )
    relations = set(rids)
    for r in rows["entity_merge"]:
        if r["merged_id"] not in known or r["into_id"] not in known:
            continue
        lines.append(
            EntityMergeLine(
                memvault_export=FORMAT,
                kind="entity_merge",
                # What a merge moved and is gone since has nothing left to move back.
                subject_facts=[i for i in r["subject_facts"] if i in exported],
                object_facts=[i for i in r["object_facts"] if i in exported],
                source_relations=[i for i in r["source_relations"] if i in relations],
                target_relations=[i for i in r["target_relations"] if i in relations],
                **_fields(EntityMergeLine, r, _MOVED),
            )
        )
    for r in rows["fact_promotion"]:
        lines.append(
            FactPromotionLine(
                memvault_export=FORMAT, kind="fact_promotion", **_fields(FactPromotionLine, r)
            )
        )
    return lines


_MOVED = {"subject_facts", "object_facts", "source_relations", "target_relations"}


def _columns(record: type[Any], row: dict[str, Any]) -> dict[str, Any]:
    names = record.__dataclass_fields__
    return {k: v for k, v in row.items() if k in names}


def _fields(model: type[Any], row: dict[str, Any], skip: set[str] | None = None) -> dict[str, Any]:
    wanted = set(model.model_fields) - {"memvault_export", "kind"} - (skip or set())
    return {k: v for k, v in row.items() if k in wanted}


def _sources(rows: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    found: dict[Any, list[Any]] = {}
    for row in rows:
        parent = next(row[k] for k in ("entity_id", "fact_id", "relation_id") if k in row)
        found.setdefault(parent, []).append(row["memory_id"])
    return found


async def missing_vectors(backend: Backend, found: Read) -> Vectors:
    """The vector each entity, fact and strategy line gets here: its own when this store's
    model made it (its size was checked), else one made now from the text the store embeds
    for it. A row nothing could embed is kept without one, as the graph keeps it."""
    active = backend.embeddings.active_model
    kept: Vectors = {}
    texts: dict[tuple[str, Any], str] = {}
    limit = backend.settings.embedding_max_chars
    for kind in ("entity", "fact", "strategy"):
        for _, line in found.lines(kind):
            if line.embedding is not None and line.embedding_model == active:
                kept[(kind, line.id)] = (active, line.embedding)
            elif isinstance(line, EntityLine):
                texts[(kind, line.id)] = line.name
            elif isinstance(line, FactLine):
                texts[(kind, line.id)] = line.claim
            elif isinstance(line, StrategyLine):
                pattern = f"\n{line.context_pattern}" if line.context_pattern else ""
                texts[(kind, line.id)] = line.description + pattern
    if texts:
        try:
            embedded = await backend.embeddings.embed_batch(
                [clean(t, limit) for t in texts.values()]
            )
        except MemvaultError:
            # An entity or fact may wait for a vector, as the graph lets it; a strategy is
            # found only by one, so it fails the import as learning it would fail.
            if any(kind == "strategy" for kind, _ in texts):
                raise
            return kept | {key: (None, None) for key in texts}
        for key, vector in zip(texts, embedded.vectors, strict=True):
            kept[key] = (embedded.model_id, vector)
    return kept


async def import_lines(
    backend: Backend,
    conn: AsyncConnection,
    where: Plan,
    found: Read,
    vectors_for: Vectors,
    counts: dict[str, int],
) -> None:
    tenant_id, user_id = where.tenant_id, where.user_id
    keyring = backend.keys.current(tenant_id)
    mentions: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    relation_from: list[dict[str, Any]] = []
    entity_rows: list[dict[str, Any]] = []
    entity_postings: dict[Any, tuple[str, dict[int, int]]] = {}
    for _, e in found.lines("entity"):
        ident = where.id("entity", e.id)
        mentions.extend(
            {"tenant_id": tenant_id, "memory_id": where.ref("memory", m), "entity_id": ident,
             "user_id": user_id}
            for m in e.memory_ids
        )  # fmt: skip
        if not where.new("entity", e.id):
            continue
        values = e.model_dump(
            exclude={"memvault_export", "kind", "name", "aliases", "description", "embedding",
                     "embedding_model", "memory_ids"}
        )  # fmt: skip
        # The user's own entity is keyed apart by its name (a claimed property cannot make
        # another entity the user).
        values |= sealed.entity_columns(keyring, tenant_id, ident, e.name, e.aliases, e.description)
        model, vector = vectors_for.get(("entity", e.id), (None, None))
        values.update(
            tenant_id=tenant_id,
            id=ident,
            merged_into=where.ref("entity", e.merged_into),
            embedding=vector,
            embedding_model=model if vector is not None else None,
        )
        entity_rows.append(values)
        entity_postings[ident] = (user_id, keyed.entity_terms(keyring, e.name, e.aliases))
    counts["entities"] += await db.insert_new(conn, db.TABLES["entity"], entity_rows)
    await graph_db.replace_terms(conn, tenant_id, "entity", entity_postings, fresh=True)
    fact_rows: list[dict[str, Any]] = []
    fact_postings: dict[Any, tuple[str, dict[int, int]]] = {}
    for _, f in found.lines("fact"):
        ident = where.id("fact", f.id)
        sources.extend(
            {"tenant_id": tenant_id, "fact_id": ident, "memory_id": where.ref("memory", m),
             "user_id": user_id}
            for m in f.memory_ids
        )  # fmt: skip
        if not where.new("fact", f.id):
            continue
        values = f.model_dump(
            exclude={"memvault_export", "kind", "claim", "value", "embedding", "embedding_model",
                     "memory_ids"}
        )  # fmt: skip
        values |= sealed.fact_columns(keyring, tenant_id, ident, f.claim, f.value)
        terms = keyed.text_terms(keyring, f.claim)
        model, vector = vectors_for.get(("fact", f.id), (None, None))
        values.update(
            tenant_id=tenant_id,
            id=ident,
            subject_id=where.ref("entity", f.subject_id),
            object_id=where.ref("entity", f.object_id),
            superseded_by=where.ref("fact", f.superseded_by),
            term_count=sum(terms.values()),
            embedding=vector,
            embedding_model=model if vector is not None else None,
        )
        fact_rows.append(values)
        fact_postings[ident] = (user_id, terms)
    # Superseded facts name their successor (no foreign key): one statement, any order.
    counts["facts"] += await db.insert_new(conn, db.TABLES["fact"], fact_rows)
    await graph_db.replace_terms(conn, tenant_id, "fact", fact_postings, fresh=True)
    relation_rows: list[dict[str, Any]] = []
    for _, r in found.lines("relation"):
        ident = where.id("relation", r.id)
        relation_from.extend(
            {"tenant_id": tenant_id, "relation_id": ident, "memory_id": where.ref("memory", m),
             "user_id": user_id}
            for m in r.memory_ids
        )  # fmt: skip
        if not where.new("relation", r.id):
            continue
        values = r.model_dump(exclude={"memvault_export", "kind", "properties", "memory_ids"})
        values |= sealed.relation_columns(keyring, tenant_id, ident, r.properties)
        values.update(
            tenant_id=tenant_id,
            id=ident,
            source_id=where.ref("entity", r.source_id),
            target_id=where.ref("entity", r.target_id),
        )
        relation_rows.append(values)
    counts["relations"] += await db.insert_new(conn, db.TABLES["relation"], relation_rows)
    reviews = [
        {
            **v.model_dump(exclude={"memvault_export", "kind"}),
            "tenant_id": tenant_id,
            "id": where.id("fact_review", v.id),
            "fact_id": where.ref("fact", v.fact_id),
            "conflicts_with": where.ref("fact", v.conflicts_with),
        }
        for _, v in found.lines("fact_review")
        if where.new("fact_review", v.id)
    ]
    counts["fact_reviews"] += await db.insert_new(conn, fact_reviews, reviews)
    merges = []
    for _, m in found.lines("entity_merge"):
        if not where.new("entity_merge", m.id):
            continue
        values = m.model_dump(exclude={"memvault_export", "kind", *_MOVED})
        values.update(
            tenant_id=tenant_id,
            id=where.id("entity_merge", m.id),
            merged_id=where.ref("entity", m.merged_id),
            into_id=where.ref("entity", m.into_id),
            subject_facts=[where.ref("fact", i) for i in m.subject_facts],
            object_facts=[where.ref("fact", i) for i in m.object_facts],
            source_relations=[where.ref("relation", i) for i in m.source_relations],
            target_relations=[where.ref("relation", i) for i in m.target_relations],
        )
        merges.append(values)
    counts["entity_merges"] += await db.insert_new(conn, entity_merges, merges)
    promotions = [
        {
            **p.model_dump(exclude={"memvault_export", "kind"}),
            "tenant_id": tenant_id,
            "fact_id": where.ref("fact", p.fact_id),
            "promoted_from": where.ref("fact", p.promoted_from),
        }
        for _, p in found.lines("fact_promotion")
    ]
    counts["fact_promotions"] += await db.insert_new(conn, fact_promotions, promotions)
    await db.insert_new(conn, entity_mentions, mentions)
    await db.insert_new(conn, fact_sources, sources)
    await db.insert_new(conn, relation_sources, relation_from)
