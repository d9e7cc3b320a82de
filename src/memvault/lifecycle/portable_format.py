"""The lines of an export file (format 2, see docs/export-format.md): one JSON object a line,
``{"memvault_export": 2, "kind": …, "user_id": …}`` and the fields of its kind. A file of
format 1 (memories only, facts and entities inside each memory's ``parts.graph``) is read as
the format-2 lines it stands for.

Every field is checked as strictly as the route that would have written the row: the same
identifier, text and JSON rules, the same ranges, finite numbers only, timestamps within the
years 1-9999. A problem is reported by line number and the field's path in this schema, never
with the key or value that was sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memvault.cognitive.kinds import JSONValue
from memvault.cognitive.kinds import Text as JSONText
from memvault.errors import validation_problems
from memvault.graph.views import EntityTypeName, Name, Predicate, Value
from memvault.models import (
    Content,
    Description,
    HistoryAction,
    Identifier,
    MemoryType,
    Metadata,
    Milliseconds,
    Tier,
    Timestamp,
    Title,
)

FORMAT = 2
READS = (1, 2)
MAX_ERRORS = 50

Count = Annotated[int, Field(ge=0, le=2**31 - 1)]  # an INTEGER column
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
# One vector component: finite, and within float4 with a wide margin (an embedding's are small).
Component = Annotated[float, Field(ge=-1e4, le=1e4, allow_inf_nan=False)]
Vector = Annotated[list[Component], Field(min_length=1, max_length=8_192)]


def _bounded(limit: int) -> Any:
    """An optional text of at most ``limit`` characters."""
    return Field(default=None, max_length=limit)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Line(_Strict):
    memvault_export: Literal[2]
    user_id: Identifier


# --- memories ----------------------------------------------------------------------------------


class ExportedVersion(_Strict):
    """One row of a memory's history. ``actor`` and ``created_at`` are who changed it and when
    in the store it was exported from; ``claimed_actor`` / ``claimed_at``, when set, say the row
    came into that store by an import and what the file it came from claimed."""

    action: HistoryAction
    old_content: Content | None = None
    new_content: Content | None = None
    old_metadata: Metadata | None = None
    new_metadata: Metadata | None = None
    actor: Identifier
    created_at: Timestamp
    claimed_actor: Identifier | None = None
    claimed_at: Timestamp | None = None


class VectorSet(_Strict):
    """A memory's vectors from one model, chunk by chunk."""

    model: Identifier
    chunks: list[Vector] = Field(min_length=1, max_length=1_000)


class MemoryLine(_Line):
    kind: Literal["memory"]
    id: UUID
    content: Content
    app_id: Identifier = "default"
    project_id: Identifier | None = None
    environment: Identifier | None = None
    channel: Identifier = "_global"
    source: Identifier | None = None
    tags: list[Annotated[Identifier, Field(max_length=100)]] = Field(default=[], max_length=50)
    metadata: Metadata = {}
    categories: list[Identifier] = Field(default=[], max_length=50)
    importance: int | None = Field(default=None, ge=1, le=10)
    memory_type: MemoryType = "persistent"
    valid_until: Timestamp | None = None
    tier: Tier = "hot"
    access_count: Count = 0
    last_accessed: Timestamp | None = None
    reinforced_count: Count = 0
    occurred_at: Timestamp
    created_at: Timestamp
    updated_at: Timestamp
    expires_at: Timestamp | None = None
    history: list[ExportedVersion] = Field(default=[], max_length=10_000)
    vectors: list[VectorSet] = Field(default=[], max_length=8)


# --- the knowledge graph -----------------------------------------------------------------------


class EntityLine(_Line):
    kind: Literal["entity"]
    id: UUID
    app_id: Identifier = "default"
    channel: Identifier = "_global"
    type: EntityTypeName
    name: Name
    aliases: list[Name] = Field(default=[], max_length=100)
    description: JSONText | None = _bounded(2_000)
    salience: Share = 0.5
    access_count: Count = 0
    last_accessed: Timestamp | None = None
    first_seen: Timestamp
    properties: Metadata = {}
    merged_into: UUID | None = None
    embedding: Vector | None = None
    embedding_model: Identifier | None = None
    memory_ids: list[UUID] = Field(default=[], max_length=100_000, description="MENTIONS")


