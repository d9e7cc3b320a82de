"""What callers send to the knowledge graph and what they get back (besides ``Fact`` and
``Entity``, which search answers too and so live in ``memvault.models``)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field, model_validator

from memvault.graph.claims import SELF, canonical_predicate
from memvault.models import Entity, Fact, Identifier, Reason, Timestamp, _encodable, _Input

_PREDICATE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
EntityTypeName = Literal[
    "person", "organisation", "place", "project", "tool", "event", "concept", "other"
]


def _predicate(value: str) -> str:
    folded = "_".join(value.strip().lower().replace("-", " ").split())
    if not _PREDICATE.match(folded):
        raise ValueError("a predicate is a word or words_joined_by_underscores (at most 64)")
    # One spelling per predicate, as the extractors write it ("works_at" is "works_for").
    return canonical_predicate(folded)


def _name(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace")
    if any(ord(ch) < 32 for ch in value):
        raise ValueError("must not contain control characters")
    _encodable(value)
    return value.strip()


Predicate = Annotated[str, AfterValidator(_predicate)]
Name = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_name)]
Value = Annotated[str, Field(min_length=1, max_length=2_000), AfterValidator(_name)]


class FactInput(_Input):
    """Body of POST /v1/facts: a triple stated directly, no extraction needed. ``subject``
    and ``object`` are entity names (``@user`` is the user); give ``object`` or ``value``."""

    subject: Name
    predicate: Predicate
    object: Name | None = None
    value: Value | None = None
    user_id: Identifier
    app_id: Identifier = "default"
    channel: Identifier = "_global"
    valid_from: Timestamp | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    source: Identifier | None = None

    @model_validator(mode="after")
    def _one_object(self) -> FactInput:
        if (self.object is None) == (self.value is None):
            raise ValueError("give exactly one of object (an entity) or value (a literal)")
        return self

    def claim(self) -> str:
        subject = "The user" if self.subject == SELF else self.subject
        return f"{subject} {self.predicate.replace('_', ' ')} {self.object or self.value}"


class FactsQuery(_Input):
    """GET /v1/facts. Default: what is true now as currently known. ``valid_at``: what held
    in the world then; ``known_at``: what the store believed then; ``include_superseded``:
    the whole history."""

    user_id: Identifier
    entity: Name | None = Field(default=None, description="an entity's name, alias or id")
    predicate: Predicate | None = None
    valid_at: Timestamp | None = None
    known_at: Timestamp | None = None
    include_superseded: bool = False
    memory_id: UUID | None = Field(default=None, description="only facts read from this memory")
    limit: int = Field(default=100, ge=1, le=1_000)


# The most nodes one view of the graph returns, whatever the server's default.
GRAPH_LIMIT = 5_000


class GraphQuery(_Input):
    """GET /v1/entities/{id}/graph. Default: the current graph. ``valid_at`` / ``known_at``:
    the graph as of then, drawn from the facts ``GET /v1/facts`` lists for the same moments
    and the relations valid then (recorded by ``known_at``)."""

    user_id: Identifier
    depth: int = Field(default=2, ge=1, le=3, description="hops from the entity (at most 3)")
    valid_at: Timestamp | None = Field(default=None, description="what held in the world then")
    known_at: Timestamp | None = Field(default=None, description="as the store knew it then")
    limit: int | None = Field(
        default=None,
        ge=1,
        le=GRAPH_LIMIT,
        description="nodes at most, the nearest first (default: the server's graph_max_nodes); "
        "the edge limit grows with it",
    )


class UserGraphQuery(_Input):
    """GET /v1/graph: every entity of the user (the most salient first) and the edges among
    them, now or as of ``valid_at`` / ``known_at`` (the rule of ``GET /v1/facts``)."""

    user_id: Identifier
    valid_at: Timestamp | None = Field(default=None, description="what held in the world then")
    known_at: Timestamp | None = Field(default=None, description="as the store knew it then")
    limit: int | None = Field(
        default=None,
        ge=1,
        le=GRAPH_LIMIT,
        description="nodes at most, the most salient first (default: the server's "
        "graph_max_nodes); the edge limit grows with it",
    )


class EntitiesQuery(_Input):
    """GET /v1/entities: by name or alias (``q``), else the most salient."""

    user_id: Identifier
    q: Name | None = None
    type: EntityTypeName | None = None
    limit: int = Field(default=50, ge=1, le=1_000)


class EntityDetail(Entity):
    facts: list[Fact] = Field(description="its current facts, as subject or object")
    merged: list[UUID] = Field(default=[], description="entities merged into this one")


class GraphNode(Entity):
    depth: int = Field(description="hops from the entity asked about")


class GraphEdge(BaseModel):
    source_id: UUID
    target_id: UUID
    type: str = Field(description="a relation type (WORKS_FOR, …) or a fact's predicate")
    kind: Literal["relation", "fact"]
    id: UUID = Field(description="the relation's or the fact's id")
    depth: int


class GraphView(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    reached_nodes: int = Field(
        default=0,
        description="entities found before the node limit: more than len(nodes) when it cut "
        "(ask again with a higher limit for the rest)",
    )
    reached_edges: int = Field(
        default=0, description="edges among the nodes kept, before the edge limit"
    )
    limit: int = Field(default=0, description="the node limit applied")


class MergeRequest(_Input):
    into: UUID = Field(description="the entity that absorbs this one")
    user_id: Identifier


class RetireRequest(_Input):
    """Retire a fact: it stops holding now, or (``never_held``) was never true."""

    user_id: Identifier
    never_held: bool = Field(
        default=False, description="the fact was never true: its valid interval becomes empty"
    )


class RestoreRequest(_Input):
    """Undo a fact's retire or correction."""

    user_id: Identifier


