"""The library methods the HTTP client stands in for, as their callers see them:
generated from ``memvault.service.AsyncMemory`` by ``python -m
memvault._stubs``; do not edit. ``memvault.client`` copies each method's signature,
annotations and documentation from here, so it loads none of the service."""

# ruff: noqa: E501
# mypy: disable-error-code="empty-body,valid-type"
# fmt: off

import builtins
from datetime import datetime
from typing import Any, Unpack
from uuid import UUID

from memvault._keywords import (
    GoalInputKeywords,
    MemoryFilterKeywords,
    MemoryInputKeywords,
    MemoryQueryKeywords,
    MessagesRequestKeywords,
    ProfileUpdateKeywords,
    RememberRequestKeywords,
    SearchRequestKeywords,
    StrategyInputKeywords,
    ToolUseKeywords,
)
from memvault._sync import takes
from memvault.cognitive.bundle import MemoryBundle
from memvault.cognitive.kinds import (
    Conversation,
    ConversationTurn,
    Goal,
    GoalInput,
    GoalStatus,
    Profile,
    ProfileUpdate,
    RememberRequest,
    Strategy,
    StrategyInput,
    ToolInvocation,
    ToolStats,
    ToolUse,
    Turn,
    WorkingContext,
)
from memvault.events import Delivery, Replayed, Webhook, WebhookCreated
from memvault.graph.views import EntityDetail, FactReview, GraphView, ResolvedReview
from memvault.lifecycle.reports import (
    AuditPage,
    DeletionReceipt,
    HealthActionRequest,
    HealthActionResult,
    MemoryHealth,
    MergeUndone,
    UserOverview,
    UserSummary,
)
from memvault.models import (
    AddResult,
    Entity,
    Fact,
    HistoryEntry,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    MemoryQuery,
    MemoryRecord,
    Message,
    MessagesRequest,
    SearchRequest,
    SearchResult,
)