class FactLine(_Line):
    kind: Literal["fact"]
    id: UUID
    app_id: Identifier = "default"
    channel: Identifier = "_global"
    subject_id: UUID
    predicate: Predicate
    object_id: UUID | None = None
    value: Value | None = None
    claim: Annotated[Content, Field(max_length=4_000)]
    confidence: Share
    certainty: Literal["explicit", "implied", "inferred", "uncertain"] = "explicit"
    temporal: Literal["current", "past", "future"] = "current"
    source: Identifier | None = None
    valid_from: Timestamp | None = None
    valid_until: Timestamp | None = None
    recorded_at: Timestamp
    superseded_at: Timestamp | None = None
    superseded_by: UUID | None = None
    access_count: Count = 0
    last_accessed: Timestamp | None = None
    embedding: Vector | None = None
    embedding_model: Identifier | None = None
    memory_ids: list[UUID] = Field(default=[], max_length=100_000, description="DERIVED_FROM")

    @model_validator(mode="after")
    def _one_object(self) -> FactLine:
        if (self.object_id is None) == (self.value is None):
            raise ValueError("give exactly one of object_id (an entity) or value (a literal)")
        return self


RelationType = Annotated[str, Field(pattern=r"^[A-Z][A-Z0-9_]{0,63}$")]
PropertyText = Annotated[str, Field(max_length=2_000)]


class RelationLine(_Line):
    kind: Literal["relation"]
    id: UUID
    app_id: Identifier = "default"
    channel: Identifier = "_global"
    source_id: UUID
    type: RelationType
    target_id: UUID
    properties: Metadata = {}
    valid_from: Timestamp | None = None
    valid_until: Timestamp | None = None
    recorded_at: Timestamp
    memory_ids: list[UUID] = Field(default=[], max_length=100_000, description="DERIVED_FROM")

    @model_validator(mode="after")
    def _text_properties(self) -> RelationLine:
        if len(self.properties) > 50 or not all(
            isinstance(v, str) and len(v) <= 2_000 for v in self.properties.values()
        ):
            raise ValueError("properties are at most 50 texts of at most 2000 characters")
        return self


class FactReviewLine(_Line):
    kind: Literal["fact_review"]
    id: UUID
    fact_id: UUID
    conflicts_with: UUID
    reason: Annotated[Identifier, Field(max_length=255)]
    created_at: Timestamp


class EntityMergeLine(_Line):
    """A merge of one entity into another, with what it moved (so a split can move it back)."""

    kind: Literal["entity_merge"]
    id: UUID
    merged_id: UUID
    into_id: UUID
    subject_facts: list[UUID] = Field(default=[], max_length=100_000)
    object_facts: list[UUID] = Field(default=[], max_length=100_000)
    source_relations: list[UUID] = Field(default=[], max_length=100_000)
    target_relations: list[UUID] = Field(default=[], max_length=100_000)
    actor: Identifier
    created_at: Timestamp
    split_at: Timestamp | None = None


class FactPromotionLine(_Line):
    """A project fact copied to _global (``fact_id``, the copy) from ``promoted_from``."""

    kind: Literal["fact_promotion"]
    fact_id: UUID
    promoted_from: UUID
    actor: Identifier
    promoted_at: Timestamp


# --- cognitive memory --------------------------------------------------------------------------


class ExportedTurn(_Strict):
    index: Count
    memory_id: UUID
    role: Literal["user", "assistant", "system", "tool"]
    model: Identifier | None = None
    token_count: Count = 0
    occurred_at: Timestamp


class ConversationLine(_Line):
    kind: Literal["conversation"]
    id: Identifier = Field(description="the caller's own id for it (opaque text)")
    channel: Identifier = "_global"
    title: Title | None = None
    turn_count: Count = 0
    started_at: Timestamp
    last_turn_at: Timestamp | None = None
    consolidated_at: Timestamp | None = None
    consolidated_turns: Count = 0
    archived: bool = False
    turns: list[ExportedTurn] = Field(default=[], max_length=100_000)

    @model_validator(mode="after")
    def _turns_in_order(self) -> ConversationLine:
        indices = [t.index for t in self.turns]
        if len(set(indices)) != len(indices):
            raise ValueError("two turns have the same index")
        if indices and max(indices) >= self.turn_count:
            raise ValueError("a turn's index must be below turn_count")
        if self.consolidated_turns > self.turn_count:
            # Consolidation would wait for turns that never come.
            raise ValueError("consolidated_turns must not exceed turn_count")
        return self


class ToolInvocationLine(_Line):
    kind: Literal["tool_invocation"]
    id: UUID
    channel: Identifier = "_global"
    conversation_id: Identifier | None = None
    turn_index: Count | None = None
    tool_name: Identifier
    input: JSONValue = None
    output: JSONValue = None
    error: JSONText | None = _bounded(10_000)
    success: bool
    latency_ms: Milliseconds | None = None
    created_at: Timestamp


