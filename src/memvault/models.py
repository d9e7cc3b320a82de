"""Pydantic models: what callers send (…Create / …Update / …Query) and what they get back."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from memvault import jsonvalues

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _encodable(value: str) -> None:
    # A lone surrogate (JSON can carry "\ud800") has no UTF-8 form: nothing can store it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None


def _identifier(value: str) -> str:
    _encodable(value)
    if not value.strip():
        raise ValueError("must not be empty or whitespace")
    if _CONTROL.search(value):
        raise ValueError("must not contain control characters")
    return value


def _content(value: str) -> str:
    _encodable(value)
    if not value.strip():
        raise ValueError("content must not be empty or whitespace-only")
    if "\x00" in value:
        raise ValueError("content must not contain NUL characters")
    return value


def _index_text(value: str) -> str:
    _encodable(value)
    if "\x00" in value:
        raise ValueError("index_text must not contain NUL characters")
    return value


def _utc(value: datetime) -> datetime:
    """A timestamp without a zone is taken as UTC, never as the server's local time; one that
    leaves the years 1-9999 once in UTC cannot be stored or compared, so it is refused."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("must fall within the years 1-9999 once converted to UTC") from None


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    jsonvalues.check(value)
    return value


def _tags(values: list[str]) -> list[str]:
    return sorted({_identifier(v) for v in values})


Identifier = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_identifier)]
Content = Annotated[str, AfterValidator(_content)]
# What a memory is found by, when not its content; may be empty (found by nothing).
IndexText = Annotated[str, AfterValidator(_index_text)]
# Free text beside a memory; docs/limits.md lists every limit.
# A title or a description: one line of meaning, not a document (documents are memories).
Title = Annotated[str, Field(max_length=500), AfterValidator(_content)]
Description = Annotated[str, Field(max_length=2_000), AfterValidator(_content)]
# A question to search or recall by: as long as the longest memory by default (a memory's
# whole text is a fair query), no longer.
MAX_QUERY_CHARS = 32_000
Query = Annotated[str, Field(max_length=MAX_QUERY_CHARS), AfterValidator(_content)]
# Why something was done, as the audit log records it: one short line.
Reason = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_identifier)]
# A duration a caller reports (a tool call's latency): at most 30 days, so sums and averages
# over any number of them stay far inside a double.
MAX_MILLISECONDS = 30 * 86_400_000
Milliseconds = Annotated[float, Field(ge=0, le=MAX_MILLISECONDS, allow_inf_nan=False)]
Tags = Annotated[
    list[Annotated[str, Field(max_length=100)]], Field(max_length=50), AfterValidator(_tags)
]
Timestamp = Annotated[datetime, AfterValidator(_utc)]
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]
MemoryType = Literal["persistent", "temporal"]
Tier = Literal["hot", "warm", "cold"]
HistoryAction = Literal["ADD", "UPDATE", "DELETE"]
# What the audit log records; the audit table's check constraint is derived from this.
AuditOperation = Literal[
    "store", "retrieve", "update", "delete", "promote", "merge", "decay", "export", "import", "tier"
]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Input):
    """Where a memory lives inside a tenant."""

    user_id: Identifier
    app_id: Identifier = "default"
    project_id: Identifier | None = None
    environment: Identifier | None = None
    channel: Identifier = "_global"


class Owner(_Input):
    """Whose memory a read or change of one memory is for."""

    user_id: Identifier = Field(description="the memory's owner; another user's memory is a 404")


class MemoryCreate(Scope):
    content: Content
    source: Identifier | None = None
    tags: Tags = []
    metadata: Metadata = {}
    occurred_at: Timestamp | None = None
    expires_at: Timestamp | None = None


PIIPolicy = Literal["redact", "reject", "allow"]


class MemoryInput(MemoryCreate):
    """One memory to add, with how to add it (the body of POST /v1/memories, and each item of
    POST /v1/memories/batch)."""

    infer: bool = Field(
        default=True,
        description="run deduplication and enrichment; false stores the text as given "
        "(PII protection still applies)",
    )
    pii_policy: PIIPolicy | None = Field(
        default=None, description="redact, reject or allow; unset: MEMVAULT_PII_POLICY"
    )
    index_text: IndexText | None = Field(
        default=None,
        description="the text search embeds and keyword-indexes in place of the content (the "
        "content is still what is stored and returned); an empty or blank text indexes "
        "nothing: the memory is stored, listed and fetched, never found by search. Either way "
        "it is stored as given, never deduplicated or merged",
    )


