"""Applying an extraction: resolve entity mentions within the user's scope, write facts (with
supersession), relations and mentions, their keys and vectors, in the caller's transaction.

Embedding happens before the transaction (:meth:`GraphWriter.prepare`), so a slow model never
holds a lock; the writes happen inside it (:meth:`GraphWriter.apply`), so a memory and what is
derived from it commit or fail together.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

import numpy as np
import numpy.typing as npt

from memvault.db import graph as graph_db
from memvault.db import webhooks
from memvault.db.graph import EntityRow, FactRow
from memvault.embedding.chunking import clean
from memvault.errors import MemvaultError
from memvault.graph import sealed, supersede
from memvault.graph.claims import SELF, EntityMention, Extraction, FactClaim, RelationClaim
from memvault.graph.supersede import NewFact, Policy
from memvault.language import keyed

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend

log = logging.getLogger(__name__)
# A merged entity's chain is followed this far (a merge into a merged entity is refused, so
# one step is the rule; the bound guards against a cycle written by hand).
_MAX_MERGE_HOPS = 5
# Cosine similarities this close are too close to compare outside the database.
_CLOSE = 1e-4


class _Ask:
    """A reading up front cannot answer: ask the database."""


_ASK = _Ask()
_Nearest = tuple[EntityRow, float] | None | _Ask


def _unit(vector: Sequence[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float32).astype(np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


@dataclass(frozen=True)
class Owner:
    tenant_id: str
    user_id: str
    app_id: str = "default"
    channel: str = "_global"


@dataclass
class Prepared:
    """An extraction with its vectors (text → vector), made before the transaction."""

    extraction: Extraction
    vectors: dict[str, list[float]] = field(default_factory=dict)
    model: str | None = None


@dataclass
class _Deferred:
    """A batch's graph rows that nothing reads before its commit (see GraphWriter.defer)."""

    mentions: dict[UUID, set[UUID]] = field(default_factory=dict)  # memory → entities
    sources: set[tuple[UUID, UUID]] = field(default_factory=set)  # (fact, memory)
    terms: dict[str, dict[UUID, tuple[str, dict[int, int]]]] = field(
        default_factory=lambda: {"fact": {}, "entity": {}}
    )
    events: list[webhooks.Event] = field(default_factory=list)
    # New entities and facts, each inserted together before anything reads or refers to them.
    entities: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    facts: dict[UUID, dict[str, Any]] = field(default_factory=dict)

    def clear(self) -> None:
        self.entities.clear()
        self.facts.clear()
        self.mentions.clear()
        self.sources.clear()
        for postings in self.terms.values():
            postings.clear()
        self.events.clear()