class StrategyLine(_Line):
    kind: Literal["strategy"]
    id: UUID
    channel: Identifier = "_global"
    description: Description
    context_pattern: JSONText | None = _bounded(2_000)
    tool_sequence: list[Identifier] = Field(min_length=1, max_length=100)
    source_conversation_id: Identifier | None = None
    success_count: Count = 0
    failure_count: Count = 0
    last_used: Timestamp | None = None
    created_at: Timestamp
    embedding: Vector | None = None
    embedding_model: Identifier | None = None


class GoalLine(_Line):
    kind: Literal["goal"]
    id: UUID
    channel: Identifier = "_global"
    description: Description
    result: JSONText | None = _bounded(10_000)
    priority: int = Field(default=5, ge=1, le=10)
    status: Literal["active", "completed", "abandoned", "blocked"] = "active"
    deadline: Timestamp | None = None
    parent_id: UUID | None = None
    blocked_by: list[UUID] = Field(default=[], max_length=50)
    created_at: Timestamp
    completed_at: Timestamp | None = None


class ProfileLine(_Line):
    kind: Literal["profile"]
    channel: Identifier = "_global"
    preferences: Metadata = {}
    expertise: list[Identifier] = Field(default=[], max_length=100)
    communication_style: JSONText | None = _bounded(1_000)
    updated_at: Timestamp


Line = (
    MemoryLine
    | EntityLine
    | FactLine
    | RelationLine
    | FactReviewLine
    | EntityMergeLine
    | FactPromotionLine
    | ConversationLine
    | ToolInvocationLine
    | StrategyLine
    | GoalLine
    | ProfileLine
)
KINDS: dict[str, type[BaseModel]] = {
    "memory": MemoryLine,
    "entity": EntityLine,
    "fact": FactLine,
    "relation": RelationLine,
    "fact_review": FactReviewLine,
    "entity_merge": EntityMergeLine,
    "fact_promotion": FactPromotionLine,
    "conversation": ConversationLine,
    "tool_invocation": ToolInvocationLine,
    "strategy": StrategyLine,
    "goal": GoalLine,
    "profile": ProfileLine,
}


# --- format 1 ----------------------------------------------------------------------------------


class _V1Entity(_Strict):
    id: UUID
    user_id: Identifier
    app_id: Identifier
    channel: Identifier
    type: EntityTypeName
    name: Name
    aliases: list[Name] = Field(default=[], max_length=100)
    description: JSONText | None = _bounded(2_000)
    salience: Share
    access_count: Count
    last_accessed: Timestamp | None
    first_seen: Timestamp
    properties: Metadata = {}
    embedding: Vector | None = None
    embedding_model: Identifier | None = None


class _V1Fact(_Strict):
    id: UUID
    user_id: Identifier
    app_id: Identifier
    channel: Identifier
    subject_id: UUID
    predicate: Predicate
    object_id: UUID | None
    claim: Annotated[Content, Field(max_length=4_000)]
    value: Value | None
    confidence: Share
    certainty: Literal["explicit", "implied", "inferred", "uncertain"]
    temporal: Literal["current", "past", "future"]
    source: Identifier | None
    valid_from: Timestamp | None
    valid_until: Timestamp | None
    recorded_at: Timestamp
    superseded_at: Timestamp | None
    superseded_by: UUID | None
    access_count: Count
    last_accessed: Timestamp | None
    embedding: Vector | None = None
    embedding_model: Identifier | None = None


class _V1Graph(_Strict):
    entities: list[_V1Entity] = Field(max_length=10_000)
    facts: list[_V1Fact] = Field(max_length=10_000)


class _V1Parts(_Strict):
    graph: _V1Graph | None = None


class _V1Memory(_Strict):
    memvault_export: Literal[1]
    id: UUID
    content: Content
    user_id: Identifier
    app_id: Identifier
    project_id: Identifier | None
    environment: Identifier | None
    channel: Identifier
    source: Identifier | None
    tags: list[Annotated[Identifier, Field(max_length=100)]] = Field(max_length=50)
    metadata: Metadata
    categories: list[Identifier] = Field(max_length=50)
    importance: int | None = Field(ge=1, le=10)
    memory_type: MemoryType
    valid_until: Timestamp | None
    tier: Tier
    embedding_model: Identifier | None
    access_count: Count
    last_accessed: Timestamp | None
    occurred_at: Timestamp
    created_at: Timestamp
    updated_at: Timestamp
    expires_at: Timestamp | None
    history: list[ExportedVersion] = Field(max_length=10_000)
    # Format 1 keyed vectors by model name; checked as a list of pairs (see _v1_vectors).
    vectors: list[tuple[Identifier, list[Vector]]] = Field(max_length=8)
    parts: _V1Parts = _V1Parts()