class MemoryUpdate(_Input):
    """Content replaces the old text (and queues re-embedding); metadata is merged key by key,
    a key set to null is removed; tags replace the old tags; importance is set as given (a
    person's judgement, kept when the text is edited with it); expires_at moves the expiry
    (the memory keeps its id)."""

    content: Content | None = None
    metadata: Metadata | None = None
    tags: Tags | None = Field(default=None, description="the memory's tags, replacing its own")
    importance: int | None = Field(default=None, ge=1, le=10)
    expires_at: Timestamp | None = Field(
        default=None,
        description="a new expiry, in the future: a TTL refreshed in place (same id, same "
        "place in every ranking)",
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> MemoryUpdate:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("give content, metadata, tags, importance, expires_at or some")
        return self


class MemoryFilter(_Input):
    """Every filter of list and search, defined once. Each is applied in SQL
    (``db.store.list_filters``), inside the caller's tenant and user; the keyword signatures of
    ``Memory.list/search``, the client and the routes are derived from this class, so adding a
    filter is a field here and its condition there."""

    user_id: Identifier
    app_id: Identifier | None = None
    project_id: Identifier | None = None
    environment: Identifier | None = None
    channel: Identifier | None = None
    source: Identifier | None = None
    tags: Tags = Field(default=[], description="memories carrying all of these tags")
    metadata: Metadata | None = Field(
        default=None, description="JSON containment: memories whose metadata includes this"
    )
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    tags_any: Tags = Field(default=[], description="memories carrying any of these tags")
    categories: Tags = Field(default=[], description="memories in any of these categories")
    memory_type: MemoryType | None = None
    tier: Tier | None = None
    min_importance: int | None = Field(default=None, ge=1, le=10)
    occurred_after: Timestamp | None = None
    occurred_before: Timestamp | None = None
    channels: Tags = Field(
        default=[], description="memories in any of these channels (a project and _global)"
    )


class MemoryQuery(MemoryFilter):
    """A page of a listing: the filters, and where the page starts."""

    limit: int = Field(default=20, ge=1)
    cursor: str | None = None


class MemoryRecord(BaseModel):
    """A stored memory, decrypted for its owner."""

    id: UUID
    content: str
    user_id: str
    app_id: str
    project_id: str | None
    environment: str | None
    channel: str
    source: str | None
    tags: list[str]
    metadata: dict[str, Any]
    categories: list[str]
    importance: int | None
    memory_type: MemoryType
    valid_until: datetime | None
    tier: Tier
    embedded: bool
    access_count: int
    last_accessed: datetime | None
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None


DedupAction = Literal["stored_new", "duplicate_exact", "merge", "replace", "keep_both", "pending"]
FieldSource = Literal["llm", "rules", "given", "pending"]


class DedupInfo(BaseModel):
    action: DedupAction = Field(
        description="stored_new; duplicate_exact (nothing stored, the existing memory "
        "returned); merge / replace (the existing memory updated); keep_both; pending "
        "(background adds: decided by the worker)"
    )
    existing_id: UUID | None = None
    similarity: float | None = None
    decided_by: Literal["hash", "vector", "llm", "rules"] | None = None


class PIIInfo(BaseModel):
    policy: PIIPolicy
    found: dict[str, int] = Field(description="types and counts detected; never the values")
    redacted: bool


class AddResult(MemoryRecord):
    """The memory as stored (or the existing one it was folded into), and how it got there."""

    dedup: DedupInfo
    pii: PIIInfo
    conversation_id: str | None = Field(
        default=None, description="a conversation turn's conversation"
    )
    turn_index: int | None = Field(default=None, description="a conversation turn's place")
    sources: dict[str, FieldSource] = Field(
        description="which path produced importance, memory_type/valid_until and categories; "
        "occurred_at: 'given' by the caller, or read from a date in the text ('rules'/'llm') "
        "when the caller gave none (absent: the time it was stored)"
    )


# The source of a memory that is a conversation turn: what someone said, kept verbatim (never
# deduplicated into, merged or rewritten; only deleting it removes it).
TURN_SOURCE = "conversation"


class Message(_Input):
    """One conversation turn."""

    role: Literal["user", "assistant", "system", "tool"] = Field(
        description="who spoke; a person's name goes in `name`"
    )
    content: Content
    name: Identifier | None = Field(default=None, description="the speaker's name, if known")
    model: Identifier | None = Field(default=None, description="the model that spoke it")
    index_text: IndexText | None = Field(
        default=None,
        description="the text search finds this turn by, in place of its content (default: the "
        "content); empty: the turn is kept and read back with its conversation, never found "
        "by search (a tool call's JSON, say)",
    )


class MessagesRequest(_Input):
    """Body of POST /v1/messages: a conversation (or part of one), stored turn by turn."""

    messages: list[Message] = Field(min_length=1)
    user_id: Identifier
    app_id: Identifier = "default"
    channel: Identifier = Field(
        default="_global",
        description="_global or a project channel (a conversation keeps the one it began in)",
    )
    conversation_id: Identifier | None = Field(
        default=None,
        description="your own id for the conversation: created on first use, appended to "
        "afterwards (default: a new conversation with a UUID for its id)",
    )
    session_id: Identifier | None = Field(
        default=None, description="the same as conversation_id (its older name)"
    )
    title: Title | None = Field(default=None, description="a new conversation's title")
    occurred_at: Timestamp | None = Field(
        default=None, description="when the conversation took place (default: now)"
    )
    infer: bool = Field(
        default=False,
        description="turns are always kept verbatim (never deduplicated) and learned from by "
        "the offline extractor; true also enriches them with the configured LLM",
    )
    first_turn: int = Field(
        default=0,
        ge=0,
        le=2**31 - 1,
        deprecated=True,
        description="ignored: turns are numbered by their conversation",
    )

    @model_validator(mode="after")
    def _one_conversation(self) -> MessagesRequest:
        if self.conversation_id and self.session_id and self.conversation_id != self.session_id:
            raise ValueError("conversation_id and session_id name two conversations")
        return self

    @property
    def conversation(self) -> str | None:
        return self.conversation_id or self.session_id


class BatchRequest(_Input):
    memories: list[MemoryInput] = Field(min_length=1)


class BatchResult(BaseModel):
    results: list[AddResult]


class SearchHit(MemoryRecord):
    similarity: float | None = Field(
        description="cosine similarity of the best chunk, 0..1 (null: found by keywords only)"
    )
    relevance: float = Field(
        ge=0,
        le=1,
        description="how well this memory matches the query, 0..1, comparable across queries "
        "(unlike score): the higher of the query's cosine similarity to the memory (its best "
        "chunk, or a fact read from it), clamped, and its BM25 share of the query's best "
        "possible BM25 score. What min_relevance compares",
    )
    score: float = Field(
        description="the final score results are ordered by: rank-relative (the best "
        "candidate's fused share is 1 whatever the query), so compare it within one result, "
        "never against a fixed threshold"
    )
    scores: dict[str, float | None] = Field(
        description="breakdown: vector (similarity), keyword (BM25), fused (reciprocal rank), "
        "relevance (fused / best: rank-relative, not the hit's relevance), importance, "
        "recency, validity, reinforcement, time"
    )
    replaced_by: UUID | None = Field(
        default=None,
        description="for a question about how things stand (now, at its reference_time, or in "
        "the period it names): a later memory in these results that updates this one, ranked "
        "above it (this one held until that one's occurred_at)",
    )
    context: list[MemoryRecord] | None = Field(
        default=None,
        description="with context_window=n: the turns around this one in its session, in "
        "turn order (the hit itself excluded)",
    )


class TechniqueReport(BaseModel):
    """How one LLM recall technique went; never holds the model's text."""

    status: Literal["ok", "failed", "unavailable"] = Field(
        description="ok; failed (the search answered without it: see detail); unavailable "
        "(no LLM configured)"
    )
    ms: float = Field(description="wall time spent on it")
    added: int = Field(default=0, description="extra queries or filters it contributed")
    detail: str | None = Field(default=None, description="error code when it failed")


class TimeReport(BaseModel):
    """The time expression the query named, as the search understood it."""

    expression: str
    after: datetime | None
    before: datetime | None
    mode: Literal["boost", "filter"]
    source: Literal["rules", "llm"]


class SearchDiagnostics(BaseModel):
    timings_ms: dict[str, float] = Field(
        description="embed, retrieve (the candidate lists, run at once), each list as "
        "retrieve:<probe>:<vector|keyword>, rank, each technique, and total"
    )
    time: TimeReport | None = None
    techniques: dict[str, TechniqueReport] = Field(default_factory=dict)


class Entity(BaseModel):
    """A person, place, organisation, project, tool, … the graph knows, decrypted for its
    owner."""

    id: UUID
    user_id: str
    name: str
    type: str
    aliases: list[str]
    description: str | None
    salience: float
    access_count: int
    first_seen: datetime
    last_accessed: datetime | None
    merged_into: UUID | None = Field(
        default=None, description="set while merged into another entity (split undoes it)"
    )


class Fact(BaseModel):
    """``subject predicate object`` (an entity) or ``subject predicate value`` (a literal),
    with both time axes: valid (when it holds in the world) and system (when we learned it,
    when a newer fact replaced it)."""

    id: UUID
    user_id: str
    channel: str
    subject_id: UUID
    subject: str
    predicate: str
    object_id: UUID | None
    object: str | None
    value: str | None
    claim: str
    confidence: float
    certainty: str
    temporal: str
    source: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: UUID | None
    memory_ids: list[UUID] = Field(
        default=[], description="the memories it was derived from (DERIVED_FROM)"
    )


class FactHit(Fact):
    score: float
    scores: dict[str, float]


class EntityHit(Entity):
    score: float
    scores: dict[str, float]


class SearchResult(BaseModel):
    results: list[SearchHit]
    facts: list[FactHit] | None = Field(
        default=None, description='with include=["facts"]: facts by relevance, current first'
    )
    entities: list[EntityHit] | None = Field(
        default=None, description='with include=["entities"]: entities the query is about'
    )
    model: str = Field(description="the embedding model that compared query and memories")
    degraded: bool = Field(
        description="true when the query was embedded by a fallback model (only memories "
        "embedded by the same fallback were compared) or not at all (keywords only)"
    )
    recipe: str = Field(default="hybrid", description="the search recipe that ran")
    diagnostics: SearchDiagnostics | None = None


class SearchRequest(MemoryFilter):
    """Body of POST /v1/memories/search: the question, the filters, and how to search."""

    query: Query
    limit: int = Field(default=10, ge=1, le=100)
    min_relevance: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="only hits whose relevance (0..1) reaches this; the page fills from the "
        "rest in rank order (mem0's threshold)",
    )
    recipe: Literal["hybrid", "vector", "keyword", "recent"] = Field(
        default="hybrid",
        description="hybrid (vector + BM25, fused), vector, keyword, or recent (hybrid with "
        "recency first)",
    )
    reference_time: Timestamp | None = Field(
        default=None,
        description="the moment the question is asked, for 'yesterday' or 'last May' "
        "(default: now)",
    )
    time_mode: Literal["boost", "filter", "off"] = Field(
        default="boost",
        description="a time expression in the query: boost memories from then (and search "
        "them as an extra candidate list), filter to them, or ignore it",
    )
    expand: bool | None = Field(
        default=None,
        description="LLM query expansion: the question rewritten as statements, searched too "
        "(default: MEMVAULT_RECALL_EXPAND)",
    )
    hyde: bool | None = Field(
        default=None,
        description="HyDE: a hypothetical answer embedded as an extra query "
        "(default: MEMVAULT_RECALL_HYDE)",
    )
    self_query: bool | None = Field(
        default=None,
        description="LLM self-query: filters read from the question, searched as an extra "
        "candidate list (default: MEMVAULT_RECALL_SELF_QUERY)",
    )
    fact_keys: bool | None = Field(
        default=None,
        description="knowledge-graph facts as extra keys: a fact the query matches (keywords "
        "or meaning) lifts the memory it was read from (default: MEMVAULT_GRAPH_FACT_KEYS)",
    )
    context_window: int = Field(
        default=0,
        ge=0,
        le=10,
        description="return up to n turns either side of each conversational hit",
    )
    track_access: bool = Field(
        default=True,
        description="count this search as an access of the memories it returns "
        "(reinforcement; updated in the background)",
    )
    include: list[Literal["facts", "entities"]] = Field(
        default=[],
        description="also answer facts and/or entities of the knowledge graph, each in its own "
        "list with scores (entity-centric: the entities the query names, their neighbours "
        "within two hops, and their current facts)",
    )