@dataclass
class _Known:
    """The owner's entities that a batch's names and aliases name, read in one statement
    before the batch writes (a statement a name was the largest share of a bulk write's
    graph statements), and what the batch's own writes have since made stale: a lookup that
    touches those goes to the database, as every lookup did."""

    rows: dict[bytes, list[EntityRow]]  # every key read → the entities that have it
    stale_keys: set[bytes] = field(default_factory=set)
    stale_ids: set[UUID] = field(default_factory=set)
    # The current facts of each (subject, predicate) the batch writes, locked and read in one
    # statement once its names are resolved (see GraphWriter.preload_facts), then kept as the
    # batch's own writes change them, in the database's order: a lock and a read a claim were
    # most of a bulk write's graph statements.
    facts: dict[tuple[UUID, str], list[FactRow]] = field(default_factory=dict)
    # For each name no key found, the owner's nearest entity by name vector as stored before
    # the batch (one statement for all), the model of those vectors, and the vectors of the
    # entities the batch has created since, which that reading cannot know.
    nearest: dict[str, tuple[EntityRow, float] | None] = field(default_factory=dict)
    model: str | None = None
    threshold: float = 1.0  # the similarity at which a name matches an entity
    created: list[npt.NDArray[np.float64]] = field(default_factory=list)

    def nearest_of(self, name: str, vector: list[float], model: str | None) -> _Nearest:
        """The entity nearest ``vector`` as :func:`graph_db.nearest_entities` would find it
        now, or ``None`` where it would find none that can match; ``_ASK`` when only the
        database can tell (a name not read up front, a row the batch has changed, or an
        entity the batch created that is as near or near enough to match)."""
        if name not in self.nearest or model != self.model:
            return _ASK
        stored = self.nearest[name]
        if stored is not None and stored[0].id in self.stale_ids:
            return _ASK
        if not self.created:
            return stored
        probe = _unit(vector)
        # Worked here in double precision, in the database in single: what is within
        # _CLOSE of a threshold or of the stored neighbour is left to the database.
        created = max(float(c @ probe) for c in self.created)
        if created >= self.threshold - _CLOSE:
            return _ASK
        if stored is None or stored[1] < self.threshold - _CLOSE:
            return None  # whichever is the nearest, it is too far to match
        return stored if stored[1] > created + _CLOSE else _ASK

    def fact_written(self, key: tuple[UUID, str], row: FactRow) -> None:
        current = self.facts.get(key)
        if current is not None and row.superseded_at is None:
            current.append(row)
            current.sort(key=lambda f: (f.recorded_at, f.id))

    def fact_changed(self, key: tuple[UUID, str], fact_id: UUID, changes: dict[str, Any]) -> None:
        current = self.facts.get(key)
        if current is None:
            return
        changed = [replace(f, **changes) if f.id == fact_id else f for f in current]
        self.facts[key] = [f for f in changed if f.superseded_at is None]

    def lookup(self, keys: Sequence[bytes]) -> list[EntityRow] | None:
        """The entities with any of ``keys``, in the database's order; ``None`` when this
        cannot say (a key not read, or one the batch has written since)."""
        if any(k not in self.rows or k in self.stale_keys for k in keys):
            return None
        found = {r.id: r for k in keys for r in self.rows[k]}
        if not self.stale_ids.isdisjoint(found):
            return None
        return sorted(found.values(), key=lambda r: (r.merged_into is not None, r.first_seen, r.id))

    def written(self, entity_id: UUID, values: dict[str, Any]) -> None:
        self.stale_ids.add(entity_id)
        self.stale_keys.update([values["name_key"], *values["alias_keys"]])


@dataclass
class Applied:
    fact_ids: list[UUID] = field(default_factory=list)
    entity_ids: list[UUID] = field(default_factory=list)
    relation_ids: list[UUID] = field(default_factory=list)


def _lock_name(name: str) -> str:
    return "\x00self" if name == SELF else keyed.normalise_name(name)


def _all_names(extraction: Extraction) -> list[str]:
    names = [n for m in extraction.entities for n in (m.name, *m.aliases)]
    for fact in extraction.facts:
        names += [fact.subject, *([fact.object] if fact.object else [])]
    for relation in extraction.relations:
        names += [relation.source, relation.target]
    return names


def _mentions(extraction: Extraction) -> list[EntityMention]:
    """Every mention :meth:`GraphWriter.apply` resolves, in the order it resolves them (a name
    may resolve to an entity an earlier one created)."""
    mentions = list(extraction.entities)
    for fact in extraction.facts:
        mentions += [EntityMention(n) for n in (fact.subject, fact.object) if n is not None]
    for relation in extraction.relations:
        mentions += [EntityMention(relation.source), EntityMention(relation.target)]
    return mentions


def entity_names(extraction: Extraction) -> list[str]:
    """Every surface name an extraction uses (aliases included), once, the user left out."""
    return [n for n in dict.fromkeys(_all_names(extraction)) if n != SELF]


def texts_to_embed(extraction: Extraction) -> list[str]:
    return list(dict.fromkeys([*entity_names(extraction), *(f.claim for f in extraction.facts)]))


async def prepare_many(backend: Backend, extractions: Sequence[Extraction]) -> list[Prepared]:
    """Every name and claim of a batch of extractions embedded in one call; without a model,
    no vectors (resolution then goes by names and aliases only)."""
    texts = graph_texts(extractions)
    if not texts:
        return [Prepared(e) for e in extractions]
    limit = backend.settings.embedding_max_chars
    try:
        embedded = await backend.embeddings.embed_batch([clean(t, limit) for t in texts])
    except MemvaultError as exc:
        log.warning("graph embedding failed (%s); resolving by names only", exc.code)
        return [Prepared(e) for e in extractions]
    vectors = dict(zip(texts, embedded.vectors, strict=True))
    return [Prepared(e, vectors, embedded.model_id) for e in extractions]


def graph_texts(extractions: Sequence[Extraction]) -> list[str]:
    """Every name and claim of these extractions that needs a vector, once."""
    return list(dict.fromkeys(t for e in extractions for t in texts_to_embed(e)))