def _v1_lines(old: _V1Memory) -> list[Line]:
    """A format-1 line as the format-2 lines it holds: the memory, then its graph part."""
    memory = MemoryLine(
        memvault_export=2,
        kind="memory",
        vectors=[VectorSet(model=m, chunks=c) for m, c in old.vectors if c],
        **old.model_dump(exclude={"memvault_export", "vectors", "parts", "embedding_model"}),
    )
    lines: list[Line] = [memory]
    graph = old.parts.graph
    if graph is not None:
        for e in graph.entities:
            lines.append(
                EntityLine(memvault_export=2, kind="entity", memory_ids=[], **e.model_dump())
            )
        for f in graph.facts:
            lines.append(
                FactLine(memvault_export=2, kind="fact", memory_ids=[old.id], **f.model_dump())
            )
    return lines


# --- reading lines -----------------------------------------------------------------------------


def problems(exc: ValidationError, line: int) -> list[dict[str, Any]]:
    """The problems of one line, each by the field's path in this schema (never a key or a
    value the caller sent)."""
    found = validation_problems(exc.errors(include_input=False, include_url=False))
    return [{"line": line, **p} for p in found]


def problem(line: int, field: str, message: str) -> dict[str, Any]:
    return {"line": line, "field": field, "problem": message}


def read_line(item: Any, line: int) -> tuple[list[Line], list[dict[str, Any]]]:
    """The lines one JSON value of a file stands for, or what is wrong with it."""
    if not isinstance(item, dict):
        return [], [problem(line, "line", "must be a JSON object")]
    version = item.get("memvault_export")
    if version not in READS or isinstance(version, bool):
        return [], [problem(line, "memvault_export", f"must be one of {list(READS)}")]
    try:
        if version == 1:
            vectors = item.get("vectors")
            if isinstance(vectors, dict):  # format 1 keyed them by model: checked as pairs
                item = {**item, "vectors": list(vectors.items())}
            return _v1_lines(_V1Memory.model_validate(item)), []
        kind = item.get("kind")
        model = KINDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            return [], [problem(line, "kind", f"must be one of {', '.join(KINDS)}")]
        return [model.model_validate(item)], []  # type: ignore[list-item]
    except ValidationError as exc:
        return [], problems(exc, line)


# --- what an import has read, and where each row goes ---------------------------------------


@dataclass
class Read:
    """The file's lines, by kind, each with the line number it came from."""

    by_kind: dict[str, dict[Any, tuple[int, Any]]] = field(default_factory=dict)
    problems: list[dict[str, Any]] = field(default_factory=list)

    def add(self, number: int, line: Line) -> None:
        kind = line.kind
        key = _key(line)
        found = self.by_kind.setdefault(kind, {})
        if key not in found:
            found[key] = (number, line)
            return
        first, earlier = found[key]
        if isinstance(line, EntityLine | FactLine) and isinstance(earlier, EntityLine | FactLine):
            # Format 1 repeats an entity or fact in each memory it came from.
            sources = list(dict.fromkeys([*earlier.memory_ids, *line.memory_ids]))
            found[key] = (first, earlier.model_copy(update={"memory_ids": sources}))
            return
        self.problems.append(problem(number, "id", f"the same {kind} is on line {first} too"))

    def lines(self, kind: str) -> list[tuple[int, Any]]:
        return list(self.by_kind.get(kind, {}).values())


def _key(line: Line) -> Any:
    """What names a line's row among the user's rows of its kind."""
    if isinstance(line, ProfileLine):
        return line.channel
    if isinstance(line, FactPromotionLine):
        return line.fact_id
    return line.id


@dataclass
class Plan:
    """Where each line's row goes: its id here (kept, or derived when another user holds it),
    and whether it is there already."""

    tenant_id: str
    user_id: str
    ids: dict[str, dict[Any, Any]] = field(default_factory=dict)
    present: dict[str, set[Any]] = field(default_factory=dict)
    # Rows the user has already that a line names without carrying them.
    theirs: dict[str, set[Any]] = field(default_factory=dict)
    remapped: int = 0

    def new(self, kind: str, key: Any) -> bool:
        return key not in self.present.get(kind, set())

    def id(self, kind: str, key: Any) -> Any:
        return self.ids.get(kind, {}).get(key, key)

    def ref(self, kind: str, key: Any) -> Any:
        if key is None:
            return None
        return self.ids.get(kind, {}).get(key, key)
