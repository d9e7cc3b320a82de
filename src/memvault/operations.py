"""Every operation memvault offers over HTTP, declared once.

Each :class:`Operation` names its HTTP method and path, the models its arguments and answer
travel in, the API-key scope it needs, its summary, description and example, the
``AsyncMemory`` method that does the work, and whether the MCP server offers it as a tool. The
rest is derived from :data:`OPERATIONS`:

- the FastAPI routes (``memvault.api.routes``), their OpenAPI summaries, descriptions, examples;
- the HTTP client's methods, sync and async (``memvault.client``);
- the MCP tools (``memvault.mcp``): the operations marked with a :class:`Tool`;
- the HTTP reference page of the documentation (``docs/hooks/reference.py``).

``AsyncMemory``'s flat methods (``memory.complete_goal`` for ``memory.goals.complete_goal``) are
derived from it too, and the sync library face (``memvault.Memory``) from ``AsyncMemory``, so
adding an operation is a method on the resource and an entry here. This module imports models
only (no FastAPI, no HTTP client), so every face can read it.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from memvault.cognitive.kinds import (
    Conversation,
    ConversationPage,
    ConversationStart,
    Goal,
    GoalCompletion,
    GoalInput,
    GoalPage,
    Profile,
    ProfileUpdate,
    Reinforcement,
    RememberRequest,
    Strategy,
    StrategyInput,
    ToolInvocation,
    ToolUse,
    TurnsRequest,
    WorkingContext,
    WorkingValue,
)
from memvault.events import (
    DeliveryPage,
    DeliveryParams,
    Replayed,
    ReplayRequest,
    Webhook,
    WebhookCreated,
    WebhookInput,
    WebhookList,
    WebhookUpdate,
)
from memvault.graph.views import (
    CorrectionRequest,
    EntitiesQuery,
    EntityDetail,
    FactInput,
    FactsQuery,
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
from memvault.lifecycle.reports import (
    AuditPage,
    AuditQuery,
    BulkDeletion,
    DeletionReceipt,
    DeletionRequest,
    ExportPage,
    HealthActionRequest,
    HealthActionResult,
    ImportCounts,
    ImportRequest,
    MemoryHealth,
    MergeUndone,
    OverviewQuery,
    ReceiptPage,
    ReceiptsQuery,
    UserOverview,
    UserPage,
    UsersQuery,
)
from memvault.models import (
    AddResult,
    BatchRequest,
    BatchResult,
    DeleteResult,
    Fact,
    Feedback,
    FeedbackResult,
    HistoryPage,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    MemoryQuery,
    MemoryRecord,
    MemoryUpdate,
    MessagesRequest,
    Owner,
    SearchRequest,
    SearchResult,
)
from memvault.wire import (
    Cleared,
    ContextValue,
    ConversationParams,
    EntityList,
    FactList,
    GoalParams,
    OwnerInChannel,
    OwnerParams,
    RememberAnswer,
    ReviewList,
    StatsParams,
    StrategyPage,
    StrategyParams,
    ToolStatsPage,
    TurnPage,
)

if TYPE_CHECKING:
    from memvault.cognitive.bundle import MemoryBundle

Scope = Literal["read", "write", "admin"]
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
# How a request's model becomes the service's keywords: every field (the model's defaults
# included), only the fields the caller set, or every field that is not null.
Fields = Literal["all", "set", "not_none"]


@dataclass(frozen=True)
class Flag:
    """A boolean query-string switch (``?wait=true``), ``False`` unless given."""

    name: str  # the service's keyword
    wire: str  # the query string's name
    description: str


WAIT = Flag("wait", "wait", "answer once the memory is searchable")
WAIT_TURNS = Flag("wait", "wait", "answer once every turn is searchable")
BACKGROUND = Flag("background", "async", "store now, embed / dedup / enrich in the worker")


@dataclass(frozen=True)
class Tool:
    """The operation as an MCP tool: its name and what the model reads about it. The tool's
    arguments and answer are shaped for a model (``memvault.mcp`` has a function per tool)."""

    name: str
    description: str
    read_only: bool = False
    destructive: bool = False


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One operation, declared once.

    - ``name``: the route's name (OpenAPI ``operationId`` stem); ``tag`` groups it.
    - ``method``, ``path``: each ``{name}`` in the path is the service keyword of that name.
    - ``scope``: what the API key must hold; ``None``: no key (liveness, metrics).
    - ``summary``, ``description``, ``example``: the docs. ``example`` holds a request's values
      by the names the wire uses: path names, query names, body fields.
    - ``resource``, ``service``: the method that does the work, ``service`` of the
      ``AsyncMemory`` resource ``resource`` (``memory.goals.complete_goal``); ``AsyncMemory``
      has it by its flat name too (``memory.complete_goal``), and so does the client, with its
      signature. ``None``: server-side only.
    - ``query``: the model the query string is read and checked by (a library model; an
      object field travels as JSON in a string). Only the fields the service takes are read.
    - ``body``: the model of the JSON body. ``whole``: the service keyword that takes the body
      entire; otherwise its fields are the keywords (``fields`` says which).
    - ``flags``: boolean query switches. ``wire``: service keywords the wire spells otherwise.
    - ``response``: the answer's model (``None``: no body, e.g. 204); ``returns``: the field of
      it the service's value goes in (``"results"`` of a page) and the client hands back;
      ``shape``: builds the answer from the service's value where a field is not enough.
    - ``status``: the success status. ``conflict``: may answer 409. ``deprecated``.
    - ``handler``: the name of a hand-written handler in ``memvault.api.routes.handlers``, for
      the few operations that are not one service call (readiness, metrics, a tenant's
      erasure); the table still declares their path, scope and docs.
    - ``routed``: ``False`` for a second client method answered by the route of the operation
      with the same method and path declared before it.
    - ``mcp``: the MCP tool this operation is offered as, if any.

    ``safe_to_repeat`` and ``takes_idempotency_key`` are derived: what a client may send again.
    """

    name: str
    method: Method
    path: str
    scope: Scope | None
    summary: str
    description: str
    example: Mapping[str, Any]
    tag: str
    response: type[BaseModel] | None
    resource: str | None = None
    service: str | None = None
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    flags: tuple[Flag, ...] = ()
    wire: Mapping[str, str] = field(default_factory=dict)
    whole: str | None = None
    fields: Fields = "all"
    returns: str | None = None
    shape: Callable[[Any], BaseModel] | None = None
    status: int = 200
    conflict: bool = False
    deprecated: bool = False
    handler: str | None = None
    routed: bool = True
    mcp: Tool | None = None

    @property
    def path_names(self) -> tuple[str, ...]:
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.path) if name)

    @property
    def safe_to_repeat(self) -> bool:
        """Whether sending it twice does no more than sending it once: a read (a search is a
        ``POST`` for its body), or a method that says so (``PUT``, ``DELETE``)."""
        return self.scope == "read" or self.method in ("GET", "HEAD", "PUT", "DELETE")

    @property
    def takes_idempotency_key(self) -> bool:
        """Whether its route answers a repeated ``Idempotency-Key`` with the first answer
        (``memvault.idempotency``): every other write made from the table; a hand-written
        handler's route does not (nor another operation's)."""
        return not self.safe_to_repeat and self.routed and self.handler is None

    @property
    def renamed(self) -> dict[str, str]:
        """Service keyword to wire name, the flags' included."""
        return {**self.wire, **{f.name: f.wire for f in self.flags if f.name != f.wire}}