class EmbeddingJob(BaseModel):
    id: int
    tenant_id: str
    memory_id: UUID
    status: Literal["queued", "processing", "done", "failed"]
    attempts: int
    last_error: str | None
    available_at: datetime
    updated_at: datetime


class MemoryPage(BaseModel):
    results: list[MemoryRecord]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page"
    )


class HistoryEntry(BaseModel):
    id: int
    memory_id: UUID
    action: HistoryAction
    old_content: str | None
    new_content: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None
    actor: str
    created_at: datetime
    claimed_actor: str | None = Field(
        default=None,
        description="brought in by an import: who the export said made the change (actor and "
        "created_at are then who imported it, and when)",
    )
    claimed_at: datetime | None = Field(
        default=None, description="brought in by an import: when the export said it happened"
    )


class HistoryPage(BaseModel):
    results: list[HistoryEntry]


class DeleteResult(BaseModel):
    deleted: int


class Feedback(_Input):
    """The memories an answer used: what ranking reinforces (being returned is not use)."""

    user_id: Identifier = Field(description="the memories' owner; other ids are not counted")
    memory_ids: list[UUID] = Field(
        min_length=1, max_length=100, description="the memories that helped"
    )


class FeedbackResult(BaseModel):
    reinforced: int = Field(description="how many of the ids were this user's memories")


class RotationReport(BaseModel):
    active_key_id: str
    memories_reencrypted: int
    history_reencrypted: int
    retired_key_ids: list[str]
    # Per-tenant keys: tenant data keys re-wrapped under the new master key.
    tenant_keys_rewrapped: int = 0