class CorrectionRequest(_Input):
    """Correct a fact: the same subject and predicate with the right ``object`` (an entity
    name) or ``value`` (a literal); the old fact never held and is superseded by the new."""

    user_id: Identifier
    object: Name | None = None
    value: Value | None = None

    @model_validator(mode="after")
    def _one_object(self) -> CorrectionRequest:
        if (self.object is None) == (self.value is None):
            raise ValueError("give exactly one of object (an entity) or value (a literal)")
        return self


class PromoteRequest(_Input):
    user_id: Identifier
    reason: Reason = Field(description="why, recorded in the audit log (one line)")


class FactReview(BaseModel):
    id: UUID
    fact: Fact
    conflicts_with: Fact
    reason: str
    created_at: datetime


class ReviewsQuery(_Input):
    user_id: Identifier
    limit: int = Field(default=50, ge=1, le=1_000)
    offset: int = Field(default=0, ge=0, le=100_000, description="skip this many, newest first")


# Which side of a contradiction stays true: the newer fact, the one it contradicts, or both.
Keep = Literal["fact", "conflicts_with", "both"]


class ReviewDecision(_Input):
    """POST /v1/facts/reviews/{review_id}/resolve."""

    user_id: Identifier
    keep: Keep = Field(
        description="`fact`: the newer fact replaces the one it contradicts; `conflicts_with`: "
        "the newer fact never held and is replaced by the other; `both`: they do not "
        "contradict each other and both stay current"
    )


class ResolvedReview(BaseModel):
    id: UUID
    keep: Keep
    fact: Fact = Field(description="the newer fact, as it stands after the decision")
    conflicts_with: Fact = Field(description="the fact it contradicted, after the decision")
    closed: list[UUID] = Field(
        description="the reviews closed: this one, and any other that named the fact replaced"
    )


class GraphExport(_Input):
    format: Literal["cypher", "csv"] = "cypher"
    user_id: Identifier | None = Field(
        default=None, description="one user's graph; unset: the whole tenant's"
    )