class MemoryCount(BaseModel):
    count: int


def _remember_answer(bundle: MemoryBundle) -> RememberAnswer:
    return RememberAnswer(**bundle.model_dump(), prompt=bundle.as_prompt())


# Example values, shared so the examples read as one story.
USER = "alice"
MEMORY_ID = "0b7e6c1e-6f4c-4d7e-9a51-2f1f0f3c8a10"
GOAL_ID = "5d3c9a8e-1b2f-4c6d-8e7f-9a0b1c2d3e4f"
STRATEGY_ID = "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
ENTITY_ID = "7a1e2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b"
WEBHOOK_ID = "3f2e1d0c-9b8a-4765-8432-10fedcba9876"
CONVERSATION = "support-2024-05-01"
OWNER = {"user_id": USER}

_MEMORY = "memories"
_MESSAGES = "messages"
_OPS = "operations"
_LIFE = "lifecycle"
_COG = "cognitive"
_GRAPH = "graph"
_HOOKS = "webhooks"

OPERATIONS: tuple[Operation, ...] = (
    # --- memories ---------------------------------------------------------------------------
    Operation(
        name="add_memory",
        method="POST",
        path="/v1/memories",
        scope="write",
        summary="Store a memory",
        description="Store one memory through the write pipeline (PII, embedding, dedup, "
        "enrichment). A text that fits the model's window is searchable when this answers; a "
        "longer one, or any with `async=true`, is stored at once and finished by the worker "
        "(`wait=true` waits for that, up to `MEMVAULT_WAIT_TIMEOUT_S`).",
        example={
            "wait": True,
            "user_id": USER,
            "content": "Prefers aisle seats on long flights",
            "tags": ["travel"],
        },
        tag=_MEMORY,
        response=AddResult,
        resource="memories",
        service="add",
        body=MemoryInput,
        flags=(WAIT, BACKGROUND),
        status=201,
        mcp=Tool(
            "add_memory",
            "Remember one fact about the user for future conversations.\n\n"
            "Store what will matter later: preferences, personal details, relationships, "
            "decisions, plans and commitments, and the outcomes of tasks. One fact per call, "
            "not a transcript. Storing a fact that is already known is harmless: duplicates are "
            "detected and related memories merged (see `action`). Secrets such as card numbers "
            "and passwords are redacted.",
        ),
    ),
    Operation(
        name="add_memories",
        method="POST",
        path="/v1/memories/batch",
        scope="write",
        summary="Store a batch of memories",
        description="Bulk import, worked in bulk: one embedding call and one transaction for the "
        "whole batch; an invalid item fails the batch (nothing stored) and the error names its "
        "index. Results come in the order given. A batch the request deadline would cut short is "
        "answered in time with every item stored: what the deadline left over says `dedup.action: "
        "pending` and the worker finishes it.",
        example={
            "memories": [
                {"user_id": USER, "content": "Lives in Lyon"},
                {"user_id": USER, "content": "Allergic to peanuts"},
            ]
        },
        tag=_MEMORY,
        response=BatchResult,
        resource="memories",
        service="add_many",
        body=BatchRequest,
        flags=(WAIT, BACKGROUND),
        wire={"items": "memories"},
        returns="results",
        status=201,
    ),
    Operation(
        name="search_memories",
        method="POST",
        path="/v1/memories/search",
        scope="read",
        summary="Search a user's memories",
        description="The memories most relevant to `query`: by meaning and by keywords (BM25 on "
        "the blind index), fused (`recipe=hybrid`), or by one of them alone, with the list "
        "filters. A time the query names is resolved against `reference_time`; `diagnostics` says "
        "what ran and how long it took.",
        example={"user_id": USER, "query": "where does she like to sit on a plane?", "limit": 5},
        tag=_MEMORY,
        response=SearchResult,
        resource="memories",
        service="search",
        body=SearchRequest,
        mcp=Tool(
            "search_memories",
            "Find the user's memories most relevant to a query, best first (meaning and "
            "keywords).\n\nSearch before answering whenever what you know about the user could "
            "matter: their preferences, past conversations, people and projects they "
            "mentioned, earlier decisions. Search again with other words if the first results "
            "miss.",
            read_only=True,
        ),
    ),
    Operation(
        name="list_memories",
        method="GET",
        path="/v1/memories",
        scope="read",
        summary="List a user's memories",
        description="One page of memories, newest first, with every filter of `MemoryQuery`; pass "
        "`next_cursor` back as `cursor` for the next page.",
        example={"user_id": USER, "tags": ["travel"], "limit": 20},
        tag=_MEMORY,
        response=MemoryPage,
        resource="memories",
        service="list",
        query=MemoryQuery,
        mcp=Tool(
            "list_memories",
            "List the user's memories, newest first, a page at a time.\n\nTo answer a "
            "question, prefer search_memories; list to review or tidy what is stored.",
            read_only=True,
        ),
    ),
    Operation(
        name="count_memories",
        method="GET",
        path="/v1/memories/count",
        scope="read",
        summary="Count a user's memories",
        description="How many of a user's memories match the filters (every filter of `GET "
        "/v1/memories`), without reading one of them.",
        example={"user_id": USER, "tags": ["travel"]},
        tag=_MEMORY,
        response=MemoryCount,
        resource="memories",
        service="count",
        query=MemoryFilter,
        returns="count",
    ),
    Operation(
        name="delete_all_memories",
        method="DELETE",
        path="/v1/memories",
        scope="write",
        summary="Delete all of a user's memories",
        description="Delete every memory of a user (in one app, if given) and every graph row of "
        "theirs; answers how many memories went (`POST /v1/deletions` answers the receipt).",
        example={"user_id": USER},
        tag=_MEMORY,
        response=DeleteResult,
        resource="memories",
        service="delete_all",
        query=MemoryQuery,
        returns="deleted",
    ),
    Operation(
        name="memory_feedback",
        method="POST",
        path="/v1/memories/feedback",
        scope="write",
        summary="Say which memories helped",
        description="Reinforce the memories an answer used: each named memory of this user ranks a "
        "little higher in later searches (`reinforcement` in the score breakdown). Being returned "
        "by a search or `remember()` is not use, and never moves a later ranking; only this does. "
        "Ids that are not this user's memories are not counted.",
        example={"user_id": USER, "memory_ids": [MEMORY_ID]},
        tag=_MEMORY,
        response=FeedbackResult,
        resource="memories",
        service="feedback",
        body=Feedback,
        returns="reinforced",
    ),
    Operation(
        name="delete_memories",
        method="POST",
        path="/v1/memories/delete",
        scope="write",
        summary="Delete several memories, with one receipt",
        description="Delete the named memories of this user and everything derived from them, in "
        "one transaction, and answer one deletion receipt (listed by `GET /v1/deletions`). Ids "
        "that are not this user's are left alone; none of them: 404.",
        example={"user_id": USER, "memory_ids": [MEMORY_ID]},
        tag=_MEMORY,
        response=DeletionReceipt,
        resource="lifecycle",
        service="erase_memories",
        body=BulkDeletion,
    ),
    Operation(
        name="get_memory",
        method="GET",
        path="/v1/memories/{memory_id}",
        scope="read",
        summary="Read one memory",
        description="One memory of this user, decrypted; 404 for another user's or tenant's id.",
        example={"memory_id": MEMORY_ID, **OWNER},
        tag=_MEMORY,
        response=MemoryRecord,
        resource="memories",
        service="get",
        query=Owner,
        mcp=Tool("get_memory", "Read one memory by its id.", read_only=True),
    ),
    Operation(
        name="update_memory",
        method="PATCH",
        path="/v1/memories/{memory_id}",
        scope="write",
        summary="Correct a memory",
        description="Replace the content, merge metadata (a key set to null is removed), replace "
        "the tags, set the importance (1-10) and/or move the expiry. New content is enriched again "
        "and queued for re-embedding; an edit that changes nothing records nothing; a conversation "
        "turn's text cannot be edited (409).",
        example={"memory_id": MEMORY_ID, **OWNER, "content": "Prefers window seats now"},
        tag=_MEMORY,
        response=MemoryRecord,
        resource="memories",
        service="update",
        query=Owner,
        body=MemoryUpdate,
        conflict=True,
        mcp=Tool(
            "update_memory",
            "Correct a memory that is out of date or wrong (give content, metadata or "
            "both).\n\nUse it when the user corrects something or a fact changed (a new "
            "address, a changed preference), rather than adding a second memory that "
            "contradicts the first.",
            destructive=True,
        ),
    ),
    Operation(
        name="delete_memory",
        method="DELETE",
        path="/v1/memories/{memory_id}",
        scope="write",
        summary="Delete a memory",
        description="Delete a memory and everything derived from it (204; `POST /v1/deletions` "
        "answers the receipt).",
        example={"memory_id": MEMORY_ID, **OWNER},
        tag=_MEMORY,
        response=None,
        resource="memories",
        service="delete",
        query=Owner,
        status=204,
        mcp=Tool(
            "delete_memory",
            "Forget one memory for good. Use it when the user asks you to forget something.",
            destructive=True,
        ),
    ),
    Operation(
        name="memory_history",
        method="GET",
        path="/v1/memories/{memory_id}/history",
        scope="read",
        summary="A memory's history",
        description="Every ADD, UPDATE and DELETE of a memory with old and new content, who and "
        "when, oldest first; kept after deletion.",
        example={"memory_id": MEMORY_ID, **OWNER},
        tag=_MEMORY,
        response=HistoryPage,
        resource="memories",
        service="history",
        query=Owner,
        returns="results",
    ),
    # --- messages ---------------------------------------------------------------------------
    Operation(
        name="add_messages",
        method="POST",
        path="/v1/messages",
        scope="write",
        summary="Store a conversation",
        description="Store a conversation (or the next part of one) turn by turn under your own "
        "`conversation_id`: each turn kept verbatim, a searchable memory, in the session's "
        "working memory and learned from at once. An invalid turn stores none of them.",
        example={
            "user_id": USER,
            "conversation_id": CONVERSATION,
            "messages": [
                {"role": "user", "content": "I moved to Lyon last month."},
                {"role": "assistant", "content": "Noted: Lyon it is."},
            ],
        },
        tag=_MESSAGES,
        response=BatchResult,
        resource="conversations",
        service="add_messages",
        body=MessagesRequest,
        flags=(WAIT_TURNS,),
        returns="results",
        status=201,
    ),
    # --- operations -------------------------------------------------------------------------
    Operation(
        name="health",
        method="GET",
        path="/health",
        scope=None,
        summary="Liveness",
        description="The process answers; needs no key.",
        example={},
        tag=_OPS,
        response=None,
        handler="health",
    ),
    Operation(
        name="ready",
        method="GET",
        path="/ready",
        scope=None,
        summary="Readiness",
        description="The embedding model is loaded, the database answers, its schema is current "
        "and a worker is alive: 200, else 503 with each check's detail. Needs no key.",
        example={},
        tag=_OPS,
        response=None,
        handler="ready",
    ),
    Operation(
        name="metrics",
        method="GET",
        path="/metrics",
        scope=None,
        summary="Prometheus metrics",
        description="Request latency per route, queue depth, job outcomes, embedding cache hits "
        "and misses, provider and LLM fallbacks, memories stored, store outages. Answered from "
        "memory, never from the database, so a hung store cannot hang the scrape that should show "
        "it.",
        example={},
        tag=_OPS,
        response=None,
        handler="metrics",
    ),
    Operation(
        name="tenant_jobs",
        method="GET",
        path="/v1/admin/jobs",
        scope="admin",
        summary="This tenant's embedding jobs",
        description="The tenant's embedding jobs, most recently changed first, optionally of one "
        "status.",
        example={"status": "failed", "limit": 50},
        tag=_OPS,
        response=None,
        handler="tenant_jobs",
    ),
    Operation(
        name="retry_tenant_jobs",
        method="POST",
        path="/v1/admin/jobs/retry",
        scope="admin",
        summary="Retry failed jobs",
        description="Put this tenant's failed embedding jobs back in the queue; answers how many.",
        example={},
        tag=_OPS,
        response=None,
        handler="retry_tenant_jobs",
    ),
    # --- lifecycle --------------------------------------------------------------------------
    Operation(
        name="audit_log",
        method="GET",
        path="/v1/audit",
        scope="admin",
        summary="The audit log",
        description="This tenant's audit log, newest first, by user, operation and time.",
        example={"user_id": USER, "operation": "retrieve", "limit": 100},
        tag=_LIFE,
        response=AuditPage,
        resource="lifecycle",
        service="audit_log",
        query=AuditQuery,
    ),
    Operation(
        name="list_users",
        method="GET",
        path="/v1/users",
        scope="read",
        summary="This tenant's users",
        description="Everyone who holds a memory, a conversation or a fact in this tenant, with "
        "how many of each (counted by the store), most recently active first.",
        example={"limit": 100},
        tag=_LIFE,
        response=UserPage,
        resource="lifecycle",
        service="list_users",
        query=UsersQuery,
        returns="results",
    ),
    Operation(
        name="user_overview",
        method="GET",
        path="/v1/overview",
        scope="read",
        summary="One user at a glance",
        description="How many memories, conversations, turns, facts, entities and goals a user "
        "holds (each counted exactly by the store), the turns not yet in the knowledge graph, and "
        "how many memories were written on each of the last `days` days and `weeks` weeks.",
        example={**OWNER, "days": 14, "weeks": 26},
        tag=_LIFE,
        response=UserOverview,
        resource="lifecycle",
        service="user_overview",
        query=OverviewQuery,
    ),
    Operation(
        name="deletion_receipts",
        method="GET",
        path="/v1/deletions",
        scope="read",
        summary="Deletion receipts",
        description="The receipts of this tenant's deletions (one user's, if given), newest "
        "first. Each is kept in its deletion's audit row, so none are kept with "
        "`MEMVAULT_AUDIT_LEVEL=off`.",
        example={"user_id": USER, "limit": 50},
        tag=_LIFE,
        response=ReceiptPage,
        resource="lifecycle",
        service="deletion_receipts",
        query=ReceiptsQuery,
        returns="results",
    ),
    Operation(
        name="delete_with_receipt",
        method="POST",
        path="/v1/deletions",
        scope="write",
        summary="Delete a memory, with a receipt",
        description="Delete one memory (`memory_id`) from every store, or, without one, all of a "
        "user's (in one app, if given); answers the deletion receipt: what went from where.",
        example={**OWNER, "memory_id": MEMORY_ID},
        tag=_LIFE,
        response=DeletionReceipt,
        resource="lifecycle",
        service="erase",
        body=DeletionRequest,
        handler="deletions",
    ),
    Operation(
        name="delete_with_receipt",
        method="POST",
        path="/v1/deletions",
        scope="write",
        summary="Delete all of a user's memories, with a receipt",
        description="Without `memory_id`, every memory of the user (in one app, if given) and all "
        "derived from them; answers the deletion receipt.",
        example={**OWNER},
        tag=_LIFE,
        response=DeletionReceipt,
        resource="lifecycle",
        service="erase_user",
        body=DeletionRequest,
        routed=False,
    ),
    Operation(
        name="deletion_receipt",
        method="GET",
        path="/v1/deletions/{request_id}",
        scope="read",
        summary="One deletion receipt",
        description="The receipt of one deletion, by the request id it names (404 if this tenant "
        "has none).",
        example={"request_id": "3f2b1c0d9e8f4a7b6c5d4e3f2a1b0c9d"},
        tag=_LIFE,
        response=DeletionReceipt,
        resource="lifecycle",
        service="deletion_receipt",
    ),
    Operation(
        name="erase_tenant",
        method="DELETE",
        path="/v1/admin/tenant",
        scope="admin",
        summary="Erase this tenant",
        description="Erase the caller's whole tenant: memories, history, audit, API keys.",
        example={},
        tag=_LIFE,
        response=DeletionReceipt,
        handler="erase_tenant",
    ),
    Operation(
        name="shred_tenant",
        method="POST",
        path="/v1/admin/tenant/shred",
        scope="admin",
        summary="Crypto-shred this tenant",
        description="Destroy the tenant's data key, then erase it as `DELETE /v1/admin/tenant` "
        "does (409 unless per-tenant keys are on).",
        example={},
        tag=_LIFE,
        response=DeletionReceipt,
        handler="shred_tenant",
        conflict=True,
    ),
    Operation(
        name="memory_health",
        method="GET",
        path="/v1/health/memory",
        scope="read",
        summary="Memory health",
        description="What this user's memories need (duplicates, stale, expired, failed jobs), "
        "each finding with its recommended action.",
        example={**OWNER},
        tag=_LIFE,
        response=MemoryHealth,
        resource="health",
        service="memory_health",
        query=Owner,
    ),
    Operation(
        name="memory_health_action",
        method="POST",
        path="/v1/health/memory/actions",
        scope="write",
        summary="Act on a health finding",
        description="Merge, archive, delete or retry the memories of a finding, through the write "
        "path.",
        example={**OWNER, "action": "archive", "memory_ids": [MEMORY_ID]},
        tag=_LIFE,
        response=HealthActionResult,
        resource="health",
        service="health_action",
        body=HealthActionRequest,
        whole="request",
    ),
    Operation(
        name="undo_merge",
        method="POST",
        path="/v1/health/memory/merges/{merge_id}/undo",
        scope="write",
        summary="Undo a merge",
        description="Undo a `merge` health action as a whole (one cluster, or every cluster of "
        "that request), once, within `MEMVAULT_MERGE_UNDO_DAYS` (30) of it: every copy comes "
        "back as it was (same id, content, tags, metadata, dates, importance, expiry, source, "
        "history, vectors, and its links to the facts, relations and entities that still "
        "stand), and each kept memory's merged values and the links it gained go back to what "
        "they were (an update in its history). `merge_id` is the merge's answer's. A merge that "
        "is unknown, expired or another user's: 404; undone already: 409. Audited (`update`, "
        "`via: undo_merge`).",
        example={"merge_id": MEMORY_ID, **OWNER},
        tag=_LIFE,
        response=MergeUndone,
        resource="health",
        service="undo_merge",
        body=Owner,
        conflict=True,
    ),
    Operation(
        name="export_memories",
        method="GET",
        path="/v1/export",
        scope="read",
        summary="Export a user's memories",
        description="Every memory of a user with its history and vectors, in the import format.",
        example={**OWNER},
        tag=_LIFE,
        response=ExportPage,
        resource="lifecycle",
        service="export_memories",
        query=Owner,
        returns="results",
    ),
    Operation(
        name="import_memories",
        method="POST",
        path="/v1/import",
        scope="write",
        summary="Import memories",
        description="Load exported memories (ids, history and vectors kept); ids already here are "
        "skipped. Answers the counts: imported, skipped, queued for embedding.",
        example={"memories": []},
        tag=_LIFE,
        response=ImportCounts,
        resource="lifecycle",
        service="import_memories",
        body=ImportRequest,
        wire={"lines": "memories"},
        returns="root",
    ),
    # --- cognitive memory -------------------------------------------------------------------
    Operation(
        name="start_conversation",
        method="POST",
        path="/v1/conversations",
        scope="write",
        summary="Start a conversation",
        description="Start a conversation ahead of its turns (409 if the user has one by that id).",
        example={**OWNER, "conversation_id": CONVERSATION, "title": "Moving house"},
        tag=_COG,
        response=Conversation,
        resource="conversations",
        service="start_conversation",
        body=ConversationStart,
        status=201,
        conflict=True,
    ),
    Operation(
        name="list_conversations",
        method="GET",
        path="/v1/conversations",
        scope="read",
        summary="List conversations",
        description="A user's conversations, most recent first (archived ones on request).",
        example={**OWNER, "limit": 50},
        tag=_COG,
        response=ConversationPage,
        resource="conversations",
        service="list_conversations",
        query=ConversationParams,
        returns="results",
    ),
    Operation(
        name="get_conversation",
        method="GET",
        path="/v1/conversations/{conversation_id}",
        scope="read",
        summary="Read a conversation",
        description="A conversation with its turns, verbatim and in order.",
        example={"conversation_id": CONVERSATION, **OWNER},
        tag=_COG,
        response=Conversation,
        resource="conversations",
        service="get_conversation",
        query=OwnerParams,
    ),
    Operation(
        name="add_turns",
        method="POST",
        path="/v1/conversations/{conversation_id}/turns",
        scope="write",
        summary="Add turns to a conversation (POST /v1/messages does the same)",
        description="Append turns to a conversation; `POST /v1/messages` does the same and answers "
        "the turns' memories.",
        example={
            "conversation_id": CONVERSATION,
            **OWNER,
            "turns": [{"role": "user", "content": "And I started a new job."}],
        },
        tag=_COG,
        response=TurnPage,
        resource="conversations",
        service="add_turns",
        body=TurnsRequest,
        flags=(WAIT_TURNS,),
        returns="results",
        status=201,
        deprecated=True,
    ),
    Operation(
        name="delete_conversation",
        method="DELETE",
        path="/v1/conversations/{conversation_id}",
        scope="write",
        summary="Delete a conversation",
        description="Delete a conversation from every store: its turns and all derived from them, "
        "its tool calls, its session's working memory and the conversation; answers the receipt.",
        example={"conversation_id": CONVERSATION, **OWNER},
        tag=_COG,
        response=DeletionReceipt,
        resource="lifecycle",
        service="erase_conversation",
        query=OwnerParams,
    ),
    Operation(
        name="set_context",
        method="PUT",
        path="/v1/working/{conversation_id}/context/{key}",
        scope="write",
        summary="Set a working-memory value",
        description="Keep a value in the session's working memory under `key`, for `ttl_seconds` "
        "if given (204).",
        example={"conversation_id": CONVERSATION, "key": "destination", **OWNER, "value": "Lyon"},
        tag=_COG,
        response=None,
        resource="working",
        service="set_context",
        body=WorkingValue,
        status=204,
    ),
    Operation(
        name="get_context_value",
        method="GET",
        path="/v1/working/{conversation_id}/context/{key}",
        scope="read",
        summary="Read a working-memory value",
        description="The value kept under `key` in the session's working memory (null when none).",
        example={"conversation_id": CONVERSATION, "key": "destination", **OWNER},
        tag=_COG,
        response=ContextValue,
        resource="working",
        service="get_context_value",
        query=OwnerInChannel,
        returns="value",
    ),
    Operation(
        name="delete_context_value",
        method="DELETE",
        path="/v1/working/{conversation_id}/context/{key}",
        scope="write",
        summary="Delete a working-memory value",
        description="Drop one key from the session's working memory (204).",
        example={"conversation_id": CONVERSATION, "key": "destination", **OWNER},
        tag=_COG,
        response=None,
        resource="working",
        service="delete_context_value",
        query=OwnerInChannel,
        status=204,
    ),
    Operation(
        name="get_context",
        method="GET",
        path="/v1/working/{conversation_id}",
        scope="read",
        summary="A session's working memory",
        description="Everything the session keeps in working memory: values, thoughts, the active "
        "goal.",
        example={"conversation_id": CONVERSATION, **OWNER},
        tag=_COG,
        response=WorkingContext,
        resource="working",
        service="get_context",
        query=OwnerInChannel,
    ),
    Operation(
        name="clear_session",
        method="DELETE",
        path="/v1/working/{conversation_id}",
        scope="write",
        summary="Clear a session's working memory",
        description="Drop the session's working memory; answers how many entries went.",
        example={"conversation_id": CONVERSATION, **OWNER},
        tag=_COG,
        response=Cleared,
        resource="working",
        service="clear_session",
        query=OwnerInChannel,
        returns="deleted",
    ),
    Operation(
        name="record_tool_use",
        method="POST",
        path="/v1/tools/invocations",
        scope="write",
        summary="Record a tool call",
        description="Log a tool call and how it went (PII removed from its input and output), so "
        "later tasks can learn which tools work.",
        example={**OWNER, "tool_name": "web_search", "success": True, "latency_ms": 420},
        tag=_COG,
        response=ToolInvocation,
        resource="strategies",
        service="record_tool_use",
        body=ToolUse,
        status=201,
        mcp=Tool(
            "record_tool_use",
            "Log a tool call and how it went, so later tasks can learn which tools work.",
        ),
    ),
    Operation(
        name="tool_stats",
        method="GET",
        path="/v1/tools/stats",
        scope="read",
        summary="Tool statistics",
        description="Per tool: calls, success rate and latency, from the recorded tool calls.",
        example={**OWNER},
        tag=_COG,
        response=ToolStatsPage,
        resource="strategies",
        service="tool_stats",
        query=StatsParams,
        returns="results",
    ),
    Operation(
        name="learn_strategy",
        method="POST",
        path="/v1/strategies",
        scope="write",
        summary="Learn a strategy",
        description="Keep a way of doing a task (a description and a tool sequence) to find again "
        "later.",
        example={
            **OWNER,
            "description": "search the docs before answering",
            "tool_sequence": ["search"],
        },
        tag=_COG,
        response=Strategy,
        resource="strategies",
        service="learn_strategy",
        body=StrategyInput,
        status=201,
    ),
    Operation(
        name="find_strategies",
        method="GET",
        path="/v1/strategies",
        scope="read",
        summary="Find strategies for a task",
        description="The strategies most like `task`, best first, weighed by how often they "
        "worked.",
        example={**OWNER, "task": "answer a question about the docs", "limit": 5},
        tag=_COG,
        response=StrategyPage,
        resource="strategies",
        service="find_strategies",
        query=StrategyParams,
        returns="results",
    ),
    Operation(
        name="reinforce_strategy",
        method="POST",
        path="/v1/strategies/{strategy_id}/reinforce",
        scope="write",
        summary="Reinforce a strategy",
        description="Record that a strategy worked (or did not) this time.",
        example={"strategy_id": STRATEGY_ID, **OWNER, "success": True},
        tag=_COG,
        response=Strategy,
        resource="strategies",
        service="reinforce_strategy",
        body=Reinforcement,
    ),
    Operation(
        name="add_goal",
        method="POST",
        path="/v1/goals",
        scope="write",
        summary="Add a goal",
        description="Record a goal the user is working towards (a step of a larger one with "
        "`parent_id`, blocked by others with `blocked_by`).",
        example={**OWNER, "description": "Find a flat in Lyon", "priority": 8},
        tag=_COG,
        response=Goal,
        resource="goals",
        service="add_goal",
        body=GoalInput,
        status=201,
        mcp=Tool(
            "add_goal",
            "Record a goal the user is working towards (a step of a larger one with parent_id).",
        ),
    ),
    Operation(
        name="list_goals",
        method="GET",
        path="/v1/goals",
        scope="read",
        summary="List goals",
        description="A user's goals, by status and channel.",
        example={**OWNER, "status": "active"},
        tag=_COG,
        response=GoalPage,
        resource="goals",
        service="list_goals",
        query=GoalParams,
        returns="results",
    ),
    Operation(
        name="get_goal",
        method="GET",
        path="/v1/goals/{goal_id}",
        scope="read",
        summary="Read a goal",
        description="One goal with its status, result and what blocks it.",
        example={"goal_id": GOAL_ID, **OWNER},
        tag=_COG,
        response=Goal,
        resource="goals",
        service="get_goal",
        query=OwnerParams,
    ),
    Operation(
        name="complete_goal",
        method="POST",
        path="/v1/goals/{goal_id}/complete",
        scope="write",
        summary="Complete a goal",
        description="Mark a goal done (or abandoned); goals waiting on it are unblocked.",
        example={"goal_id": GOAL_ID, **OWNER, "result": "Signed a lease"},
        tag=_COG,
        response=Goal,
        resource="goals",
        service="complete_goal",
        body=GoalCompletion,
        mcp=Tool(
            "complete_goal",
            "Mark a goal done (or abandoned); goals waiting on it are unblocked.",
        ),
    ),
    Operation(
        name="get_profile",
        method="GET",
        path="/v1/profile",
        scope="read",
        summary="Read the profile",
        description="The user's profile: preferences, expertise, communication style.",
        example={**OWNER},
        tag=_COG,
        response=Profile,
        resource="profile",
        service="get_profile",
        query=OwnerInChannel,
    ),
    Operation(
        name="update_profile",
        method="PATCH",
        path="/v1/profile",
        scope="write",
        summary="Update the profile",
        description="Change the fields given; the others stay as they are.",
        example={**OWNER, "communication_style": "brief"},
        tag=_COG,
        response=Profile,
        resource="profile",
        service="update_profile",
        body=ProfileUpdate,
        fields="set",
    ),
    Operation(
        name="remember",
        method="POST",
        path="/v1/remember",
        scope="read",
        summary="Recall everything relevant",
        description="One bundle for the task at hand: the profile, active goals, the session's "
        "context, relevant memories, past turns and strategies that worked, within a token budget; "
        "`prompt` is the block to put before the question.",
        example={**OWNER, "query": "plan the move", "budget_tokens": 800},
        tag=_COG,
        response=RememberAnswer,
        resource="recall",
        service="remember",
        body=RememberRequest,
        fields="not_none",
        shape=_remember_answer,
        mcp=Tool(
            "remember",
            "Recall everything relevant before you answer, as one block to read: the user's "
            "profile, their active goals, this session's context, past conversation turns and "
            "strategies that worked, within a token budget.",
            read_only=True,
        ),
    ),
    # --- the knowledge graph ----------------------------------------------------------------
    Operation(
        name="add_fact",
        method="POST",
        path="/v1/facts",
        scope="write",
        summary="State a fact",
        description="A fact stated directly (no extraction): a functional predicate supersedes the "
        "subject's current value per the contradiction policy.",
        example={**OWNER, "subject": "@user", "predicate": "lives_in", "object": "Lyon"},
        tag=_GRAPH,
        response=Fact,
        resource="graph",
        service="add_fact",
        body=FactInput,
        status=201,
        mcp=Tool(
            "remember_fact",
            "Record one structured fact about the user's world (give object or value).\n\n"
            "A new value of a one-at-a-time relation (lives_in, works_for, …) replaces the "
            "current one; the old value stays in the history.",
        ),
    ),
    Operation(
        name="list_facts",
        method="GET",
        path="/v1/facts",
        scope="read",
        summary="List facts",
        description="What is true now as currently known; `valid_at` / `known_at` ask about "
        "another time, `include_superseded` shows the history.",
        example={**OWNER, "entity": "@user"},
        tag=_GRAPH,
        response=FactList,
        resource="graph",
        service="facts",
        query=FactsQuery,
        returns="results",
    ),
    Operation(
        name="fact_reviews",
        method="GET",
        path="/v1/facts/reviews",
        scope="read",
        summary="Facts to review",
        description="Facts the contradiction policy left for a person to decide.",
        example={**OWNER},
        tag=_GRAPH,
        response=ReviewList,
        resource="graph",
        service="fact_reviews",
        query=ReviewsQuery,
        returns="results",
    ),
    Operation(
        name="resolve_fact_review",
        method="POST",
        path="/v1/facts/reviews/{review_id}/resolve",
        scope="write",
        summary="Resolve a contradiction",
        description="Decide a review: keep the newer `fact` (it replaces the other), keep the "
        "fact it `conflicts_with` (the newer one never held), or keep `both` (no contradiction). "
        "Nothing is deleted: the replaced fact stays in the history, superseded, and other "
        "reviews naming it close too.",
        example={"review_id": MEMORY_ID, **OWNER, "keep": "fact"},
        tag=_GRAPH,
        response=ResolvedReview,
        resource="graph",
        service="resolve_fact_review",
        body=ReviewDecision,
    ),
    Operation(
        name="promote_fact",
        method="POST",
        path="/v1/facts/{fact_id}/promote",
        scope="write",
        summary="Promote a fact to the user's global channel",
        description="Copy a project-channel fact to the user's `_global` channel, linked "
        "PROMOTED_FROM; promoting it again answers the same copy.",
        example={"fact_id": MEMORY_ID, **OWNER, "reason": "true everywhere"},
        tag=_GRAPH,
        response=Fact,
        resource="graph",
        service="promote",
        body=PromoteRequest,
    ),
    Operation(
        name="retire_fact",
        method="POST",
        path="/v1/facts/{fact_id}/retire",
        scope="write",
        summary="Retire a fact",
        description="A current fact stops holding now (`never_held`: it was never true) and "
        "leaves the current view; nothing is deleted, so the as-of views still show it. Audited "
        "(`update`, `via: retire_fact`). A fact already replaced or retired: 409.",
        example={"fact_id": MEMORY_ID, **OWNER},
        tag=_GRAPH,
        response=Fact,
        resource="graph",
        service="retire_fact",
        body=RetireRequest,
        conflict=True,
    ),
    Operation(
        name="correct_fact",
        method="POST",
        path="/v1/facts/{fact_id}/correct",
        scope="write",
        summary="Correct a fact",
        description="Replace a current fact's object or value: a new fact of the same subject and "
        "predicate holds from the old one's start, and the old one never held and is kept in "
        "the history, `superseded_by` the new. Answers the new fact. Audited (`update`, "
        "`via: correct_fact`). A fact already replaced or retired: 409.",
        example={"fact_id": MEMORY_ID, **OWNER, "object": "Unbabel"},
        tag=_GRAPH,
        response=Fact,
        resource="graph",
        service="correct_fact",
        body=CorrectionRequest,
        conflict=True,
    ),
    Operation(
        name="restore_fact",
        method="POST",
        path="/v1/facts/{fact_id}/restore",
        scope="write",
        summary="Undo a retire or a correction",
        description="Undo a retire or a correction of this fact: it holds again over the interval "
        "it had and rejoins the current view; a correction's replacement never held (kept in the "
        "history, `superseded_by` this fact). A change made in between is never overwritten: if "
        "the replacement was itself retired, replaced or corrected, or a newer fact of the same "
        "subject and predicate came in after the change, 409 (undo that first); a fact not "
        "retired or corrected by a person, or already restored: 409. Audited (`update`, `via: "
        "restore_fact`).",
        example={"fact_id": MEMORY_ID, **OWNER},
        tag=_GRAPH,
        response=Fact,
        resource="graph",
        service="restore_fact",
        body=RestoreRequest,
        conflict=True,
    ),
    Operation(
        name="list_entities",
        method="GET",
        path="/v1/entities",
        scope="read",
        summary="List entities",
        description="The people, places, organisations and things the user's facts name, by name "
        "or type.",
        example={**OWNER, "q": "Lyon"},
        tag=_GRAPH,
        response=EntityList,
        resource="graph",
        service="entities",
        query=EntitiesQuery,
        returns="results",
    ),
    Operation(
        name="get_entity",
        method="GET",
        path="/v1/entities/{entity_id}",
        scope="read",
        summary="Read an entity",
        description="An entity with its aliases and current facts.",
        example={"entity_id": ENTITY_ID, **OWNER},
        tag=_GRAPH,
        response=EntityDetail,
        resource="graph",
        service="entity",
        query=Owner,
        mcp=Tool(
            "about_entity",
            "What is known about someone or something: its current facts and what it relates to.",
            read_only=True,
        ),
    ),
    Operation(
        name="entity_graph",
        method="GET",
        path="/v1/entities/{entity_id}/graph",
        scope="read",
        summary="An entity's neighbourhood",
        description="Nodes within `depth` hops and the edges among them (relations, and facts "
        "whose object is an entity), now or as of `valid_at` / `known_at`. At most `limit` nodes, "
        "the nearest first (default: the server's `graph_max_nodes`, 200); `reached_nodes` says "
        "how many there were, so a cut shows and a higher `limit` gets the rest.",
        example={"entity_id": ENTITY_ID, **OWNER, "depth": 2},
        tag=_GRAPH,
        response=GraphView,
        resource="graph",
        service="entity_graph",
        query=GraphQuery,
    ),
    Operation(
        name="user_graph",
        method="GET",
        path="/v1/graph",
        scope="read",
        summary="A user's whole graph",
        description="Every entity of the user (the most salient first, at most `limit`; default "
        "the server's `graph_max_nodes`) and the edges among them, now or as of `valid_at` / "
        "`known_at`; `reached_nodes` says how many entities there were.",
        example={**OWNER, "limit": 500},
        tag=_GRAPH,
        response=GraphView,
        resource="graph",
        service="user_graph",
        query=UserGraphQuery,
    ),
    Operation(
        name="merge_entity",
        method="POST",
        path="/v1/entities/{entity_id}/merge",
        scope="write",
        summary="Merge two entities",
        description="Merge this entity into `into` (recorded: `…/split` undoes it).",
        example={"entity_id": ENTITY_ID, **OWNER, "into": GOAL_ID},
        tag=_GRAPH,
        response=EntityDetail,
        resource="graph",
        service="merge_entities",
        body=MergeRequest,
    ),
    Operation(
        name="split_entity",
        method="POST",
        path="/v1/entities/{entity_id}/split",
        scope="write",
        summary="Undo a merge",
        description="Undo this entity's last merge.",
        example={"entity_id": ENTITY_ID, **OWNER},
        tag=_GRAPH,
        response=EntityDetail,
        resource="graph",
        service="split_entity",
        query=Owner,
    ),
    # --- webhooks ---------------------------------------------------------------------------
    Operation(
        name="create_webhook",
        method="POST",
        path="/v1/webhooks",
        scope="admin",
        summary="Subscribe a URL to events",
        description="Subscribe an https (or http) URL to this tenant's events: all types or those "
        "listed, optionally only one app's or one user's. Answers the subscription with its "
        "signing secret, shown this once (`whsec_…`: verify each request's `webhook-signature` "
        "with it). A URL whose host is not a public address is refused (422) unless the operator "
        "allows it.",
        example={
            "url": "https://crm.example.com/hooks/memvault",
            "event_types": ["memory.created", "user.erased"],
        },
        tag=_HOOKS,
        response=WebhookCreated,
        resource="webhooks",
        service="create_webhook",
        body=WebhookInput,
        status=201,
    ),
    Operation(
        name="list_webhooks",
        method="GET",
        path="/v1/webhooks",
        scope="admin",
        summary="List webhooks",
        description="This tenant's webhook subscriptions (never their secrets).",
        example={},
        tag=_HOOKS,
        response=WebhookList,
        resource="webhooks",
        service="list_webhooks",
        returns="results",
    ),
    Operation(
        name="get_webhook",
        method="GET",
        path="/v1/webhooks/{webhook_id}",
        scope="admin",
        summary="Read a webhook",
        description="One subscription (never its secret).",
        example={"webhook_id": WEBHOOK_ID},
        tag=_HOOKS,
        response=Webhook,
        resource="webhooks",
        service="get_webhook",
    ),
    Operation(
        name="update_webhook",
        method="PATCH",
        path="/v1/webhooks/{webhook_id}",
        scope="admin",
        summary="Change a webhook",
        description="Change the URL, the event types, the filters, the content flag or pause it "
        "(`enabled: false`: its events wait, and go out in order once it is enabled again).",
        example={"webhook_id": WEBHOOK_ID, "enabled": False},
        tag=_HOOKS,
        response=Webhook,
        resource="webhooks",
        service="update_webhook",
        body=WebhookUpdate,
        fields="set",
    ),
    Operation(
        name="delete_webhook",
        method="DELETE",
        path="/v1/webhooks/{webhook_id}",
        scope="admin",
        summary="Delete a webhook",
        description="Unsubscribe: the subscription and its deliveries go.",
        example={"webhook_id": WEBHOOK_ID},
        tag=_HOOKS,
        response=None,
        resource="webhooks",
        service="delete_webhook",
        status=204,
    ),
    Operation(
        name="rotate_webhook_secret",
        method="POST",
        path="/v1/webhooks/{webhook_id}/secret",
        scope="admin",
        summary="Rotate a webhook's secret",
        description="A new signing secret, answered this once; requests are signed with it from "
        "now on.",
        example={"webhook_id": WEBHOOK_ID},
        tag=_HOOKS,
        response=WebhookCreated,
        resource="webhooks",
        service="rotate_webhook_secret",
    ),
    Operation(
        name="webhook_deliveries",
        method="GET",
        path="/v1/webhooks/{webhook_id}/deliveries",
        scope="admin",
        summary="A webhook's deliveries",
        description="Each event sent or to send to this subscription, newest first: pending (with "
        "its attempts and next try), delivered, or dead (retries exhausted: replay it).",
        example={"webhook_id": WEBHOOK_ID, "state": "dead", "limit": 50},
        tag=_HOOKS,
        response=DeliveryPage,
        resource="webhooks",
        service="webhook_deliveries",
        query=DeliveryParams,
        returns="results",
    ),
    Operation(
        name="replay_webhook",
        method="POST",
        path="/v1/webhooks/{webhook_id}/replay",
        scope="admin",
        summary="Replay deliveries",
        description="Send again one delivery (`delivery_id`, whatever its state) or, without one, "
        "every dead-lettered delivery of this subscription; answers how many were queued.",
        example={"webhook_id": WEBHOOK_ID},
        tag=_HOOKS,
        response=Replayed,
        resource="webhooks",
        service="replay_webhook",
        body=ReplayRequest,
    ),
)


