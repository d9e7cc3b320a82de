"""``Graph``: the knowledge graph as a resource of ``AsyncMemory`` (``memory.graph``): facts,
entities, the walk, merges, reviews, promotion, export. Each runs in the context's tenant."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from memvault._compose import between_resources
from memvault.db import graph as graph_db
from memvault.db import graph_admin, graph_walk
from memvault.db.audit import AuditEvent
from memvault.db.graph import EntityRow, FactQuery, FactRow, PredicateSet
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.graph import curate, export, reviews, sealed
from memvault.graph.claims import SELF, Extraction, FactClaim
from memvault.graph.derive import Derivation, derive
from memvault.graph.promote import promote_fact
from memvault.graph.views import (
    CorrectionRequest,
    EntitiesQuery,
    EntityDetail,
    FactInput,
    FactReview,
    FactsQuery,
    GraphEdge,
    GraphExport,
    GraphNode,
    GraphQuery,
    GraphView,
    MergeRequest,
    PromoteRequest,
    ResolvedReview,
    RestoreRequest,
    RetireRequest,
    ReviewDecision,
    ReviewsQuery,
    UserGraphQuery,
)
from memvault.graph.writer import GraphWriter, Owner
from memvault.language import keyed
from memvault.language.terms import query_term_ids
from memvault.models import Entity, Fact, MemoryRecord
from memvault.models import Owner as OwnerInput
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.context import TenantContext


def _entity(value: UUID | str) -> UUID:
    return parse_id(value, field="entity_id")


class Graph:
    """Semantic memory over the same store: facts, entities, the walk, merges, reviews,
    promotion and export."""

    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self.actor = context.actor

    # --- facts ----------------------------------------------------------------------------

    @scoped_to_tenant
    async def add_fact(
        self,
        subject: str,
        predicate: str,
        *,
        user_id: str,
        object: str | None = None,
        value: str | None = None,
        valid_from: datetime | None = None,
        confidence: float | None = None,
        source: str | None = None,
        channel: str | None = None,
        app_id: str | None = None,
    ) -> Fact:
        """State a fact directly: ``subject predicate object`` (an entity name) or ``subject
        predicate value`` (a literal). ``@user`` names the user. A functional predicate
        (lives_in, works_for, …) supersedes the current value per the contradiction policy."""
        given: FactInput = validated(
            FactInput,
            subject=subject,
            predicate=predicate,
            object=object,
            value=value,
            user_id=user_id,
            valid_from=valid_from,
            confidence=confidence,
            source=source,
            channel=channel,
            app_id=app_id,
        )
        claim = FactClaim(
            subject=given.subject,
            predicate=given.predicate,
            claim=given.claim(),
            object=given.object,
            value=given.value,
            valid_from=given.valid_from,
        )
        owner = Owner(self.tenant_id, given.user_id, given.app_id, given.channel)
        writer = GraphWriter(self._backend, owner)
        prepared = await writer.prepare(Extraction(facts=(claim,), extractor="api"))
        async with transaction(self._backend.engine) as conn:
            applied = await writer.apply(
                conn,
                prepared,
                memory_id=None,
                reference_time=datetime.now(UTC),
                source=given.source or "api",
                confidence=given.confidence,
            )
            rows = await graph_db.fetch_facts(conn, self.tenant_id, applied.fact_ids)
            (fact,) = await self._facts_out(conn, [rows[applied.fact_ids[0]]])
        return fact

    @scoped_to_tenant
    async def facts(
        self,
        *,
        user_id: str,
        entity: str | None = None,
        predicate: str | None = None,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        include_superseded: bool = False,
        memory_id: UUID | str | None = None,
        limit: int = 100,
    ) -> builtins.list[Fact]:
        """What is true now as currently known (default); ``valid_at=T``: what held in the
        world at T; ``known_at=T``: what the store believed at T; ``include_superseded``: the
        whole history. ``entity`` is a name, alias or id (its facts as subject or object);
        ``memory_id``: only the facts read from that memory."""
        query: FactsQuery = validated(
            FactsQuery,
            user_id=user_id,
            entity=entity,
            predicate=predicate,
            valid_at=valid_at,
            known_at=known_at,
            include_superseded=include_superseded,
            memory_id=memory_id,
            limit=limit,
        )
        return await self.read_facts(query)

    @between_resources
    async def read_facts(
        self,
        query: FactsQuery,
        *,
        unseen: Mapping[str, datetime | None] | None = None,
        predicates: PredicateSet | None = None,
    ) -> builtins.list[Fact]:
        """The facts ``query`` asks for, already validated (``facts`` checks the caller's
        arguments); given ``unseen``, only those recorded in its channels after each one's
        moment, and given ``predicates``, only of those: what ``profile`` learns from since
        it last looked."""
        async with reading(self._backend.engine) as conn:
            entity_ids = None
            if query.entity is not None:
                entity_ids = await self._entities_named(conn, query.user_id, query.entity)
                if not entity_ids:
                    return []
            rows = await graph_db.query_facts(
                conn,
                self.tenant_id,
                FactQuery(
                    user_id=query.user_id,
                    entity_ids=entity_ids,
                    predicate=query.predicate,
                    valid_at=query.valid_at,
                    known_at=query.known_at,
                    include_superseded=query.include_superseded,
                    memory_id=query.memory_id,
                    limit=query.limit,
                    unseen=unseen,
                    predicates=predicates,
                ),
                datetime.now(UTC),
            )
            return await self._facts_out(conn, rows)

    async def _entities_named(
        self, conn: AsyncConnection, user_id: str, name_or_id: str
    ) -> builtins.list[UUID]:
        """An entity by id, or every entity a name or alias hashes to (merged ones followed),
        with the entities merged into them."""
        try:
            wanted = [UUID(name_or_id)]
        except ValueError:
            keyring = self._backend.keys.current(self.tenant_id)
            keys = (
                [keyed.self_key(keyring, k) for k in sorted(keyring.key_ids)]
                if name_or_id == SELF
                else keyed.name_keys(keyring, [name_or_id])
            )
            found = await graph_db.entities_by_keys(conn, self.tenant_id, user_id, keys)
            wanted = [e.merged_into or e.id for e in found]
        rows = await graph_db.fetch_entities(conn, self.tenant_id, wanted)
        return sorted(e.id for e in rows.values() if e.user_id == user_id)

    async def _facts_out(
        self, conn: AsyncConnection, rows: Sequence[FactRow]
    ) -> builtins.list[Fact]:
        names = await self._names(
            conn, [i for r in rows for i in (r.subject_id, r.object_id) if i is not None]
        )
        sources = await graph_db.sources_of(conn, self.tenant_id, [r.id for r in rows])
        return [sealed.to_fact(self._backend.keys, r, names, sources[r.id]) for r in rows]

    async def _names(self, conn: AsyncConnection, ids: Iterable[UUID]) -> dict[UUID, str]:
        keyring = self._backend.keys.current(self.tenant_id)
        found = await graph_db.fetch_entities(conn, self.tenant_id, ids)
        return {i: sealed.open_entity(keyring, e).name for i, e in found.items()}

    @scoped_to_tenant
    async def fact_reviews(
        self, *, user_id: str, limit: int = 50, offset: int = 0
    ) -> builtins.list[FactReview]:
        """Contradictions the ``flag_review`` policy kept side by side, newest first
        (``offset``: skip that many, for the next page)."""
        query: ReviewsQuery = validated(ReviewsQuery, user_id=user_id, limit=limit, offset=offset)
        async with reading(self._backend.engine) as conn:
            reviews = await graph_db.list_reviews(
                conn, self.tenant_id, query.user_id, query.limit, query.offset
            )
            ids = {i for r in reviews for i in (r.fact_id, r.conflicts_with)}
            rows = await graph_db.fetch_facts(conn, self.tenant_id, ids)
            facts = {f.id: f for f in await self._facts_out(conn, list(rows.values()))}
        return [
            FactReview(
                id=r.id,
                fact=facts[r.fact_id],
                conflicts_with=facts[r.conflicts_with],
                reason=r.reason,
                created_at=r.created_at,
            )
            for r in reviews
        ]

    @scoped_to_tenant
    async def resolve_fact_review(
        self, review_id: UUID | str, *, user_id: str, keep: str
    ) -> ResolvedReview:
        """Decide a contradiction awaiting review: ``keep="fact"`` (the newer fact replaces the
        other), ``"conflicts_with"`` (the newer one never held) or ``"both"`` (no contradiction).
        Nothing is deleted: the replaced fact stays in the history, superseded."""
        ident = parse_id(review_id, field="review_id")
        decision: ReviewDecision = validated(ReviewDecision, user_id=user_id, keep=keep)
        # An update of the facts' validity: the log's operations are a fixed set.
        event = AuditEvent(self.tenant_id, "update", self.actor, decision.user_id, "fact")
        with self._backend.audit.timed(event):
            async with transaction(self._backend.engine) as conn:
                now = datetime.now(UTC)
                done = await reviews.resolve(
                    conn, self.tenant_id, decision.user_id, ident, decision.keep, now
                )
                pair = (done.review.fact_id, done.review.conflicts_with)
                rows = await graph_db.fetch_facts(conn, self.tenant_id, pair)
                fact, other = await self._facts_out(conn, [rows[i] for i in pair])
            event.memory_ids = sorted({*fact.memory_ids, *other.memory_ids})
            event.result_count = len(done.closed)
            event.details = {
                "via": "resolve_review",
                "review_id": str(ident),
                "keep": decision.keep,
            }
        return ResolvedReview(
            id=ident, keep=decision.keep, fact=fact, conflicts_with=other, closed=done.closed
        )

    @scoped_to_tenant
    async def retire_fact(
        self, fact_id: UUID | str, *, user_id: str, never_held: bool = False
    ) -> Fact:
        """Retire a current fact: it stops holding now (``never_held``: it never did) and
        leaves the current view; nothing is deleted, so the as-of views still show it."""
        ident = parse_id(fact_id, field="fact_id")
        given: RetireRequest = validated(RetireRequest, user_id=user_id, never_held=never_held)
        details = {"via": "retire_fact", "target": f"fact:{ident}", "never_held": never_held}
        with self._context.audit(
            "update", given.user_id, memory_kind="fact", details=details
        ) as event:
            async with transaction(self._backend.engine) as conn:
                row = await curate.current_fact(conn, self.tenant_id, given.user_id, ident)
                changes = curate.retired(row, datetime.now(UTC), never_held=never_held)
                await graph_db.update_fact(conn, self.tenant_id, ident, changes)
                rows = await graph_db.fetch_facts(conn, self.tenant_id, (ident,))
                (fact,) = await self._facts_out(conn, [rows[ident]])
            event.memory_ids, event.result_count = fact.memory_ids, 1
        return fact

    @scoped_to_tenant
    async def correct_fact(
        self,
        fact_id: UUID | str,
        *,
        user_id: str,
        object: str | None = None,
        value: str | None = None,
    ) -> Fact:
        """Correct a current fact: a new fact of the same subject and predicate with the right
        ``object`` or ``value`` replaces it from its start; the old one never held and stays in
        the history, superseded by the new (``superseded_by``)."""
        ident = parse_id(fact_id, field="fact_id")
        given = validated(CorrectionRequest, user_id=user_id, object=object, value=value)
        async with reading(self._backend.engine) as conn:
            row = await curate.current_fact(conn, self.tenant_id, given.user_id, ident)
            subject = await curate.subject_name(self._backend, conn, row)
        owner = Owner(self.tenant_id, row.user_id, row.app_id, row.channel)
        extraction = curate.correction(subject, row, object=given.object, value=given.value)
        prepared = await GraphWriter(self._backend, owner).prepare(extraction)
        details = {"via": "correct_fact", "target": f"fact:{ident}"}
        with self._context.audit(
            "update", given.user_id, memory_kind="fact", details=details
        ) as event:
            async with transaction(self._backend.engine) as conn:
                row = await curate.current_fact(conn, self.tenant_id, given.user_id, ident)
                new_id = await curate.write_correction(
                    self._backend, conn, row, prepared, datetime.now(UTC)
                )
                rows = await graph_db.fetch_facts(conn, self.tenant_id, (new_id,))
                (fact,) = await self._facts_out(conn, [rows[new_id]])
            event.details = {**details, "replaced_by": f"fact:{new_id}"}
            event.result_count = 1
        return fact

    @scoped_to_tenant
    async def restore_fact(self, fact_id: UUID | str, *, user_id: str) -> Fact:
        """Undo a person's retire or correction of a fact: it holds again over the interval it
        had, and a correction's replacement never held (superseded by it). Refused (409) when
        something changed in between: the replacement was retired, replaced or corrected, or a
        newer fact of the same subject and predicate came in; undo that first."""
        ident = parse_id(fact_id, field="fact_id")
        given: RestoreRequest = validated(RestoreRequest, user_id=user_id)
        details = {"via": "restore_fact", "target": f"fact:{ident}"}
        with self._context.audit(
            "update", given.user_id, memory_kind="fact", details=details
        ) as event:
            async with transaction(self._backend.engine) as conn:
                done = await curate.restore(
                    conn, self.tenant_id, given.user_id, ident, datetime.now(UTC)
                )
                rows = await graph_db.fetch_facts(conn, self.tenant_id, (ident,))
                (fact,) = await self._facts_out(conn, [rows[ident]])
            event.details = {**details, "undid": done.change}
            if done.replacement is not None:
                event.details["withdrew"] = f"fact:{done.replacement}"
            event.memory_ids, event.result_count = fact.memory_ids, 1
        return fact

    @scoped_to_tenant
    async def promote(self, fact_id: UUID | str, *, user_id: str, reason: str) -> Fact:
        """Copy a project-channel fact to the user's ``_global`` channel (linked
        PROMOTED_FROM); promoting it again answers the same copy."""
        ident = parse_id(fact_id, field="fact_id")
        given = validated(PromoteRequest, user_id=user_id, reason=reason)
        promotion = await promote_fact(
            self._backend,
            self.tenant_id,
            ident,
            user_id=given.user_id,
            reason=given.reason.strip(),
            actor=self.actor,
        )
        return promotion.fact

    # --- entities -------------------------------------------------------------------------

    @scoped_to_tenant
    async def entities(
        self,
        *,
        user_id: str,
        q: str | None = None,
        type: str | None = None,
        limit: int = 50,
    ) -> builtins.list[Entity]:
        """Entities by name or alias (``q``: an exact normalised name, or any of its words),
        else the most salient."""
        query: EntitiesQuery = validated(
            EntitiesQuery, user_id=user_id, q=q, type=type, limit=limit
        )
        keyring = self._backend.keys.current(self.tenant_id)
        keys = keyed.name_keys(keyring, [query.q]) if query.q else []
        terms = query_term_ids(keyring, query.q) if query.q else []
        async with reading(self._backend.engine) as conn:
            rows = await graph_db.list_entities(
                conn,
                self.tenant_id,
                query.user_id,
                type=query.type,
                keys=keys,
                term_ids=terms,
                limit=query.limit,
            )
            if keys:
                # A name merged into another entity finds the one it joined.
                named = await graph_db.entities_by_keys(conn, self.tenant_id, query.user_id, keys)
                seen = {e.id for e in rows}
                joined = {e.merged_into for e in named if e.merged_into not in (None, *seen)}
                found = await graph_db.fetch_entities(conn, self.tenant_id, joined)  # type: ignore[arg-type]
                rows += [e for e in found.values() if e.merged_into is None]
        exact = set(keys)
        merged_names = {e.merged_into for e in named} if keys else set()
        # A whole-name or alias match (or a merged name's survivor) ranks above a shared word.
        rows.sort(key=lambda e: not ({e.name_key, *e.alias_keys} & exact or e.id in merged_names))
        return [sealed.to_entity(self._backend.keys, r) for r in rows]

    async def _owned_entity(
        self, conn: AsyncConnection, entity_id: UUID | str, user_id: str, *, lock: bool = False
    ) -> EntityRow:
        ident = _entity(entity_id)
        row = await graph_db.fetch_entity(conn, self.tenant_id, user_id, ident, lock=lock)
        if row is None:
            raise NotFound("No such entity for this user.", details={"id": str(ident)})
        return row

    @scoped_to_tenant
    async def entity(self, entity_id: UUID | str, *, user_id: str) -> EntityDetail:
        """One entity with its current facts (as subject or object)."""
        owner: OwnerInput = validated(OwnerInput, user_id=user_id)
        async with reading(self._backend.engine) as conn:
            row = await self._owned_entity(conn, entity_id, owner.user_id)
            rows = await graph_db.query_facts(
                conn,
                self.tenant_id,
                FactQuery(user_id=owner.user_id, entity_ids=[row.id], limit=1_000),
                datetime.now(UTC),
            )
            facts = await self._facts_out(conn, rows)
            merged = await graph_db.merged_into(conn, self.tenant_id, row.id)
        base = sealed.to_entity(self._backend.keys, row)
        return EntityDetail(**base.model_dump(), facts=facts, merged=merged)

    @scoped_to_tenant
    async def entity_graph(
        self,
        entity_id: UUID | str,
        *,
        user_id: str,
        depth: int = 2,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        limit: int | None = None,
    ) -> GraphView:
        """The entity's neighbourhood in the current graph: nodes within ``depth`` hops (at
        most 3) and the edges between them (relations, and facts whose object is an entity).
        ``valid_at`` / ``known_at``: the graph as of then, the facts drawn being those
        :meth:`facts` lists for the same moments. At most ``limit`` nodes, the nearest first
        (default: the server's ``graph_max_nodes``); ``reached_nodes`` says how many there were."""
        owner: OwnerInput = validated(OwnerInput, user_id=user_id)
        query: GraphQuery = validated(
            GraphQuery, user_id=owner.user_id, valid_at=valid_at, known_at=known_at, limit=limit
        )
        settings = self._backend.settings
        if not 1 <= depth <= settings.graph_max_depth:
            raise InvalidInput(
                f"depth is 1 to {settings.graph_max_depth}.",
                details={"field": "depth", "limit": settings.graph_max_depth},
            )
        start = _entity(entity_id)
        nodes, edges = self._limits(query.limit)
        async with reading(self._backend.engine) as conn:
            found = await graph_walk.walk(
                conn,
                self.tenant_id,
                owner.user_id,
                [start],
                depth=depth,
                now=datetime.now(UTC),
                fanout=settings.graph_fanout,
                max_nodes=nodes,
                max_edges=edges,
                valid_at=query.valid_at,
                known_at=query.known_at,
            )
        if start not in found.nodes:
            raise NotFound("No such entity for this user.", details={"id": str(start)})
        return self._view(found, nodes)

    @scoped_to_tenant
    async def user_graph(
        self,
        *,
        user_id: str,
        valid_at: datetime | None = None,
        known_at: datetime | None = None,
        limit: int | None = None,
    ) -> GraphView:
        """The user's whole graph: every entity (not merged away; as of ``known_at``, those
        already known then), the most salient first, at most ``limit`` (default: the server's
        ``graph_max_nodes``), and the edges among them, now or as of ``valid_at`` /
        ``known_at`` (the rule of :meth:`facts`). Every node has depth 0."""
        query: UserGraphQuery = validated(
            UserGraphQuery, user_id=user_id, valid_at=valid_at, known_at=known_at, limit=limit
        )
        nodes, edges = self._limits(query.limit)
        async with reading(self._backend.engine) as conn:
            found = await graph_walk.whole(
                conn,
                self.tenant_id,
                query.user_id,
                now=datetime.now(UTC),
                max_nodes=nodes,
                max_edges=edges,
                valid_at=query.valid_at,
                known_at=query.known_at,
            )
        return self._view(found, nodes)

    def _limits(self, limit: int | None) -> tuple[int, int]:
        """The node and edge limits of a view: the server's, or the edges in the same
        proportion to a caller's node limit."""
        settings = self._backend.settings
        if limit is None:
            return settings.graph_max_nodes, settings.graph_max_edges
        scaled = -(-limit * settings.graph_max_edges // settings.graph_max_nodes)
        return limit, max(settings.graph_max_edges, scaled)

    def _view(self, found: graph_walk.Walk, limit: int) -> GraphView:
        rows = found.entities
        keys = self._backend.keys
        order = sorted(found.nodes.items(), key=lambda item: (item[1], str(item[0])))
        return GraphView(
            nodes=[
                sealed.entity_as(keys, rows[i], GraphNode, depth=d) for i, d in order if i in rows
            ],
            edges=[
                GraphEdge.model_construct(
                    source_id=e.source_id,
                    target_id=e.target_id,
                    type=e.kind,
                    kind="relation" if e.relation else "fact",
                    id=e.via,
                    depth=e.depth,
                )
                for e in found.edges
            ],
            reached_nodes=found.reached_nodes,
            reached_edges=found.reached_edges,
            limit=limit,
        )

    @scoped_to_tenant
    async def merge_entities(
        self, entity_id: UUID | str, *, into: UUID | str, user_id: str
    ) -> EntityDetail:
        """Merge one entity into another: its facts and relations move over, its name
        resolves to the other from now on; recorded, so :meth:`split_entity` undoes it."""
        request: MergeRequest = validated(MergeRequest, into=_entity(into), user_id=user_id)
        details = {
            "via": "merge_entities",
            "target": f"entity:{parse_id(entity_id, field='entity_id')}",
            "into": f"entity:{request.into}",
        }
        with self._context.audit("merge", request.user_id, memory_kind="entity", details=details):
            await self._merge(entity_id, request)
        return await self.entity(request.into, user_id=request.user_id)

    async def _merge(self, entity_id: UUID | str, request: MergeRequest) -> None:
        async with transaction(self._backend.engine) as conn:
            merged = await self._owned_entity(conn, entity_id, request.user_id, lock=True)
            target = await self._owned_entity(conn, request.into, request.user_id, lock=True)
            if merged.id == target.id or merged.merged_into is not None:
                raise InvalidInput(
                    "An entity merges once, into another entity that is not merged itself.",
                    details={"id": str(merged.id)},
                )
            if target.merged_into is not None:
                raise InvalidInput(
                    "The target entity is itself merged into another; merge into that one.",
                    details={"into": str(target.id), "merged_into": str(target.merged_into)},
                )
            await graph_db.merge(
                conn, self.tenant_id, request.user_id, merged.id, target.id, self.actor
            )

    @scoped_to_tenant
    async def split_entity(self, entity_id: UUID | str, *, user_id: str) -> EntityDetail:
        """Undo the last merge of this entity: what moved (and still points at the entity it
        joined) moves back, and its name resolves to it again."""
        owner: OwnerInput = validated(OwnerInput, user_id=user_id)
        details = {"via": "split_entity", "target": f"entity:{_entity(entity_id)}"}
        with self._context.audit("update", owner.user_id, memory_kind="entity", details=details):
            async with transaction(self._backend.engine) as conn:
                row = await self._owned_entity(conn, entity_id, owner.user_id, lock=True)
                merge = await graph_db.last_merge(conn, self.tenant_id, owner.user_id, row.id)
                if merge is None:
                    raise InvalidInput(
                        "This entity is not merged into another.", details={"id": str(row.id)}
                    )
                await graph_db.split(conn, merge, datetime.now(UTC))
        return await self.entity(row.id, user_id=owner.user_id)

    # --- a memory's text changed ----------------------------------------------------------

    @between_resources
    async def derive_edit(self, current: MemoryRecord, new_text: str) -> Derivation | None:
        """What an edited memory's new text claims (extracted before the edit's
        transaction)."""
        owner = Owner(self.tenant_id, current.user_id, current.app_id, current.channel)
        return await derive(
            self._backend,
            owner,
            new_text,
            metadata=current.metadata,
            occurred_at=current.occurred_at,
        )

    @between_resources
    async def rederive(
        self, conn: AsyncConnection, memory_id: UUID, derived: Derivation | None
    ) -> None:
        """In the edit's transaction: the old text's claims go (with whatever only they
        held), the new text's come in."""
        await graph_db.forget_memory(conn, self.tenant_id, memory_id)
        if derived is not None:
            await derived.write(conn, memory_id)

    # --- export ---------------------------------------------------------------------------

    @scoped_to_tenant
    async def export_graph(
        self, *, format: str = "cypher", user_id: str | None = None
    ) -> dict[str, str]:
        """The current graph of one user (or of the whole tenant) as files a graph database
        loads: ``cypher`` (one ``graph.cypher``) or ``csv`` (``nodes.csv``, ``edges.csv``)."""
        request: GraphExport = validated(GraphExport, format=format, user_id=user_id)
        async with reading(self._backend.engine) as conn:
            ents, facts, rels = await graph_admin.export_rows(
                conn, self.tenant_id, request.user_id, datetime.now(UTC)
            )
        graph = export.opened(self._backend.keys.current(self.tenant_id), ents, facts, rels)
        if request.format == "csv":
            return export.to_csv(graph)
        return {"graph.cypher": export.to_cypher(graph)}