class ClientSurface:
    """The headers of ``AsyncMemory``'s methods that the client offers."""

    @takes(MemoryInput, positional=('content',))
    async def add(self, /, content: 'str', *, wait: 'bool' = False, background: 'bool' = False, **fields: 'Unpack[MemoryInputKeywords]') -> 'AddResult':
        """Store one memory through the write pipeline (PII, embedding, dedup, enrichment).

        A text that fits the model's window is searchable when this returns; a longer one, or
        any with ``background=True``, is stored at once and finished by the worker (``wait=True``
        waits for that, up to ``wait_timeout_s``).
        """

    async def add_many(self, items: 'builtins.list[MemoryInput | dict[str, Any]]', *, wait: 'bool' = False, background: 'bool' = False) -> 'builtins.list[AddResult]':
        """Store a batch as a batch: one embedding call, one transaction; results in order.

        Any invalid item (including a PII rejection) fails the whole batch, storing nothing.
        """

    @takes(SearchRequest, positional=('query',))
    async def search(self, /, query: 'str', **options: 'Unpack[SearchRequestKeywords]') -> 'SearchResult':
        """This user's memories most relevant to ``query``: by meaning and by keywords (BM25
        on the blind index), fused (``recipe="hybrid"``), or by one of them alone.

        A time the query names ("last week", "in May 2023") is resolved against
        ``reference_time`` (default now) and boosts, or with ``time_mode="filter"``
        restricts, memories by ``occurred_at``. ``expand`` / ``hyde`` / ``self_query`` switch
        on the LLM recall techniques; ``context_window=n`` adds each conversational hit's
        neighbouring turns. ``result.diagnostics`` says what ran and how long it took."""

    @takes(MemoryQuery, positional=())
    async def list(self, /, **query: 'Unpack[MemoryQueryKeywords]') -> 'MemoryPage':
        """One page of memories, newest first; pass ``next_cursor`` back for the next page.
        Takes every field of ``MemoryQuery`` (the filters, ``limit``, ``cursor``) as keywords."""

    @takes(MemoryFilter, positional=())
    async def count(self, /, **filters: 'Unpack[MemoryFilterKeywords]') -> 'int':
        """How many of a user's memories match the filters: every field of ``MemoryFilter``,
        as ``list`` takes them, without reading or decrypting one of them."""

    async def delete_all(self, *, user_id: 'str', app_id: 'str | None' = None) -> 'int':
        """Delete every memory of a user (in one app, if given) and every graph row of theirs;
        returns how many memories (``erase_user`` answers the receipt)."""

    async def feedback(self, memory_ids: 'builtins.list[UUID | str]', *, user_id: 'str') -> 'int':
        """Say which memories an answer used: each of this user's named memories ranks a little
        higher in later searches (``reinforcement`` in the score breakdown). Searching and
        ``remember()`` never do this by themselves: being returned is not being used. Returns
        how many of the ids were this user's memories (others are not counted)."""

    async def erase_memories(self, memory_ids: 'list[UUID | str]', *, user_id: 'str') -> 'DeletionReceipt':
        """Delete several memories of one user and everything derived from them, in one
        transaction with one receipt; ids that are not this user's are left alone, and when
        none is, nothing happens (404)."""

    async def get(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'MemoryRecord':
        ...

    async def update(self, memory_id: 'UUID | str', *, user_id: 'str', content: 'str | None' = None, metadata: 'dict[str, Any] | None' = None, tags: 'builtins.list[str] | None' = None, importance: 'int | None' = None, expires_at: 'datetime | None' = None) -> 'MemoryRecord':
        """Replace the content, merge metadata (a key set to None is removed), replace the
        tags, set the importance and/or move the expiry to ``expires_at`` (in the future).

        New content is enriched again (importance, type, expiry, categories follow the new
        text, but an importance given with it stands) and queued for re-embedding; an edit
        that changes nothing records nothing. A new expiry keeps the memory's id, so it keeps
        its place wherever it is ranked or paged."""

    async def delete(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'None':
        """Delete a memory and everything derived from it (``erase`` answers the receipt)."""

    async def history(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'builtins.list[HistoryEntry]':
        """Every ADD, UPDATE and DELETE of a memory, oldest first (kept after deletion)."""

    @takes(MessagesRequest, positional=('messages',))
    async def add_messages(self, /, messages: 'builtins.list[Message | dict[str, Any]]', *, wait: 'bool' = False, **fields: 'Unpack[MessagesRequestKeywords]') -> 'builtins.list[AddResult]':
        """Store a conversation (or the next part of one) turn by turn, under your own
        ``conversation_id`` (created on first use, appended to afterwards; without one, a new
        conversation). Each turn is kept verbatim as a turn of that conversation and as a
        searchable memory, enters the session's working memory, and is learned from at once
        (the offline extractor's facts are there when this returns). PII protection applies to
        every turn; an invalid turn stores none of them."""

    async def audit_log(self, *, user_id: 'str | None' = None, operation: 'str | None' = None, since: 'datetime | None' = None, limit: 'int' = 100) -> 'AuditPage':
        """This tenant's audit rows, newest first (written in batches: a row appears within
        ``audit_flush_ms``; ``flush_audit`` waits for it)."""

    async def list_users(self, *, limit: 'int' = 100) -> 'list[UserSummary]':
        """This tenant's users (anyone holding a memory, a conversation or a fact), with how
        many of each they hold, most recently active first."""

    async def user_overview(self, *, user_id: 'str', days: 'int' = 14, weeks: 'int' = 26) -> 'UserOverview':
        """What one user holds, each kind counted exactly, and how many memories they gained
        on each of the last ``days`` days and ``weeks`` weeks (UTC), every memory counted."""

    async def deletion_receipts(self, *, user_id: 'str | None' = None, limit: 'int' = 50) -> 'list[DeletionReceipt]':
        """The receipts of this tenant's deletions (one user's, if given), newest first: each
        is kept in its deletion's audit row (none are kept at ``audit_level=off``)."""

    async def erase(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'DeletionReceipt':
        """Delete one memory and everything derived from it; answers the deletion receipt."""

    async def erase_user(self, *, user_id: 'str', app_id: 'str | None' = None) -> 'DeletionReceipt':
        """Delete every memory of a user (in one app, if given) and all derived from them;
        without an app, the user's whole history too."""

    async def deletion_receipt(self, request_id: 'str') -> 'DeletionReceipt':
        """One deletion's receipt, by its request id (404 when this tenant has none)."""

    async def memory_health(self, *, user_id: 'str') -> 'MemoryHealth':
        """What this user's memories need, each finding with its recommended action."""

    async def health_action(self, request: 'HealthActionRequest | dict[str, Any]') -> 'HealthActionResult':
        """Act on a finding through the normal write path (and so the audit): ``merge`` keeps
        the first memory and deletes the rest (noting them on the first), ``archive`` moves
        them to the cold tier, ``delete`` erases them, ``retry_jobs`` requeues failed jobs."""

    async def undo_merge(self, merge_id: 'UUID | str', *, user_id: 'str') -> 'MergeUndone':
        """Undo a merge as a whole, once (``lifecycle.merge_undo``): every copy back as it was,
        the kept memories' merged values as they were before (their history records it)."""

    async def export_memories(self, *, user_id: 'str') -> 'list[dict[str, Any]]':
        """A user's whole memory as JSON-ready dicts, one per line of an export file (format
        2, docs/export-format.md): memories with history and vectors, the graph, conversations
        and turns, tool invocations, strategies, goals and profiles."""

    async def import_memories(self, lines: 'list[Any]') -> 'dict[str, int]':
        """Load an export (format 2, or 1) into this tenant, ids kept; rows the user has
        already are skipped, so an import can run twice. Every line is checked before anything
        is written, and a problem anywhere (named by line and field) imports nothing."""

    async def start_conversation(self, *, user_id: 'str', channel: 'str' = '_global', title: 'str | None' = None, started_at: 'datetime | None' = None, conversation_id: 'str | None' = None) -> 'Conversation':
        """A new, empty conversation (with a title, a channel or a start time); naming it is
        optional: ``add_messages`` creates a conversation on its first turn."""

    async def list_conversations(self, *, user_id: 'str', channel: 'str | None' = None, include_archived: 'bool' = False, limit: 'int' = 50) -> 'builtins.list[Conversation]':
        """Newest first; a project channel lists its own and the global conversations."""

    async def get_conversation(self, conversation_id: 'str', *, user_id: 'str', turns: 'bool' = True) -> 'Conversation':
        ...

    async def add_turns(self, conversation_id: 'str', turns: 'builtins.list[Turn | dict[str, Any]]', *, user_id: 'str', occurred_at: 'datetime | None' = None, wait: 'bool' = False) -> 'builtins.list[ConversationTurn]':
        """``add_messages`` to one conversation, answered as its turns (the older way to
        append: the same operation)."""

    async def erase_conversation(self, conversation_id: 'str', *, user_id: 'str') -> 'DeletionReceipt':
        """Delete one conversation: its turns and everything derived from them, its tool
        calls, its session's working memory and the conversation itself; answers the
        receipt."""

    async def set_context(self, conversation_id: 'str', key: 'str', value: 'Any', *, user_id: 'str', channel: 'str' = '_global', ttl_seconds: 'float | None' = None) -> 'None':
        """Keep ``value`` (any JSON) under ``key`` for ``ttl_seconds`` (default
        MEMVAULT_WORKING_TTL_S)."""

    async def get_context_value(self, conversation_id: 'str', key: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'Any':
        ...

    async def delete_context_value(self, conversation_id: 'str', key: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'None':
        ...

    async def get_context(self, conversation_id: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'WorkingContext':
        """Everything the session holds now (an expired entry is simply absent)."""

    async def clear_session(self, conversation_id: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'int':
        """Forget the session's working memory; returns how many entries went."""

    @takes(ToolUse, positional=('tool_name',))
    async def record_tool_use(self, /, tool_name: 'str', **fields: 'Unpack[ToolUseKeywords]') -> 'ToolInvocation':
        """Log one tool call (input, output and error PII-filtered and sealed)."""

    async def tool_stats(self, *, user_id: 'str', channel: 'str | None' = None) -> 'builtins.list[ToolStats]':
        """Usage, success rate and average latency per tool and channel."""

    @takes(StrategyInput, positional=('description',))
    async def learn_strategy(self, /, description: 'str', **fields: 'Unpack[StrategyInputKeywords]') -> 'Strategy':
        """Keep a strategy: the tool sequence of a conversation (its successful calls, in
        order) or one given, described for later tasks to find by meaning."""

    async def find_strategies(self, task: 'str', *, user_id: 'str', channel: 'str' = '_global', limit: 'int' = 5) -> 'builtins.list[Strategy]':
        """Strategies for ``task``, best first by ``score = similarity x (s + 1) / (s + f + 2)``
        (s, f: successes and failures), from this channel and _global."""

    async def reinforce_strategy(self, strategy_id: 'UUID | str', *, user_id: 'str', success: 'bool') -> 'Strategy':
        ...

    @takes(GoalInput, positional=('description',))
    async def add_goal(self, /, description: 'str', **fields: 'Unpack[GoalInputKeywords]') -> 'Goal':
        """A goal (optionally a subgoal of ``parent_id``, waiting on ``blocked_by``)."""

    async def list_goals(self, *, user_id: 'str', status: 'GoalStatus | None' = None, channel: 'str | None' = None, limit: 'int' = 100) -> 'builtins.list[Goal]':
        """Goals by priority (then deadline); ``status`` as each reads now (a goal waiting on an
        unfinished goal is ``blocked``); a project channel lists its own and _global's."""

    async def get_goal(self, goal_id: 'UUID | str', *, user_id: 'str') -> 'Goal':
        ...

    async def complete_goal(self, goal_id: 'UUID | str', *, user_id: 'str', status: 'str' = 'completed', result: 'str | None' = None) -> 'Goal':
        """Finish a goal (completed or abandoned) with its result; goals it blocked unblock."""

    async def get_profile(self, *, user_id: 'str', channel: 'str' = '_global') -> 'Profile':
        """The user's profile as a project channel sees it: _global's, overridden by the
        project's own (preferences key by key)."""

    @takes(ProfileUpdate, positional=())
    async def update_profile(self, /, **fields: 'Unpack[ProfileUpdateKeywords]') -> 'Profile':
        """Merge preferences key by key (None removes one); expertise and style replace."""

    @takes(RememberRequest, positional=('query',))
    async def remember(self, /, query: 'str', **fields: 'Unpack[RememberRequestKeywords]') -> 'MemoryBundle':
        """Recall for a prompt: relevant turns, facts and entities, strategies, active goals,
        the profile, the live session and what happened lately (goals finished, tool calls
        and how they went), in ``channel`` and _global; scored by weights that are data, at
        most N turns per conversation, each text shown once, cut to ``budget_tokens`` of the
        model's tokenizer. ``bundle.as_prompt()`` is the block to put before the question."""

    async def add_fact(self, subject: 'str', predicate: 'str', *, user_id: 'str', object: 'str | None' = None, value: 'str | None' = None, valid_from: 'datetime | None' = None, confidence: 'float | None' = None, source: 'str | None' = None, channel: 'str | None' = None, app_id: 'str | None' = None) -> 'Fact':
        """State a fact directly: ``subject predicate object`` (an entity name) or ``subject
        predicate value`` (a literal). ``@user`` names the user. A functional predicate
        (lives_in, works_for, …) supersedes the current value per the contradiction policy."""

    async def facts(self, *, user_id: 'str', entity: 'str | None' = None, predicate: 'str | None' = None, valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, include_superseded: 'bool' = False, memory_id: 'UUID | str | None' = None, limit: 'int' = 100) -> 'builtins.list[Fact]':
        """What is true now as currently known (default); ``valid_at=T``: what held in the
        world at T; ``known_at=T``: what the store believed at T; ``include_superseded``: the
        whole history. ``entity`` is a name, alias or id (its facts as subject or object);
        ``memory_id``: only the facts read from that memory."""

    async def fact_reviews(self, *, user_id: 'str', limit: 'int' = 50, offset: 'int' = 0) -> 'builtins.list[FactReview]':
        """Contradictions the ``flag_review`` policy kept side by side, newest first
        (``offset``: skip that many, for the next page)."""

    async def resolve_fact_review(self, review_id: 'UUID | str', *, user_id: 'str', keep: 'str') -> 'ResolvedReview':
        """Decide a contradiction awaiting review: ``keep="fact"`` (the newer fact replaces the
        other), ``"conflicts_with"`` (the newer one never held) or ``"both"`` (no contradiction).
        Nothing is deleted: the replaced fact stays in the history, superseded."""

    async def promote(self, fact_id: 'UUID | str', *, user_id: 'str', reason: 'str') -> 'Fact':
        """Copy a project-channel fact to the user's ``_global`` channel (linked
        PROMOTED_FROM); promoting it again answers the same copy."""

    async def retire_fact(self, fact_id: 'UUID | str', *, user_id: 'str', never_held: 'bool' = False) -> 'Fact':
        """Retire a current fact: it stops holding now (``never_held``: it never did) and
        leaves the current view; nothing is deleted, so the as-of views still show it."""

    async def correct_fact(self, fact_id: 'UUID | str', *, user_id: 'str', object: 'str | None' = None, value: 'str | None' = None) -> 'Fact':
        """Correct a current fact: a new fact of the same subject and predicate with the right
        ``object`` or ``value`` replaces it from its start; the old one never held and stays in
        the history, superseded by the new (``superseded_by``)."""

    async def restore_fact(self, fact_id: 'UUID | str', *, user_id: 'str') -> 'Fact':
        """Undo a person's retire or correction of a fact: it holds again over the interval it
        had, and a correction's replacement never held (superseded by it). Refused (409) when
        something changed in between: the replacement was retired, replaced or corrected, or a
        newer fact of the same subject and predicate came in; undo that first."""

    async def entities(self, *, user_id: 'str', q: 'str | None' = None, type: 'str | None' = None, limit: 'int' = 50) -> 'builtins.list[Entity]':
        """Entities by name or alias (``q``: an exact normalised name, or any of its words),
        else the most salient."""

    async def entity(self, entity_id: 'UUID | str', *, user_id: 'str') -> 'EntityDetail':
        """One entity with its current facts (as subject or object)."""

    async def entity_graph(self, entity_id: 'UUID | str', *, user_id: 'str', depth: 'int' = 2, valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, limit: 'int | None' = None) -> 'GraphView':
        """The entity's neighbourhood in the current graph: nodes within ``depth`` hops (at
        most 3) and the edges between them (relations, and facts whose object is an entity).
        ``valid_at`` / ``known_at``: the graph as of then, the facts drawn being those
        :meth:`facts` lists for the same moments. At most ``limit`` nodes, the nearest first
        (default: the server's ``graph_max_nodes``); ``reached_nodes`` says how many there were."""

    async def user_graph(self, *, user_id: 'str', valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, limit: 'int | None' = None) -> 'GraphView':
        """The user's whole graph: every entity (not merged away; as of ``known_at``, those
        already known then), the most salient first, at most ``limit`` (default: the server's
        ``graph_max_nodes``), and the edges among them, now or as of ``valid_at`` /
        ``known_at`` (the rule of :meth:`facts`). Every node has depth 0."""

    async def merge_entities(self, entity_id: 'UUID | str', *, into: 'UUID | str', user_id: 'str') -> 'EntityDetail':
        """Merge one entity into another: its facts and relations move over, its name
        resolves to the other from now on; recorded, so :meth:`split_entity` undoes it."""

    async def split_entity(self, entity_id: 'UUID | str', *, user_id: 'str') -> 'EntityDetail':
        """Undo the last merge of this entity: what moved (and still points at the entity it
        joined) moves back, and its name resolves to it again."""

    async def create_webhook(self, url: 'str', *, event_types: 'builtins.list[str] | None' = None, app_id: 'str | None' = None, user_id: 'str | None' = None, include_content: 'bool' = False, enabled: 'bool' = True, description: 'str | None' = None, secret: 'str | None' = None) -> 'WebhookCreated':
        """Subscribe a URL to this tenant's events; the answer holds the signing secret, shown
        this once."""

    async def list_webhooks(self) -> 'builtins.list[Webhook]':
        """This tenant's subscriptions, oldest first (no secrets)."""

    async def get_webhook(self, webhook_id: 'UUID | str') -> 'Webhook':
        ...

    async def update_webhook(self, webhook_id: 'UUID | str', *, url: 'str | None' = None, event_types: 'builtins.list[str] | None' = None, app_id: 'str | None' = None, user_id: 'str | None' = None, include_content: 'bool | None' = None, enabled: 'bool | None' = None, description: 'str | None' = None) -> 'Webhook':
        """Change the fields given (a filter, once set, is changed, not cleared: subscribe
        anew for another scope)."""

    async def delete_webhook(self, webhook_id: 'UUID | str') -> 'None':
        """Unsubscribe: the subscription and its deliveries, sent or not, go."""

    async def rotate_webhook_secret(self, webhook_id: 'UUID | str') -> 'WebhookCreated':
        """A new signing secret, answered this once; the old one signs nothing from now."""

    async def webhook_deliveries(self, webhook_id: 'UUID | str', *, state: 'str | None' = None, limit: 'int' = 50) -> 'builtins.list[Delivery]':
        """A subscription's deliveries, newest first, optionally in one state."""

    async def replay_webhook(self, webhook_id: 'UUID | str', *, delivery_id: 'int | None' = None) -> 'Replayed':
        """Send again one delivery (whatever its state), or every dead-lettered one."""


class BlockingClientSurface:
    """The same methods as ``MemoryClient`` offers them (``blocking``), for the type
    checker."""

    def add(self, /, content: 'str', *, wait: 'bool' = False, background: 'bool' = False, **fields: 'Unpack[MemoryInputKeywords]') -> 'AddResult': ...
    def add_many(self, items: 'builtins.list[MemoryInput | dict[str, Any]]', *, wait: 'bool' = False, background: 'bool' = False) -> 'builtins.list[AddResult]': ...
    def search(self, /, query: 'str', **options: 'Unpack[SearchRequestKeywords]') -> 'SearchResult': ...
    def list(self, /, **query: 'Unpack[MemoryQueryKeywords]') -> 'MemoryPage': ...
    def count(self, /, **filters: 'Unpack[MemoryFilterKeywords]') -> 'int': ...
    def delete_all(self, *, user_id: 'str', app_id: 'str | None' = None) -> 'int': ...
    def feedback(self, memory_ids: 'builtins.list[UUID | str]', *, user_id: 'str') -> 'int': ...
    def erase_memories(self, memory_ids: 'list[UUID | str]', *, user_id: 'str') -> 'DeletionReceipt': ...
    def get(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'MemoryRecord': ...
    def update(self, memory_id: 'UUID | str', *, user_id: 'str', content: 'str | None' = None, metadata: 'dict[str, Any] | None' = None, tags: 'builtins.list[str] | None' = None, importance: 'int | None' = None, expires_at: 'datetime | None' = None) -> 'MemoryRecord': ...
    def delete(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'None': ...
    def history(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'builtins.list[HistoryEntry]': ...
    def add_messages(self, /, messages: 'builtins.list[Message | dict[str, Any]]', *, wait: 'bool' = False, **fields: 'Unpack[MessagesRequestKeywords]') -> 'builtins.list[AddResult]': ...
    def audit_log(self, *, user_id: 'str | None' = None, operation: 'str | None' = None, since: 'datetime | None' = None, limit: 'int' = 100) -> 'AuditPage': ...
    def list_users(self, *, limit: 'int' = 100) -> 'list[UserSummary]': ...
    def user_overview(self, *, user_id: 'str', days: 'int' = 14, weeks: 'int' = 26) -> 'UserOverview': ...
    def deletion_receipts(self, *, user_id: 'str | None' = None, limit: 'int' = 50) -> 'list[DeletionReceipt]': ...
    def erase(self, memory_id: 'UUID | str', *, user_id: 'str') -> 'DeletionReceipt': ...
    def erase_user(self, *, user_id: 'str', app_id: 'str | None' = None) -> 'DeletionReceipt': ...
    def deletion_receipt(self, request_id: 'str') -> 'DeletionReceipt': ...
    def memory_health(self, *, user_id: 'str') -> 'MemoryHealth': ...
    def health_action(self, request: 'HealthActionRequest | dict[str, Any]') -> 'HealthActionResult': ...
    def undo_merge(self, merge_id: 'UUID | str', *, user_id: 'str') -> 'MergeUndone': ...
    def export_memories(self, *, user_id: 'str') -> 'list[dict[str, Any]]': ...
    def import_memories(self, lines: 'list[Any]') -> 'dict[str, int]': ...
    def start_conversation(self, *, user_id: 'str', channel: 'str' = '_global', title: 'str | None' = None, started_at: 'datetime | None' = None, conversation_id: 'str | None' = None) -> 'Conversation': ...
    def list_conversations(self, *, user_id: 'str', channel: 'str | None' = None, include_archived: 'bool' = False, limit: 'int' = 50) -> 'builtins.list[Conversation]': ...
    def get_conversation(self, conversation_id: 'str', *, user_id: 'str', turns: 'bool' = True) -> 'Conversation': ...
    def add_turns(self, conversation_id: 'str', turns: 'builtins.list[Turn | dict[str, Any]]', *, user_id: 'str', occurred_at: 'datetime | None' = None, wait: 'bool' = False) -> 'builtins.list[ConversationTurn]': ...
    def erase_conversation(self, conversation_id: 'str', *, user_id: 'str') -> 'DeletionReceipt': ...
    def set_context(self, conversation_id: 'str', key: 'str', value: 'Any', *, user_id: 'str', channel: 'str' = '_global', ttl_seconds: 'float | None' = None) -> 'None': ...
    def get_context_value(self, conversation_id: 'str', key: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'Any': ...
    def delete_context_value(self, conversation_id: 'str', key: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'None': ...
    def get_context(self, conversation_id: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'WorkingContext': ...
    def clear_session(self, conversation_id: 'str', *, user_id: 'str', channel: 'str' = '_global') -> 'int': ...
    def record_tool_use(self, /, tool_name: 'str', **fields: 'Unpack[ToolUseKeywords]') -> 'ToolInvocation': ...
    def tool_stats(self, *, user_id: 'str', channel: 'str | None' = None) -> 'builtins.list[ToolStats]': ...
    def learn_strategy(self, /, description: 'str', **fields: 'Unpack[StrategyInputKeywords]') -> 'Strategy': ...
    def find_strategies(self, task: 'str', *, user_id: 'str', channel: 'str' = '_global', limit: 'int' = 5) -> 'builtins.list[Strategy]': ...
    def reinforce_strategy(self, strategy_id: 'UUID | str', *, user_id: 'str', success: 'bool') -> 'Strategy': ...
    def add_goal(self, /, description: 'str', **fields: 'Unpack[GoalInputKeywords]') -> 'Goal': ...
    def list_goals(self, *, user_id: 'str', status: 'GoalStatus | None' = None, channel: 'str | None' = None, limit: 'int' = 100) -> 'builtins.list[Goal]': ...
    def get_goal(self, goal_id: 'UUID | str', *, user_id: 'str') -> 'Goal': ...
    def complete_goal(self, goal_id: 'UUID | str', *, user_id: 'str', status: 'str' = 'completed', result: 'str | None' = None) -> 'Goal': ...
    def get_profile(self, *, user_id: 'str', channel: 'str' = '_global') -> 'Profile': ...
    def update_profile(self, /, **fields: 'Unpack[ProfileUpdateKeywords]') -> 'Profile': ...
    def remember(self, /, query: 'str', **fields: 'Unpack[RememberRequestKeywords]') -> 'MemoryBundle': ...
    def add_fact(self, subject: 'str', predicate: 'str', *, user_id: 'str', object: 'str | None' = None, value: 'str | None' = None, valid_from: 'datetime | None' = None, confidence: 'float | None' = None, source: 'str | None' = None, channel: 'str | None' = None, app_id: 'str | None' = None) -> 'Fact': ...
    def facts(self, *, user_id: 'str', entity: 'str | None' = None, predicate: 'str | None' = None, valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, include_superseded: 'bool' = False, memory_id: 'UUID | str | None' = None, limit: 'int' = 100) -> 'builtins.list[Fact]': ...
    def fact_reviews(self, *, user_id: 'str', limit: 'int' = 50, offset: 'int' = 0) -> 'builtins.list[FactReview]': ...
    def resolve_fact_review(self, review_id: 'UUID | str', *, user_id: 'str', keep: 'str') -> 'ResolvedReview': ...
    def promote(self, fact_id: 'UUID | str', *, user_id: 'str', reason: 'str') -> 'Fact': ...
    def retire_fact(self, fact_id: 'UUID | str', *, user_id: 'str', never_held: 'bool' = False) -> 'Fact': ...
    def correct_fact(self, fact_id: 'UUID | str', *, user_id: 'str', object: 'str | None' = None, value: 'str | None' = None) -> 'Fact': ...
    def restore_fact(self, fact_id: 'UUID | str', *, user_id: 'str') -> 'Fact': ...
    def entities(self, *, user_id: 'str', q: 'str | None' = None, type: 'str | None' = None, limit: 'int' = 50) -> 'builtins.list[Entity]': ...
    def entity(self, entity_id: 'UUID | str', *, user_id: 'str') -> 'EntityDetail': ...
    def entity_graph(self, entity_id: 'UUID | str', *, user_id: 'str', depth: 'int' = 2, valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, limit: 'int | None' = None) -> 'GraphView': ...
    def user_graph(self, *, user_id: 'str', valid_at: 'datetime | None' = None, known_at: 'datetime | None' = None, limit: 'int | None' = None) -> 'GraphView': ...
    def merge_entities(self, entity_id: 'UUID | str', *, into: 'UUID | str', user_id: 'str') -> 'EntityDetail': ...
    def split_entity(self, entity_id: 'UUID | str', *, user_id: 'str') -> 'EntityDetail': ...
    def create_webhook(self, url: 'str', *, event_types: 'builtins.list[str] | None' = None, app_id: 'str | None' = None, user_id: 'str | None' = None, include_content: 'bool' = False, enabled: 'bool' = True, description: 'str | None' = None, secret: 'str | None' = None) -> 'WebhookCreated': ...
    def list_webhooks(self) -> 'builtins.list[Webhook]': ...
    def get_webhook(self, webhook_id: 'UUID | str') -> 'Webhook': ...
    def update_webhook(self, webhook_id: 'UUID | str', *, url: 'str | None' = None, event_types: 'builtins.list[str] | None' = None, app_id: 'str | None' = None, user_id: 'str | None' = None, include_content: 'bool | None' = None, enabled: 'bool | None' = None, description: 'str | None' = None) -> 'Webhook': ...
    def delete_webhook(self, webhook_id: 'UUID | str') -> 'None': ...
    def rotate_webhook_secret(self, webhook_id: 'UUID | str') -> 'WebhookCreated': ...
    def webhook_deliveries(self, webhook_id: 'UUID | str', *, state: 'str | None' = None, limit: 'int' = 50) -> 'builtins.list[Delivery]': ...
    def replay_webhook(self, webhook_id: 'UUID | str', *, delivery_id: 'int | None' = None) -> 'Replayed': ...