# The library's verbs no HTTP route offers, each (name, resource) as an operation's
# ``service`` and ``resource``: ``AsyncMemory`` has them by their flat names too.
LIBRARY_ONLY: tuple[tuple[str, str], ...] = (
    ("archive_conversation", "conversations"),
    ("recent_turns", "conversations"),
    ("search_turns", "conversations"),
    ("push_thought", "working"),
    ("pop_thought", "working"),
    ("set_active_goal", "working"),
    ("update_profile_from_facts", "profile"),
    ("export_graph", "graph"),
    ("flush_audit", "lifecycle"),
)


def service_calls() -> tuple[tuple[str, str], ...]:
    """Every library verb as (its flat name on ``AsyncMemory``, the resource it is a method
    of): the operations' and the library's own."""
    declared = tuple(
        (op.service, op.resource)
        for op in OPERATIONS
        if op.service is not None and op.resource is not None
    )
    return declared + LIBRARY_ONLY


def client_operations() -> tuple[Operation, ...]:
    """The operations the HTTP client has a method for: those with a service method."""
    return tuple(op for op in OPERATIONS if op.service is not None)


__all__ = [
    "LIBRARY_ONLY",
    "OPERATIONS",
    "Flag",
    "Operation",
    "Tool",
    "client_operations",
    "service_calls",
]