class GraphWriter:
    def __init__(self, backend: Backend, owner: Owner, *, policy: Policy | None = None) -> None:
        self.backend = backend
        self.owner = owner
        self.policy: Policy = policy or backend.settings.graph_contradiction_policy
        self.keyring = backend.keys.current(owner.tenant_id)
        self._resolved: dict[str, UUID] = {}
        self._touched_entities: set[UUID] = set()
        self._locked: set[str] = set()  # names whose lock this writer's transaction holds
        # While a batch is written (:meth:`defer`), what nothing reads before it commits.
        self._deferred: _Deferred | None = None
        self._known: _Known | None = None  # see :meth:`preload`

    async def prepare(self, extraction: Extraction) -> Prepared:
        """Embed every entity name and fact claim in one call."""
        (prepared,) = await prepare_many(self.backend, [extraction])
        return prepared

    def names(self, prepared: Prepared) -> set[str]:
        """The normalised names applying ``prepared`` may create, the ones it locks."""
        return {_lock_name(n) for n in _all_names(prepared.extraction)}

    def hold(self, names: set[str]) -> None:
        """``names`` are locked in the transaction this writer writes in (a batch's caller
        locked every extraction's names at once): :meth:`apply` takes no lock on them again."""
        self._locked |= names

    async def preload(
        self, conn: AsyncConnection, batch: Sequence[Prepared], like: GraphWriter | None = None
    ) -> None:
        """The owner's entities that any name of ``batch`` may resolve to, read in one
        statement for :meth:`resolve`, until this transaction ends. ``like``: a writer of
        the same user in the same transaction whose reading this one shares (what one
        writes, the other must not read from before it)."""
        if like is not None and like._known is not None:
            self._known = like._known
            return
        mentions = [(m, p) for p in batch for m in _mentions(p.extraction)]
        keys = list(dict.fromkeys(k for m, _ in mentions for k in self._keys(m)))
        o = self.owner
        known = _Known({k: [] for k in keys})
        known.threshold = self.backend.settings.graph_entity_match_threshold
        for row in await graph_db.entities_by_keys(conn, o.tenant_id, o.user_id, keys):
            for key in {row.name_key, *row.alias_keys} & known.rows.keys():
                known.rows[key].append(row)
        self._known = known
        # The names no key found are looked for by their vectors: all in one statement.
        known.model = next((p.model for p in batch if p.model is not None), None)
        unknown: dict[str, list[float]] = {}
        for mention, p in mentions:
            vector = p.vectors.get(mention.name)
            if mention.name == SELF or vector is None or p.model != known.model:
                continue
            if not any(known.rows[k] for k in self._keys(mention)):
                unknown.setdefault(mention.name, vector)
        if unknown and known.model is not None:
            found = await graph_db.nearest_entities_each(
                conn, o.tenant_id, o.user_id, list(unknown.values()), known.model
            )
            known.nearest = dict(zip(unknown, found, strict=True))

    async def resolve_all(self, conn: AsyncConnection, prepared: Prepared) -> None:
        """Every name of ``prepared`` resolved (new entities created) as :meth:`apply` would
        resolve them, before any of the batch's facts is written, so their subjects are
        known and locked together (:meth:`preload_facts`); :meth:`apply` then finds each
        name resolved."""
        self._prepared = prepared
        for mention in _mentions(prepared.extraction):
            await self.resolve(conn, mention)

    def subjects(self, prepared: Prepared) -> list[tuple[UUID, str]]:
        """The (subject id, predicate) of each claim of ``prepared``, once resolved."""
        return [
            (self._resolved[_lock_name(c.subject)], c.predicate) for c in prepared.extraction.facts
        ]

    async def preload_facts(self, conn: AsyncConnection, pairs: Sequence[tuple[UUID, str]]) -> None:
        """The current facts of every (subject id, predicate) a batch writes, locked (subjects
        first, in one global order) and read in two statements, for :meth:`_write_fact`,
        until this transaction ends (after :meth:`preload`, whose reading it extends)."""
        assert self._known is not None
        wanted = sorted(set(pairs) - self._known.facts.keys())
        o = self.owner
        await graph_db.lock_subjects(conn, o.tenant_id, wanted)
        self._known.facts.update(
            await graph_db.current_facts_of_many(conn, o.tenant_id, o.user_id, wanted)
        )

    def forget(self) -> None:
        """Drop what :meth:`preload` read: it holds for its transaction only."""
        self._known = None

    def _keys(self, mention: EntityMention) -> list[bytes]:
        if mention.name == SELF:
            return [keyed.self_key(self.keyring, k) for k in sorted(self.keyring.key_ids)]
        return keyed.name_keys(self.keyring, [mention.name, *mention.aliases])

    def defer(self, like: GraphWriter | None = None) -> None:
        """Collect the memories' mentions, the facts' sources, the new facts' and entities'
        keyword postings and the facts' events until :meth:`flush`: a statement each a
        batch instead of a few a memory (nothing in the batch's writes reads them).
        ``like``: a deferring writer of the same user in the same transaction, whose
        collection this one shares (an entity one creates, the other may teach an alias)."""
        shared = like._deferred if like is not None else None
        self._deferred = shared if shared is not None else _Deferred()

    async def flush(self, conn: AsyncConnection) -> None:
        """What :meth:`defer` collected, written in ``conn``'s transaction (once for the
        writers sharing it: it is emptied here)."""
        deferred, self._deferred = self._deferred, None
        if deferred is None:
            return
        o = self.owner
        await graph_db.insert_entities(conn, list(deferred.entities.values()))
        await graph_db.insert_facts(conn, list(deferred.facts.values()))
        mentions = {m: (o.user_id, ids) for m, ids in deferred.mentions.items()}
        await graph_db.add_many_mentions(conn, o.tenant_id, mentions)
        await graph_db.add_fact_sources(conn, o.tenant_id, o.user_id, sorted(deferred.sources))
        for kind, postings in deferred.terms.items():
            await graph_db.replace_terms(conn, o.tenant_id, kind, postings, fresh=True)
        await webhooks.emit(conn, deferred.events)
        deferred.clear()

    async def apply(
        self,
        conn: AsyncConnection,
        prepared: Prepared,
        *,
        memory_id: UUID | None,
        reference_time: datetime,
        source: str | None,
        confidence: float | None = None,
    ) -> Applied:
        applied = Applied()
        self._prepared = prepared
        self._touched_entities = set()  # this memory's mentions (a writer may write several)
        extraction = prepared.extraction
        # Every name this extraction may create, locked up front in one global order, so two
        # writers naming the same entities the other way round never wait on each other.
        names = self.names(prepared)
        await graph_db.lock_names(
            conn, self.owner.tenant_id, self.owner.user_id, names - self._locked
        )
        self._locked |= names
        for mention in extraction.entities:
            applied.entity_ids.append(await self.resolve(conn, mention))
        for claim in extraction.facts:
            fact_id = await self._write_fact(
                conn, claim, memory_id, reference_time, source, confidence
            )
            applied.fact_ids.append(fact_id)
        for relation in extraction.relations:
            applied.relation_ids.append(await self._write_relation(conn, relation, memory_id))
        if memory_id is not None and self._deferred is not None:
            self._deferred.mentions.setdefault(memory_id, set()).update(self._touched_entities)
        elif memory_id is not None:
            await graph_db.add_mentions(
                conn, self.owner.tenant_id, self.owner.user_id, memory_id, self._touched_entities
            )
        applied.entity_ids = sorted(set(applied.entity_ids) | self._touched_entities)
        return applied

    # --- entities -------------------------------------------------------------------------

    async def resolve(self, conn: AsyncConnection, mention: EntityMention) -> UUID:
        """The entity a mention names: by normalised name or alias, else by name embedding
        above the threshold, else a new one. Within one extraction a name resolves once."""
        norm = _lock_name(mention.name)
        # A bare name seen before in this transaction is that entity still (its name is
        # locked); one with aliases or a description may teach the entity something.
        if norm in self._resolved and not (mention.aliases or mention.description):
            self._touched_entities.add(self._resolved[norm])
            return self._resolved[norm]
        o = self.owner
        keys = self._keys(mention)
        if norm not in self._locked:
            await graph_db.lock_name(conn, o.tenant_id, o.user_id, norm)
            self._locked.add(norm)
        found = self._known.lookup(keys) if self._known is not None else None
        if found is None:
            await self._insert_new(conn)
            found = await graph_db.entities_by_keys(conn, o.tenant_id, o.user_id, keys)
        entity: EntityRow | None = None
        if found:
            entity = await self._followed(conn, found[0])
        elif mention.name != SELF:
            entity = await self._similar(conn, mention)
        if entity is None:
            entity_id = await self._create(conn, mention)
        else:
            entity_id = entity.id
            # A name that resolved through a merge stays the merged entity's, so a split
            # gives it back whole.
            if not found or found[0].id == entity.id:
                await self._learn_aliases(conn, entity, mention)
        self._resolved[norm] = entity_id
        self._touched_entities.add(entity_id)
        return entity_id

    async def _insert_new(self, conn: AsyncConnection) -> None:
        """The batch's new entities so far, in one statement: before anything reads entities
        or writes what refers to them."""
        if self._deferred is not None and self._deferred.entities:
            await graph_db.insert_entities(conn, list(self._deferred.entities.values()))
            self._deferred.entities.clear()

    async def _insert_facts(self, conn: AsyncConnection) -> None:
        """The batch's new facts so far, in one statement: before a fact is read from the
        database or a review refers to one."""
        if self._deferred is not None and self._deferred.facts:
            await graph_db.insert_facts(conn, list(self._deferred.facts.values()))
            self._deferred.facts.clear()

    async def _followed(self, conn: AsyncConnection, entity: EntityRow) -> EntityRow:
        o = self.owner
        for _ in range(_MAX_MERGE_HOPS):
            if entity.merged_into is None:
                return entity
            await self._insert_new(conn)
            target = await graph_db.fetch_entity(conn, o.tenant_id, o.user_id, entity.merged_into)
            if target is None:
                return entity
            entity = target
        return entity

    async def _similar(self, conn: AsyncConnection, mention: EntityMention) -> EntityRow | None:
        vector = self._vector(mention.name)
        if vector is None:
            return None
        o = self.owner
        assert self._prepared.model is not None
        known = (
            self._known.nearest_of(mention.name, vector, self._prepared.model)
            if (self._known is not None)
            else _ASK
        )
        if isinstance(known, _Ask):
            await self._insert_new(conn)
            nearest = await graph_db.nearest_entities(
                conn, o.tenant_id, o.user_id, vector, self._prepared.model, 1
            )
        else:
            nearest = [known] if known is not None else []
        threshold = self.backend.settings.graph_entity_match_threshold
        for entity, similarity in nearest:
            compatible = "other" in (entity.type, mention.type) or entity.type == mention.type
            if similarity >= threshold and compatible:
                return entity
        return None

    def _vector(self, text: str) -> list[float] | None:
        return self._prepared.vectors.get(text)

    async def _create(self, conn: AsyncConnection, mention: EntityMention) -> UUID:
        o = self.owner
        entity_id = uuid4()
        aliases = [a for a in dict.fromkeys(mention.aliases) if a != mention.name]
        values: dict[str, Any] = {
            "tenant_id": o.tenant_id,
            "id": entity_id,
            "user_id": o.user_id,
            "app_id": o.app_id,
            "channel": o.channel,
            "type": "person" if mention.name == SELF else mention.type,
            **sealed.entity_columns(
                self.keyring, o.tenant_id, entity_id, mention.name, aliases, mention.description
            ),
            "properties": {"self": True} if mention.name == SELF else {},
        }
        vector = self._vector(mention.name)
        model = self._prepared.model if vector is not None else None
        values.update(embedding=vector, embedding_model=model)
        if self._deferred is not None:
            self._deferred.entities[entity_id] = values
        else:
            await graph_db.insert_entity(conn, values)
        if self._known is not None:
            self._known.written(entity_id, values)
            if vector is not None and self._prepared.model == self._known.model:
                self._known.created.append(_unit(vector))
        await self._index_entity(conn, entity_id, mention.name, aliases, fresh=True)
        return entity_id

    async def _learn_aliases(
        self, conn: AsyncConnection, entity: EntityRow, mention: EntityMention
    ) -> None:
        """A name or alias the entity did not have yet becomes one of its aliases (and a
        description fills an empty one)."""
        if mention.name == SELF:
            return
        opened = sealed.open_entity(self.keyring, entity)
        known = {keyed.normalise_name(n) for n in (opened.name, *opened.aliases)}
        new = [
            a
            for a in dict.fromkeys((mention.name, *mention.aliases))
            if keyed.normalise_name(a) not in known
        ]
        description = opened.description or mention.description
        if not new and description == opened.description:
            return
        aliases = [*opened.aliases, *new]
        o = self.owner
        values = sealed.entity_columns(
            self.keyring, o.tenant_id, entity.id, opened.name, aliases, description
        )
        if entity.properties.get("self"):
            values["name_key"] = keyed.self_key(self.keyring)
        await graph_db.update_entity(conn, o.tenant_id, entity.id, values)
        if self._known is not None:
            self._known.written(entity.id, values)
        await self._index_entity(conn, entity.id, opened.name, aliases)

    async def _index_entity(
        self,
        conn: AsyncConnection,
        entity_id: UUID,
        name: str,
        aliases: list[str],
        *,
        fresh: bool = False,
    ) -> None:
        terms = keyed.entity_terms(self.keyring, name, aliases)
        pending = self._deferred.terms["entity"] if self._deferred is not None else None
        if pending is not None and (fresh or entity_id in pending):
            # Not written yet: replacing them is replacing what will be written.
            pending[entity_id] = (self.owner.user_id, terms)
            return
        postings = {entity_id: (self.owner.user_id, terms)}
        await graph_db.replace_terms(conn, self.owner.tenant_id, "entity", postings, fresh=fresh)

    async def _add_source(self, conn: AsyncConnection, fact_id: UUID, memory_id: UUID) -> None:
        if self._deferred is not None:
            self._deferred.sources.add((fact_id, memory_id))
            return
        o = self.owner
        await graph_db.add_fact_source(conn, o.tenant_id, o.user_id, fact_id, memory_id)

    # --- facts ----------------------------------------------------------------------------

    async def _write_fact(
        self,
        conn: AsyncConnection,
        claim: FactClaim,
        memory_id: UUID | None,
        reference_time: datetime,
        source: str | None,
        confidence: float | None,
    ) -> UUID:
        o = self.owner
        subject_id = await self.resolve(conn, EntityMention(claim.subject))
        object_id = None
        if claim.object is not None:
            object_id = await self.resolve(conn, EntityMention(claim.object))
        await self._insert_new(conn)
        key = (subject_id, claim.predicate)
        known = self._known.facts if self._known is not None else {}
        current = list(known.get(key, ()))
        if key not in known:
            await self._insert_facts(conn)
            await graph_db.lock_subject(conn, o.tenant_id, subject_id, claim.predicate)
            current = await graph_db.current_facts_of(
                conn, o.tenant_id, o.user_id, subject_id, claim.predicate
            )
        value_key = keyed.value_key(self.keyring, claim.value) if claim.value is not None else None
        same = [
            f
            for f in current
            if (object_id is not None and f.object_id == object_id)
            or (value_key is not None and f.value_key == value_key)
        ]
        strength = confidence if confidence is not None else claim.confidence
        if same and claim.temporal != "past":
            # Said again: one more source for the fact we hold, never a second copy.
            kept = same[0]
            if strength > kept.confidence:
                await self._change_fact(conn, key, kept.id, {"confidence": strength})
            if memory_id is not None:
                await self._add_source(conn, kept.id, memory_id)
            return kept.id
        now = datetime.now(UTC)
        valid_from = claim.valid_from
        if valid_from is None and claim.temporal == "current":
            valid_from = min(reference_time, now)
        new = NewFact(
            claim.predicate,
            claim.temporal,
            claim.corrects,
            valid_from,
            explicit_start=claim.valid_from is not None,
        )
        rivals = [f for f in current if f not in same]
        decided = supersede.plan(self.policy, new, rivals, now)
        fact_id = uuid4()
        values: dict[str, Any] = {
            "tenant_id": o.tenant_id,
            "id": fact_id,
            "user_id": o.user_id,
            "app_id": o.app_id,
            "channel": o.channel,
            "subject_id": subject_id,
            "predicate": claim.predicate,
            "object_id": object_id,
            **sealed.fact_columns(self.keyring, o.tenant_id, fact_id, claim.claim, claim.value),
            "confidence": strength,
            "certainty": claim.certainty,
            "temporal": claim.temporal,
            "source": source,
            "valid_from": valid_from,
            "valid_until": claim.valid_until,
            "recorded_at": now,
            **decided.new,
        }
        if decided.superseded_by_old is not None:
            values["superseded_by"] = decided.superseded_by_old
        vector = self._vector(claim.claim)
        if vector is not None:
            values.update(embedding=vector, embedding_model=self._prepared.model)
        if value_key is not None:
            values["value_key"] = value_key
        await self._insert_fact(conn, key, values)
        terms = keyed.text_terms(self.keyring, claim.claim)
        if self._deferred is not None:
            self._deferred.terms["fact"][fact_id] = (o.user_id, terms)
        else:
            postings = {fact_id: (o.user_id, terms)}
            await graph_db.replace_terms(conn, o.tenant_id, "fact", postings, fresh=True)
        if memory_id is not None:
            await self._add_source(conn, fact_id, memory_id)
        for old_id, changes in decided.old.items():
            await self._change_fact(conn, key, old_id, {**changes, "superseded_by": fact_id})
        if decided.reviews:
            await self._insert_facts(conn)
        for rival in decided.reviews:
            await graph_db.insert_review(
                conn,
                {
                    "tenant_id": o.tenant_id,
                    "id": uuid4(),
                    "user_id": o.user_id,
                    "fact_id": fact_id,
                    "conflicts_with": rival,
                    "reason": f"contradicts the current {claim.predicate}",
                },
            )
        await self._fact_events(conn, fact_id, claim.predicate, memory_id, decided)
        return fact_id

    async def _insert_fact(
        self, conn: AsyncConnection, key: tuple[UUID, str], values: dict[str, Any]
    ) -> None:
        """A new fact, with the batch's (see :meth:`defer`) or at once."""
        if self._deferred is not None:
            self._deferred.facts[values["id"]] = values
            row = graph_db.new_fact(values)
        else:
            row = await graph_db.insert_fact(conn, values)
        if self._known is not None:
            self._known.fact_written(key, row)

    async def _change_fact(
        self, conn: AsyncConnection, key: tuple[UUID, str], fact_id: UUID, changes: dict[str, Any]
    ) -> None:
        """A fact's columns changed, in the batch's new facts when it is one of them."""
        pending = self._deferred.facts.get(fact_id) if self._deferred is not None else None
        if pending is not None:
            pending.update(changes)
        else:
            await graph_db.update_fact(conn, self.owner.tenant_id, fact_id, changes)
        if self._known is not None:
            self._known.fact_changed(key, fact_id, changes)

    async def _fact_events(
        self,
        conn: AsyncConnection,
        fact_id: UUID,
        predicate: str,
        memory_id: UUID | None,
        decided: supersede.Plan,
    ) -> None:
        """The fact's webhook events, in its transaction: recorded, what it superseded, the
        reviews it opened (ids and the predicate, never the claim)."""
        o = self.owner

        def event(kind: str, **data: Any) -> webhooks.Event:
            data.update(user_id=o.user_id, app_id=o.app_id, predicate=predicate)
            return webhooks.Event(o.tenant_id, kind, data, o.user_id, o.app_id)

        source = None if memory_id is None else str(memory_id)
        events = [event("fact.recorded", fact_id=str(fact_id), memory_id=source)]
        events += [
            event("fact.superseded", fact_id=str(old), superseded_by=str(fact_id))
            for old in decided.old
        ]
        events += [
            event("review.opened", fact_id=str(fact_id), conflicts_with=str(rival))
            for rival in decided.reviews
        ]
        if self._deferred is not None:
            self._deferred.events += events
        else:
            await webhooks.emit(conn, events)

    # --- relations ------------------------------------------------------------------------

    async def _write_relation(
        self, conn: AsyncConnection, relation: RelationClaim, memory_id: UUID | None
    ) -> UUID:
        o = self.owner
        source_id = await self.resolve(conn, EntityMention(relation.source))
        target_id = await self.resolve(conn, EntityMention(relation.target))
        await self._insert_new(conn)
        relation_id = uuid4()
        relation_id = await graph_db.upsert_relation(
            conn,
            {
                "tenant_id": o.tenant_id,
                "id": relation_id,
                "user_id": o.user_id,
                "app_id": o.app_id,
                "channel": o.channel,
                "source_id": source_id,
                "type": relation.type.strip().upper().replace(" ", "_"),
                "target_id": target_id,
                "valid_from": relation.valid_from,
                "valid_until": relation.valid_until,
                **sealed.relation_columns(
                    self.keyring, o.tenant_id, relation_id, dict(relation.properties)
                ),
            },
        )
        if memory_id is not None:
            await graph_db.add_relation_source(conn, o.tenant_id, o.user_id, relation_id, memory_id)
        return relation_id
