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

from memvault.api.wire import (
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
    RetireRequest,
    ReviewDecision,
    ReviewsQuery,
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
    ReceiptPage,
    ReceiptsQuery,
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


@dataclass(frozen=True)
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
        "add_memory", "POST", "/v1/memories", "write",
        "Store a memory",
        "Store one memory through the write pipeline (PII, embedding, dedup, enrichment). A "
        "text that fits the model's window is searchable when this answers; a longer one, or "
        "any with `async=true`, is stored at once and finished by the worker (`wait=true` waits "
        "for that, up to `MEMVAULT_WAIT_TIMEOUT_S`).",
        {"wait": True, "user_id": USER, "content": "Prefers aisle seats on long flights",
         "tags": ["travel"]},
        _MEMORY, AddResult,
        resource="memories", service="add", body=MemoryInput, flags=(WAIT, BACKGROUND),
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
        "add_memories", "POST", "/v1/memories/batch", "write",
        "Store a batch of memories",
        "Bulk import, worked in bulk: one embedding call and one transaction for the whole "
        "batch; an invalid item fails the batch (nothing stored) and the error names its "
        "index. Results come in the order given. A batch the request deadline would cut short "
        "is answered in time with every item stored: what the deadline left over says "
        "`dedup.action: pending` and the worker finishes it.",
        {"memories": [{"user_id": USER, "content": "Lives in Lyon"},
                      {"user_id": USER, "content": "Allergic to peanuts"}]},
        _MEMORY, BatchResult,
        resource="memories", service="add_many", body=BatchRequest, flags=(WAIT, BACKGROUND),
        wire={"items": "memories"}, returns="results", status=201,
    ),
    Operation(
        "search_memories", "POST", "/v1/memories/search", "read",
        "Search a user's memories",
        "The memories most relevant to `query`: by meaning and by keywords (BM25 on the blind "
        "index), fused (`recipe=hybrid`), or by one of them alone, with the list filters. A "
        "time the query names is resolved against `reference_time`; `diagnostics` says what "
        "ran and how long it took.",
        {"user_id": USER, "query": "where does she like to sit on a plane?", "limit": 5},
        _MEMORY, SearchResult, resource="memories", service="search", body=SearchRequest,
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
        "list_memories", "GET", "/v1/memories", "read",
        "List a user's memories",
        "One page of memories, newest first, with every filter of `MemoryQuery`; pass "
        "`next_cursor` back as `cursor` for the next page.",
        {"user_id": USER, "tags": ["travel"], "limit": 20},
        _MEMORY, MemoryPage, resource="memories", service="list", query=MemoryQuery,
        mcp=Tool(
            "list_memories",
            "List the user's memories, newest first, a page at a time.\n\nTo answer a "
            "question, prefer search_memories; list to review or tidy what is stored.",
            read_only=True,
        ),
    ),
    Operation(
        "count_memories", "GET", "/v1/memories/count", "read",
        "Count a user's memories",
        "How many of a user's memories match the filters (every filter of `GET /v1/memories`), "
        "without reading one of them.",
        {"user_id": USER, "tags": ["travel"]},
        _MEMORY, MemoryCount,
        resource="memories", service="count", query=MemoryFilter, returns="count",
    ),
    Operation(
        "delete_all_memories", "DELETE", "/v1/memories", "write",
        "Delete all of a user's memories",
        "Delete every memory of a user (in one app, if given) and every graph row of theirs; "
        "answers how many memories went (`POST /v1/deletions` answers the receipt).",
        {"user_id": USER},
        _MEMORY, DeleteResult,
        resource="memories", service="delete_all", query=MemoryQuery, returns="deleted",
    ),
    Operation(
        "memory_feedback", "POST", "/v1/memories/feedback", "write",
        "Say which memories helped",
        "Reinforce the memories an answer used: each named memory of this user ranks a little "
        "higher in later searches (`reinforcement` in the score breakdown). Being returned by a "
        "search or `remember()` is not use, and never moves a later ranking; only this does. "
        "Ids that are not this user's memories are not counted.",
        {"user_id": USER, "memory_ids": [MEMORY_ID]},
        _MEMORY, FeedbackResult,
        resource="memories", service="feedback", body=Feedback, returns="reinforced",
    ),
    Operation(
        "delete_memories", "POST", "/v1/memories/delete", "write",
        "Delete several memories, with one receipt",
        "Delete the named memories of this user and everything derived from them, in one "
        "transaction, and answer one deletion receipt (listed by `GET /v1/deletions`). Ids that "
        "are not this user's are left alone; none of them: 404.",
        {"user_id": USER, "memory_ids": [MEMORY_ID]},
        _MEMORY, DeletionReceipt,
        resource="lifecycle", service="erase_memories", body=BulkDeletion,
    ),
    Operation(
        "get_memory", "GET", "/v1/memories/{memory_id}", "read",
        "Read one memory",
        "One memory of this user, decrypted; 404 for another user's or tenant's id.",
        {"memory_id": MEMORY_ID, **OWNER},
        _MEMORY, MemoryRecord, resource="memories", service="get", query=Owner,
        mcp=Tool("get_memory", "Read one memory by its id.", read_only=True),
    ),
    Operation(
        "update_memory", "PATCH", "/v1/memories/{memory_id}", "write",
        "Correct a memory",
        "Replace the content, merge metadata (a key set to null is removed), replace the tags, "
        "set the importance (1-10) and/or move the expiry. New content "
        "is enriched again and queued for re-embedding; an edit that changes nothing records "
        "nothing; a conversation turn's text cannot be edited (409).",
        {"memory_id": MEMORY_ID, **OWNER, "content": "Prefers window seats now"},
        _MEMORY, MemoryRecord,
        resource="memories", service="update", query=Owner, body=MemoryUpdate, conflict=True,
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
        "delete_memory", "DELETE", "/v1/memories/{memory_id}", "write",
        "Delete a memory",
        "Delete a memory and everything derived from it (204; `POST /v1/deletions` answers the "
        "receipt).",
        {"memory_id": MEMORY_ID, **OWNER},
        _MEMORY, None, resource="memories", service="delete", query=Owner, status=204,
        mcp=Tool(
            "delete_memory",
            "Forget one memory for good. Use it when the user asks you to forget something.",
            destructive=True,
        ),
    ),
    Operation(
        "memory_history", "GET", "/v1/memories/{memory_id}/history", "read",
        "A memory's history",
        "Every ADD, UPDATE and DELETE of a memory with old and new content, who and when, "
        "oldest first; kept after deletion.",
        {"memory_id": MEMORY_ID, **OWNER},
        _MEMORY, HistoryPage,
        resource="memories", service="history", query=Owner, returns="results",
    ),
    # --- messages ---------------------------------------------------------------------------
    Operation(
        "add_messages", "POST", "/v1/messages", "write",
        "Store a conversation",
        "Store a conversation (or the next part of one) turn by turn under your own "
        "`conversation_id`: each turn kept verbatim, a searchable memory, in the session's "
        "working memory and learned from at once. An invalid turn stores none of them.",
        {"user_id": USER, "conversation_id": CONVERSATION,
         "messages": [{"role": "user", "content": "I moved to Lyon last month."},
                      {"role": "assistant", "content": "Noted: Lyon it is."}]},
        _MESSAGES, BatchResult,
        resource="conversations", service="add_messages", body=MessagesRequest,
        flags=(WAIT_TURNS,), returns="results", status=201,
    ),
    # --- operations -------------------------------------------------------------------------
    Operation(
        "health", "GET", "/health", None,
        "Liveness",
        "The process answers; needs no key.",
        {},
        _OPS, None, handler="health",
    ),
    Operation(
        "ready", "GET", "/ready", None,
        "Readiness",
        "The embedding model is loaded, the database answers, its schema is current and a "
        "worker is alive: 200, else 503 with each check's detail. Needs no key.",
        {},
        _OPS, None, handler="ready",
    ),
    Operation(
        "metrics", "GET", "/metrics", None,
        "Prometheus metrics",
        "Request latency per route, queue depth, job outcomes, embedding cache hits and misses, "
        "provider and LLM fallbacks, memories stored, store outages. Answered from memory, "
        "never from the database, so a hung store cannot hang the scrape that should show it.",
        {},
        _OPS, None, handler="metrics",
    ),
    Operation(
        "tenant_jobs", "GET", "/v1/admin/jobs", "admin",
        "This tenant's embedding jobs",
        "The tenant's embedding jobs, most recently changed first, optionally of one status.",
        {"status": "failed", "limit": 50},
        _OPS, None, handler="tenant_jobs",
    ),
    Operation(
        "retry_tenant_jobs", "POST", "/v1/admin/jobs/retry", "admin",
        "Retry failed jobs",
        "Put this tenant's failed embedding jobs back in the queue; answers how many.",
        {},
        _OPS, None, handler="retry_tenant_jobs",
    ),
    # --- lifecycle --------------------------------------------------------------------------
    Operation(
        "audit_log", "GET", "/v1/audit", "admin",
        "The audit log",
        "This tenant's audit log, newest first, by user, operation and time.",
        {"user_id": USER, "operation": "retrieve", "limit": 100},
        _LIFE, AuditPage, resource="lifecycle", service="audit_log", query=AuditQuery,
    ),
    Operation(
        "list_users", "GET", "/v1/users", "read",
        "This tenant's users",
        "Everyone who holds a memory, a conversation or a fact in this tenant, with how many of "
        "each (counted by the store), most recently active first.",
        {"limit": 100},
        _LIFE, UserPage, resource="lifecycle", service="list_users", query=UsersQuery,
        returns="results",
    ),
    Operation(
        "deletion_receipts", "GET", "/v1/deletions", "read",
        "Deletion receipts",
        "The receipts of this tenant's deletions (one user's, if given), newest first. Each is "
        "kept in its deletion's audit row, so none are kept with `MEMVAULT_AUDIT_LEVEL=off`.",
        {"user_id": USER, "limit": 50},
        _LIFE, ReceiptPage, resource="lifecycle", service="deletion_receipts",
        query=ReceiptsQuery, returns="results",
    ),
    Operation(
        "delete_with_receipt", "POST", "/v1/deletions", "write",
        "Delete a memory, with a receipt",
        "Delete one memory (`memory_id`) from every store, or, without one, all of a user's (in "
        "one app, if given); answers the deletion receipt: what went from where.",
        {**OWNER, "memory_id": MEMORY_ID},
        _LIFE, DeletionReceipt,
        resource="lifecycle", service="erase", body=DeletionRequest, handler="deletions",
    ),
    Operation(
        "delete_with_receipt", "POST", "/v1/deletions", "write",
        "Delete all of a user's memories, with a receipt",
        "Without `memory_id`, every memory of the user (in one app, if given) and all derived "
        "from them; answers the deletion receipt.",
        {**OWNER},
        _LIFE, DeletionReceipt,
        resource="lifecycle", service="erase_user", body=DeletionRequest, routed=False,
    ),
    Operation(
        "deletion_receipt", "GET", "/v1/deletions/{request_id}", "read",
        "One deletion receipt",
        "The receipt of one deletion, by the request id it names (404 if this tenant has none).",
        {"request_id": "3f2b1c0d9e8f4a7b6c5d4e3f2a1b0c9d"},
        _LIFE, DeletionReceipt, resource="lifecycle", service="deletion_receipt",
    ),
    Operation(
        "erase_tenant", "DELETE", "/v1/admin/tenant", "admin",
        "Erase this tenant",
        "Erase the caller's whole tenant: memories, history, audit, API keys.",
        {},
        _LIFE, DeletionReceipt, handler="erase_tenant",
    ),
    Operation(
        "shred_tenant", "POST", "/v1/admin/tenant/shred", "admin",
        "Crypto-shred this tenant",
        "Destroy the tenant's data key, then erase it as `DELETE /v1/admin/tenant` does (409 "
        "unless per-tenant keys are on).",
        {},
        _LIFE, DeletionReceipt, handler="shred_tenant", conflict=True,
    ),
    Operation(
        "memory_health", "GET", "/v1/health/memory", "read",
        "Memory health",
        "What this user's memories need (duplicates, stale, expired, failed jobs), each "
        "finding with its recommended action.",
        {**OWNER},
        _LIFE, MemoryHealth, resource="health", service="memory_health", query=Owner,
    ),
    Operation(
        "memory_health_action", "POST", "/v1/health/memory/actions", "write",
        "Act on a health finding",
        "Merge, archive, delete or retry the memories of a finding, through the write path.",
        {**OWNER, "action": "archive", "memory_ids": [MEMORY_ID]},
        _LIFE, HealthActionResult,
        resource="health", service="health_action", body=HealthActionRequest,
        whole="request",
    ),
    Operation(
        "export_memories", "GET", "/v1/export", "read",
        "Export a user's memories",
        "Every memory of a user with its history and vectors, in the import format.",
        {**OWNER},
        _LIFE, ExportPage,
        resource="lifecycle", service="export_memories", query=Owner, returns="results",
    ),
    Operation(
        "import_memories", "POST", "/v1/import", "write",
        "Import memories",
        "Load exported memories (ids, history and vectors kept); ids already here are skipped. "
        "Answers the counts: imported, skipped, queued for embedding.",
        {"memories": []},
        _LIFE, ImportCounts, resource="lifecycle", service="import_memories", body=ImportRequest,
        wire={"lines": "memories"}, returns="root",
    ),
    # --- cognitive memory -------------------------------------------------------------------
    Operation(
        "start_conversation", "POST", "/v1/conversations", "write",
        "Start a conversation",
        "Start a conversation ahead of its turns (409 if the user has one by that id).",
        {**OWNER, "conversation_id": CONVERSATION, "title": "Moving house"},
        _COG, Conversation,
        resource="conversations", service="start_conversation", body=ConversationStart, status=201,
        conflict=True,
    ),
    Operation(
        "list_conversations", "GET", "/v1/conversations", "read",
        "List conversations",
        "A user's conversations, most recent first (archived ones on request).",
        {**OWNER, "limit": 50},
        _COG, ConversationPage,
        resource="conversations", service="list_conversations", query=ConversationParams,
        returns="results",
    ),
    Operation(
        "get_conversation", "GET", "/v1/conversations/{conversation_id}", "read",
        "Read a conversation",
        "A conversation with its turns, verbatim and in order.",
        {"conversation_id": CONVERSATION, **OWNER},
        _COG, Conversation, resource="conversations", service="get_conversation", query=OwnerParams,
    ),
    Operation(
        "add_turns", "POST", "/v1/conversations/{conversation_id}/turns", "write",
        "Add turns to a conversation (POST /v1/messages does the same)",
        "Append turns to a conversation; `POST /v1/messages` does the same and answers the "
        "turns' memories.",
        {"conversation_id": CONVERSATION, **OWNER,
         "turns": [{"role": "user", "content": "And I started a new job."}]},
        _COG, TurnPage,
        resource="conversations", service="add_turns", body=TurnsRequest, flags=(WAIT_TURNS,),
        returns="results", status=201, deprecated=True,
    ),
    Operation(
        "delete_conversation", "DELETE", "/v1/conversations/{conversation_id}", "write",
        "Delete a conversation",
        "Delete a conversation from every store: its turns and all derived from them, its tool "
        "calls, its session's working memory and the conversation; answers the receipt.",
        {"conversation_id": CONVERSATION, **OWNER},
        _COG, DeletionReceipt,
        resource="lifecycle", service="erase_conversation", query=OwnerParams,
    ),
    Operation(
        "set_context", "PUT", "/v1/working/{conversation_id}/context/{key}", "write",
        "Set a working-memory value",
        "Keep a value in the session's working memory under `key`, for `ttl_seconds` if given "
        "(204).",
        {"conversation_id": CONVERSATION, "key": "destination", **OWNER, "value": "Lyon"},
        _COG, None, resource="working", service="set_context", body=WorkingValue, status=204,
    ),
    Operation(
        "get_context_value", "GET", "/v1/working/{conversation_id}/context/{key}", "read",
        "Read a working-memory value",
        "The value kept under `key` in the session's working memory (null when none).",
        {"conversation_id": CONVERSATION, "key": "destination", **OWNER},
        _COG, ContextValue,
        resource="working", service="get_context_value", query=OwnerInChannel, returns="value",
    ),
    Operation(
        "delete_context_value", "DELETE", "/v1/working/{conversation_id}/context/{key}",
        "write",
        "Delete a working-memory value",
        "Drop one key from the session's working memory (204).",
        {"conversation_id": CONVERSATION, "key": "destination", **OWNER},
        _COG, None,
        resource="working", service="delete_context_value", query=OwnerInChannel, status=204,
    ),
    Operation(
        "get_context", "GET", "/v1/working/{conversation_id}", "read",
        "A session's working memory",
        "Everything the session keeps in working memory: values, thoughts, the active goal.",
        {"conversation_id": CONVERSATION, **OWNER},
        _COG, WorkingContext, resource="working", service="get_context", query=OwnerInChannel,
    ),
    Operation(
        "clear_session", "DELETE", "/v1/working/{conversation_id}", "write",
        "Clear a session's working memory",
        "Drop the session's working memory; answers how many entries went.",
        {"conversation_id": CONVERSATION, **OWNER},
        _COG, Cleared,
        resource="working", service="clear_session", query=OwnerInChannel, returns="deleted",
    ),
    Operation(
        "record_tool_use", "POST", "/v1/tools/invocations", "write",
        "Record a tool call",
        "Log a tool call and how it went (PII removed from its input and output), so later "
        "tasks can learn which tools work.",
        {**OWNER, "tool_name": "web_search", "success": True, "latency_ms": 420},
        _COG, ToolInvocation,
        resource="strategies", service="record_tool_use", body=ToolUse, status=201,
        mcp=Tool(
            "record_tool_use",
            "Log a tool call and how it went, so later tasks can learn which tools work.",
        ),
    ),
    Operation(
        "tool_stats", "GET", "/v1/tools/stats", "read",
        "Tool statistics",
        "Per tool: calls, success rate and latency, from the recorded tool calls.",
        {**OWNER},
        _COG, ToolStatsPage,
        resource="strategies", service="tool_stats", query=StatsParams, returns="results",
    ),
    Operation(
        "learn_strategy", "POST", "/v1/strategies", "write",
        "Learn a strategy",
        "Keep a way of doing a task (a description and a tool sequence) to find again later.",
        {**OWNER, "description": "search the docs before answering",
         "tool_sequence": ["search"]},
        _COG, Strategy,
        resource="strategies", service="learn_strategy", body=StrategyInput, status=201,
    ),
    Operation(
        "find_strategies", "GET", "/v1/strategies", "read",
        "Find strategies for a task",
        "The strategies most like `task`, best first, weighed by how often they worked.",
        {**OWNER, "task": "answer a question about the docs", "limit": 5},
        _COG, StrategyPage,
        resource="strategies", service="find_strategies", query=StrategyParams, returns="results",
    ),
    Operation(
        "reinforce_strategy", "POST", "/v1/strategies/{strategy_id}/reinforce", "write",
        "Reinforce a strategy",
        "Record that a strategy worked (or did not) this time.",
        {"strategy_id": STRATEGY_ID, **OWNER, "success": True},
        _COG, Strategy, resource="strategies", service="reinforce_strategy", body=Reinforcement,
    ),
    Operation(
        "add_goal", "POST", "/v1/goals", "write",
        "Add a goal",
        "Record a goal the user is working towards (a step of a larger one with `parent_id`, "
        "blocked by others with `blocked_by`).",
        {**OWNER, "description": "Find a flat in Lyon", "priority": 8},
        _COG, Goal, resource="goals", service="add_goal", body=GoalInput, status=201,
        mcp=Tool(
            "add_goal",
            "Record a goal the user is working towards (a step of a larger one with "
            "parent_id).",
        ),
    ),
    Operation(
        "list_goals", "GET", "/v1/goals", "read",
        "List goals",
        "A user's goals, by status and channel.",
        {**OWNER, "status": "active"},
        _COG, GoalPage, resource="goals", service="list_goals", query=GoalParams, returns="results",
    ),
    Operation(
        "get_goal", "GET", "/v1/goals/{goal_id}", "read",
        "Read a goal",
        "One goal with its status, result and what blocks it.",
        {"goal_id": GOAL_ID, **OWNER},
        _COG, Goal, resource="goals", service="get_goal", query=OwnerParams,
    ),
    Operation(
        "complete_goal", "POST", "/v1/goals/{goal_id}/complete", "write",
        "Complete a goal",
        "Mark a goal done (or abandoned); goals waiting on it are unblocked.",
        {"goal_id": GOAL_ID, **OWNER, "result": "Signed a lease"},
        _COG, Goal, resource="goals", service="complete_goal", body=GoalCompletion,
        mcp=Tool(
            "complete_goal",
            "Mark a goal done (or abandoned); goals waiting on it are unblocked.",
        ),
    ),
    Operation(
        "get_profile", "GET", "/v1/profile", "read",
        "Read the profile",
        "The user's profile: preferences, expertise, communication style.",
        {**OWNER},
        _COG, Profile, resource="profile", service="get_profile", query=OwnerInChannel,
    ),
    Operation(
        "update_profile", "PATCH", "/v1/profile", "write",
        "Update the profile",
        "Change the fields given; the others stay as they are.",
        {**OWNER, "communication_style": "brief"},
        _COG, Profile,
        resource="profile", service="update_profile", body=ProfileUpdate, fields="set",
    ),
    Operation(
        "remember", "POST", "/v1/remember", "read",
        "Recall everything relevant",
        "One bundle for the task at hand: the profile, active goals, the session's context, "
        "relevant memories, past turns and strategies that worked, within a token budget; "
        "`prompt` is the block to put before the question.",
        {**OWNER, "query": "plan the move", "budget_tokens": 800},
        _COG, RememberAnswer,
        resource="recall", service="remember", body=RememberRequest, fields="not_none",
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
        "add_fact", "POST", "/v1/facts", "write",
        "State a fact",
        "A fact stated directly (no extraction): a functional predicate supersedes the "
        "subject's current value per the contradiction policy.",
        {**OWNER, "subject": "@user", "predicate": "lives_in", "object": "Lyon"},
        _GRAPH, Fact, resource="graph", service="add_fact", body=FactInput, status=201,
        mcp=Tool(
            "remember_fact",
            "Record one structured fact about the user's world (give object or value).\n\n"
            "A new value of a one-at-a-time relation (lives_in, works_for, …) replaces the "
            "current one; the old value stays in the history.",
        ),
    ),
    Operation(
        "list_facts", "GET", "/v1/facts", "read",
        "List facts",
        "What is true now as currently known; `valid_at` / `known_at` ask about another time, "
        "`include_superseded` shows the history.",
        {**OWNER, "entity": "@user"},
        _GRAPH, FactList, resource="graph", service="facts", query=FactsQuery, returns="results",
    ),
    Operation(
        "fact_reviews", "GET", "/v1/facts/reviews", "read",
        "Facts to review",
        "Facts the contradiction policy left for a person to decide.",
        {**OWNER},
        _GRAPH, ReviewList,
        resource="graph", service="fact_reviews", query=ReviewsQuery, returns="results",
    ),
    Operation(
        "resolve_fact_review", "POST", "/v1/facts/reviews/{review_id}/resolve", "write",
        "Resolve a contradiction",
        "Decide a review: keep the newer `fact` (it replaces the other), keep the fact it "
        "`conflicts_with` (the newer one never held), or keep `both` (no contradiction). "
        "Nothing is deleted: the replaced fact stays in the history, superseded, and other "
        "reviews naming it close too.",
        {"review_id": MEMORY_ID, **OWNER, "keep": "fact"},
        _GRAPH, ResolvedReview,
        resource="graph", service="resolve_fact_review", body=ReviewDecision,
    ),
    Operation(
        "promote_fact", "POST", "/v1/facts/{fact_id}/promote", "write",
        "Promote a fact to the user's global channel",
        "Copy a project-channel fact to the user's `_global` channel, linked PROMOTED_FROM; "
        "promoting it again answers the same copy.",
        {"fact_id": MEMORY_ID, **OWNER, "reason": "true everywhere"},
        _GRAPH, Fact, resource="graph", service="promote", body=PromoteRequest,
    ),
    Operation(
        "retire_fact", "POST", "/v1/facts/{fact_id}/retire", "write",
        "Retire a fact",
        "A current fact stops holding now (`never_held`: it was never true) and leaves the "
        "current view; nothing is deleted, so the as-of views still show it. Audited (`update`, "
        "`via: retire_fact`). A fact already replaced or retired: 409.",
        {"fact_id": MEMORY_ID, **OWNER},
        _GRAPH, Fact, resource="graph", service="retire_fact", body=RetireRequest,
        conflict=True,
    ),
    Operation(
        "correct_fact", "POST", "/v1/facts/{fact_id}/correct", "write",
        "Correct a fact",
        "Replace a current fact's object or value: a new fact of the same subject and "
        "predicate holds from the old one's start, and the old one never held and is kept in "
        "the history, `superseded_by` the new. Answers the new fact. Audited (`update`, "
        "`via: correct_fact`). A fact already replaced or retired: 409.",
        {"fact_id": MEMORY_ID, **OWNER, "object": "Unbabel"},
        _GRAPH, Fact, resource="graph", service="correct_fact", body=CorrectionRequest,
        conflict=True,
    ),
    Operation(
        "list_entities", "GET", "/v1/entities", "read",
        "List entities",
        "The people, places, organisations and things the user's facts name, by name or type.",
        {**OWNER, "q": "Lyon"},
        _GRAPH, EntityList,
        resource="graph", service="entities", query=EntitiesQuery, returns="results",
    ),
    Operation(
        "get_entity", "GET", "/v1/entities/{entity_id}", "read",
        "Read an entity",
        "An entity with its aliases and current facts.",
        {"entity_id": ENTITY_ID, **OWNER},
        _GRAPH, EntityDetail, resource="graph", service="entity", query=Owner,
        mcp=Tool(
            "about_entity",
            "What is known about someone or something: its current facts and what it relates "
            "to.",
            read_only=True,
        ),
    ),
    Operation(
        "entity_graph", "GET", "/v1/entities/{entity_id}/graph", "read",
        "An entity's neighbourhood",
        "Nodes within `depth` hops and the edges among them (relations, and facts whose object "
        "is an entity).",
        {"entity_id": ENTITY_ID, **OWNER, "depth": 2},
        _GRAPH, GraphView, resource="graph", service="entity_graph", query=GraphQuery,
    ),
    Operation(
        "merge_entity", "POST", "/v1/entities/{entity_id}/merge", "write",
        "Merge two entities",
        "Merge this entity into `into` (recorded: `…/split` undoes it).",
        {"entity_id": ENTITY_ID, **OWNER, "into": GOAL_ID},
        _GRAPH, EntityDetail, resource="graph", service="merge_entities", body=MergeRequest,
    ),
    Operation(
        "split_entity", "POST", "/v1/entities/{entity_id}/split", "write",
        "Undo a merge",
        "Undo this entity's last merge.",
        {"entity_id": ENTITY_ID, **OWNER},
        _GRAPH, EntityDetail, resource="graph", service="split_entity", query=Owner,
    ),
    # --- webhooks ---------------------------------------------------------------------------
    Operation(
        "create_webhook", "POST", "/v1/webhooks", "admin",
        "Subscribe a URL to events",
        "Subscribe an https (or http) URL to this tenant's events: all types or those listed, "
        "optionally only one app's or one user's. Answers the subscription with its signing "
        "secret, shown this once (`whsec_…`: verify each request's `webhook-signature` with "
        "it). A URL whose host is not a public address is refused (422) unless the operator "
        "allows it.",
        {"url": "https://crm.example.com/hooks/memvault",
         "event_types": ["memory.created", "user.erased"]},
        _HOOKS, WebhookCreated, resource="webhooks", service="create_webhook", body=WebhookInput,
        status=201,
    ),
    Operation(
        "list_webhooks", "GET", "/v1/webhooks", "admin",
        "List webhooks",
        "This tenant's webhook subscriptions (never their secrets).",
        {},
        _HOOKS, WebhookList, resource="webhooks", service="list_webhooks", returns="results",
    ),
    Operation(
        "get_webhook", "GET", "/v1/webhooks/{webhook_id}", "admin",
        "Read a webhook",
        "One subscription (never its secret).",
        {"webhook_id": WEBHOOK_ID},
        _HOOKS, Webhook, resource="webhooks", service="get_webhook",
    ),
    Operation(
        "update_webhook", "PATCH", "/v1/webhooks/{webhook_id}", "admin",
        "Change a webhook",
        "Change the URL, the event types, the filters, the content flag or pause it "
        "(`enabled: false`: its events wait, and go out in order once it is enabled again).",
        {"webhook_id": WEBHOOK_ID, "enabled": False},
        _HOOKS, Webhook, resource="webhooks", service="update_webhook", body=WebhookUpdate,
        fields="set",
    ),
    Operation(
        "delete_webhook", "DELETE", "/v1/webhooks/{webhook_id}", "admin",
        "Delete a webhook",
        "Unsubscribe: the subscription and its deliveries go.",
        {"webhook_id": WEBHOOK_ID},
        _HOOKS, None, resource="webhooks", service="delete_webhook", status=204,
    ),
    Operation(
        "rotate_webhook_secret", "POST", "/v1/webhooks/{webhook_id}/secret", "admin",
        "Rotate a webhook's secret",
        "A new signing secret, answered this once; requests are signed with it from now on.",
        {"webhook_id": WEBHOOK_ID},
        _HOOKS, WebhookCreated, resource="webhooks", service="rotate_webhook_secret",
    ),
    Operation(
        "webhook_deliveries", "GET", "/v1/webhooks/{webhook_id}/deliveries", "admin",
        "A webhook's deliveries",
        "Each event sent or to send to this subscription, newest first: pending (with its "
        "attempts and next try), delivered, or dead (retries exhausted: replay it).",
        {"webhook_id": WEBHOOK_ID, "state": "dead", "limit": 50},
        _HOOKS, DeliveryPage, resource="webhooks", service="webhook_deliveries",
        query=DeliveryParams, returns="results",
    ),
    Operation(
        "replay_webhook", "POST", "/v1/webhooks/{webhook_id}/replay", "admin",
        "Replay deliveries",
        "Send again one delivery (`delivery_id`, whatever its state) or, without one, every "
        "dead-lettered delivery of this subscription; answers how many were queued.",
        {"webhook_id": WEBHOOK_ID},
        _HOOKS, Replayed, resource="webhooks", service="replay_webhook", body=ReplayRequest,
    ),
)  # fmt: skip


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
