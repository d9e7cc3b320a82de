"""The MCP server: one user's long-term memory (memories, facts, entities) as tools for a model.

``memvault mcp`` serves it over stdio (the MCP client starts it as a subprocess) or streamable
HTTP. Its tools are the operations the operation table (``memvault.operations``) marks with a
``Tool``, described there; each is a thin wrapper here over ``AsyncMemory``. The tenant and the
user come from the server's configuration, never from the tool caller: a model reaches the
memories of the one user the server was started for, and no others.

stdio keeps stdout for the protocol alone: while it serves, the SDK points file descriptor 1 at
stderr, so whatever a library prints (the embedding model loads lazily, on the first call that
needs it) lands in the log, not on the wire. Logging goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Annotated, Any, Literal, Self

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from memvault import __version__
from memvault.config import LogLevel, Settings
from memvault.errors import MemvaultError
from memvault.models import DedupAction, Fact, MemoryRecord, MemoryType
from memvault.operations import OPERATIONS, Tool
from memvault.service import AsyncMemory

INSTRUCTIONS = """\
Long-term memory about the user, kept across conversations.
Search it (search_memories) at the start of a task and whenever the user refers to something
from before, or when their preferences, history or circumstances would change your answer.
Store (add_memory) what is worth knowing next time: preferences, personal details, decisions,
plans, commitments and the outcomes of tasks; one self-contained fact per memory. Correct a
memory that became wrong with update_memory; delete one when the user asks you to forget it."""


@dataclass(frozen=True)
class Owner:
    """The open store and the one user every tool call acts for."""

    memory: AsyncMemory
    user_id: str


Ctx = Context[Owner, Any]

# --- what the tools return: the fields a model needs, nothing internal ----------------------------


class MemoryOut(BaseModel):
    id: str
    content: str
    tags: list[str]
    categories: list[str]
    importance: int | None = Field(description="1 (trivial) to 10 (essential)")
    memory_type: MemoryType = Field(description="persistent, or temporal (true for a while)")
    valid_until: datetime | None = Field(description="when a temporal memory stops being true")
    metadata: dict[str, Any]
    occurred_at: datetime = Field(description="when it happened or was said")
    updated_at: datetime

    @classmethod
    def of(cls, record: MemoryRecord, **extra: Any) -> Self:
        fields = {name: getattr(record, name) for name in MemoryOut.model_fields if name != "id"}
        return cls(id=str(record.id), **fields, **extra)


class AddOut(MemoryOut):
    action: DedupAction = Field(
        description="stored_new; duplicate_exact (already known: nothing stored); merge or "
        "replace (an existing memory was updated, this is it); keep_both; pending (a long text, "
        "finished in the background)"
    )
    redacted: bool = Field(description="personal data or secrets were removed before storing")


class HitOut(MemoryOut):
    score: float = Field(description="relevance, higher is better; comparable within one search")


class SearchOut(BaseModel):
    results: list[HitOut]
    degraded: bool = Field(description="the query could not be compared by meaning, only words")


class PageOut(BaseModel):
    results: list[MemoryOut]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null: no more")


class DeletedOut(BaseModel):
    deleted: str


@contextmanager
def _tool_errors() -> Iterator[None]:
    """A memvault error becomes a tool error the model can read: its message, no traceback."""
    try:
        yield
    except MemvaultError as exc:
        problems = exc.details.get("errors") or []
        reasons = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        raise ToolError(f"{exc.message} {reasons}".strip()) from None


# --- the tools: the operation table's descriptions and these field descriptions are what the
# model reads ------------------------------------------------------------------------------------

MemoryId = Annotated[str, Field(description="the id a previous memory tool returned")]
Tags = Annotated[
    list[str] | None, Field(description="short labels to filter by later, e.g. ['travel']")
]


async def add_memory(
    ctx: Ctx,
    content: Annotated[
        str,
        Field(
            description="one self-contained fact in plain words, written to make sense on its "
            "own months from now, e.g. 'Prefers aisle seats on long flights'"
        ),
    ],
    tags: Tags = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="optional JSON object stored with the memory")
    ] = None,
    occurred_at: Annotated[
        datetime | None, Field(description="when it happened, ISO 8601, if not now")
    ] = None,
) -> AddOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        added = await owner.memory.add(
            content,
            user_id=owner.user_id,
            tags=tags,
            metadata=metadata,
            occurred_at=occurred_at,
            source="mcp",
        )
    return AddOut.of(added, action=added.dedup.action, redacted=added.pii.redacted)


async def search_memories(
    ctx: Ctx,
    query: Annotated[
        str, Field(description="what you want to know, in natural language or keywords")
    ],
    limit: Annotated[int, Field(ge=1, le=100, description="most results to return")] = 10,
    tags: Annotated[
        list[str] | None, Field(description="only memories carrying all of these tags")
    ] = None,
) -> SearchOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        found = await owner.memory.search(query, user_id=owner.user_id, limit=limit, tags=tags)
    hits = [HitOut.of(hit, score=round(hit.score, 4)) for hit in found.results]
    return SearchOut(results=hits, degraded=found.degraded)


async def get_memory(ctx: Ctx, memory_id: MemoryId) -> MemoryOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        record = await owner.memory.get(memory_id, user_id=owner.user_id)
    return MemoryOut.of(record)


async def list_memories(
    ctx: Ctx,
    limit: Annotated[int, Field(ge=1, le=100, description="memories per page")] = 20,
    tags: Annotated[
        list[str] | None, Field(description="only memories carrying all of these tags")
    ] = None,
    cursor: Annotated[
        str | None, Field(description="next_cursor from the previous page, to go on")
    ] = None,
) -> PageOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        page = await owner.memory.list(user_id=owner.user_id, limit=limit, tags=tags, cursor=cursor)
    return PageOut(results=[MemoryOut.of(r) for r in page.results], next_cursor=page.next_cursor)


async def update_memory(
    ctx: Ctx,
    memory_id: MemoryId,
    content: Annotated[
        str | None, Field(description="the corrected fact; replaces the old text")
    ] = None,
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description="keys to merge into the metadata; a key set to null is removed"),
    ] = None,
) -> MemoryOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        record = await owner.memory.update(
            memory_id, user_id=owner.user_id, content=content, metadata=metadata
        )
    return MemoryOut.of(record)


async def delete_memory(ctx: Ctx, memory_id: MemoryId) -> DeletedOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        await owner.memory.delete(memory_id, user_id=owner.user_id)
    return DeletedOut(deleted=memory_id)


# --- cognitive memory: recall for the prompt, goals, tool use ---------------------------------


class GoalOut(BaseModel):
    id: str
    description: str
    priority: int
    status: str = Field(description="active, completed, abandoned, or blocked by another goal")
    result: str | None


class ToolUseOut(BaseModel):
    id: str
    redacted: dict[str, int] = Field(description="personal data removed before storing (counts)")


async def remember(
    ctx: Ctx,
    query: Annotated[str, Field(description="the task or question at hand")],
    channel: Annotated[
        str, Field(description="_global, or a project whose memories to add to it")
    ] = "_global",
    conversation_id: Annotated[
        str | None, Field(description="this session's id, to include its working memory")
    ] = None,
    budget_tokens: Annotated[
        int | None, Field(ge=16, le=100_000, description="longest block to return, in tokens")
    ] = None,
) -> str:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        bundle = await owner.memory.remember(
            query,
            user_id=owner.user_id,
            channel=channel,
            conversation_id=conversation_id,
            budget_tokens=budget_tokens,
        )
    return bundle.as_prompt()


async def add_goal(
    ctx: Ctx,
    description: Annotated[str, Field(description="what the user wants done, in plain words")],
    priority: Annotated[int, Field(ge=1, le=10, description="10 most urgent")] = 5,
    parent_id: Annotated[str | None, Field(description="the goal this is a step of")] = None,
    deadline: Annotated[datetime | None, Field(description="when it is due, ISO 8601")] = None,
) -> GoalOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        goal = await owner.memory.add_goal(
            description,
            user_id=owner.user_id,
            priority=priority,
            parent_id=parent_id,
            deadline=deadline,
        )
    return GoalOut(**goal.model_dump(include=set(GoalOut.model_fields) - {"id"}), id=str(goal.id))


async def complete_goal(
    ctx: Ctx,
    goal_id: Annotated[str, Field(description="the id add_goal returned")],
    result: Annotated[str | None, Field(description="what came of it")] = None,
    abandoned: Annotated[bool, Field(description="true when given up, not achieved")] = False,
) -> GoalOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        goal = await owner.memory.complete_goal(
            goal_id,
            user_id=owner.user_id,
            status="abandoned" if abandoned else "completed",
            result=result,
        )
    return GoalOut(**goal.model_dump(include=set(GoalOut.model_fields) - {"id"}), id=str(goal.id))


async def record_tool_use(
    ctx: Ctx,
    tool_name: Annotated[str, Field(description="the tool that was called")],
    success: Annotated[bool, Field(description="whether it did what was wanted")],
    tool_input: Annotated[Any, Field(description="what it was given (JSON)")] = None,
    tool_output: Annotated[Any, Field(description="what it returned (JSON)")] = None,
    latency_ms: Annotated[float | None, Field(ge=0, description="how long it took")] = None,
    conversation_id: Annotated[str | None, Field(description="the session it ran in")] = None,
) -> ToolUseOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        used = await owner.memory.record_tool_use(
            tool_name,
            user_id=owner.user_id,
            success=success,
            tool_input=tool_input,
            tool_output=tool_output,
            latency_ms=latency_ms,
            conversation_id=conversation_id,
        )
    return ToolUseOut(id=str(used.id), redacted=used.pii)


# --- knowledge graph tools -----------------------------------------------------------


class FactOut(BaseModel):
    id: str
    claim: str
    subject: str
    predicate: str
    object: str | None
    value: str | None
    valid_from: datetime | None
    superseded: bool


class AboutOut(BaseModel):
    entity: str | None = Field(description="the entity found, null when none matched")
    type: str | None = None
    aliases: list[str] = []
    facts: list[FactOut] = Field(description="what is true now about it")
    related: list[str] = Field(description="entities within two hops")


def _fact_out(fact: Fact) -> FactOut:
    return FactOut(
        id=str(fact.id),
        claim=fact.claim,
        subject=fact.subject,
        predicate=fact.predicate,
        object=fact.object,
        value=fact.value,
        valid_from=fact.valid_from,
        superseded=fact.superseded_at is not None,
    )


async def remember_fact(
    ctx: Ctx,
    subject: Annotated[
        str, Field(description="who or what the fact is about; '@user' for the user")
    ],
    predicate: Annotated[
        str, Field(description="the relation, e.g. lives_in, works_for, sister, birthday")
    ],
    object: Annotated[
        str | None, Field(description="another entity (a person, place, organisation, …)")
    ] = None,
    value: Annotated[str | None, Field(description="or a literal value, e.g. a date")] = None,
    valid_from: Annotated[
        datetime | None, Field(description="since when it holds, ISO 8601, if not now")
    ] = None,
) -> FactOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        fact = await owner.memory.add_fact(
            subject,
            predicate,
            user_id=owner.user_id,
            object=object,
            value=value,
            valid_from=valid_from,
            source="mcp",
        )
    return _fact_out(fact)


async def about_entity(
    ctx: Ctx, name: Annotated[str, Field(description="a person, place, project, … by name")]
) -> AboutOut:
    owner = ctx.request_context.lifespan_context
    with _tool_errors():
        found = await owner.memory.entities(user_id=owner.user_id, q=name, limit=1)
        if not found:
            return AboutOut(entity=None, facts=[], related=[])
        detail = await owner.memory.entity(found[0].id, user_id=owner.user_id)
        view = await owner.memory.entity_graph(found[0].id, user_id=owner.user_id, depth=2)
    return AboutOut(
        entity=detail.name,
        type=detail.type,
        aliases=detail.aliases,
        facts=[_fact_out(f) for f in detail.facts],
        related=[n.name for n in view.nodes if n.id != detail.id],
    )


def _hints(tool: Tool) -> ToolAnnotations:
    if tool.read_only:
        return ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return ToolAnnotations(destructive_hint=tool.destructive, open_world_hint=False)


def tools() -> list[tuple[Tool, Callable[..., Any]]]:
    """The operations marked as tools in the operation table, each with its function here
    (named as the tool): the table says what the model reads, the function shapes the call."""
    here = sys.modules[__name__]
    return [(op.mcp, getattr(here, op.mcp.name)) for op in OPERATIONS if op.mcp is not None]


Lifespan = Callable[[MCPServer[Owner]], AbstractAsyncContextManager[Owner]]


def build_server(lifespan: Lifespan, *, log_level: LogLevel = "INFO") -> MCPServer[Owner]:
    """The server with its tools; ``lifespan`` hands them the store while it serves."""
    server: MCPServer[Owner] = MCPServer(
        "memvault",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level=log_level,
    )
    for tool, function in tools():
        server.add_tool(
            function, name=tool.name, description=tool.description, annotations=_hints(tool)
        )
    return server


def serve(
    settings: Settings,
    *,
    transport: Literal["stdio", "streamable-http"],
    tenant_id: str,
    user_id: str,
    host: str,
    port: int,
) -> None:
    """Serve until the client disconnects (stdio) or the process is interrupted (HTTP)."""
    _log_to_stderr(settings.log_level)
    try:
        if transport == "stdio":
            _serve_stdio(settings, tenant_id=tenant_id, user_id=user_id)
        else:
            anyio.run(
                partial(_serve_http, settings, tenant_id=tenant_id, user_id=user_id),
                host,
                port,
            )
    except BaseExceptionGroup as group:
        # The store opens inside the SDK's task groups: surface why it could not, plainly.
        error = _memvault_error(group)
        if error is None:
            raise
        raise error from None


def _log_to_stderr(level: LogLevel) -> None:
    """Plain lines on stderr (stdout belongs to the protocol): memvault's and the SDK's at
    ``level``, the libraries' (pgserver, alembic, sentence-transformers) only when they warn.
    Set before the SDK's own set-up, which then leaves it alone."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for name in ("memvault", "mcp"):
        logging.getLogger(name).setLevel(level)


def _serve_stdio(settings: Settings, *, tenant_id: str, user_id: str) -> None:
    @asynccontextmanager
    async def open_store(_: MCPServer[Owner]) -> AsyncIterator[Owner]:
        # Opened once the SDK has moved stdout aside, so nothing the start-up prints (the
        # embedded PostgreSQL, migrations) can reach the wire.
        memory = await AsyncMemory.open(settings, tenant_id=tenant_id, actor="mcp")
        try:
            yield Owner(memory, user_id)
        finally:
            await memory.close()

    build_server(open_store, log_level=settings.log_level).run("stdio")


async def _serve_http(
    settings: Settings, host: str, port: int, *, tenant_id: str, user_id: str
) -> None:
    # Opened before the port: a bad configuration fails here with its message.
    memory = await AsyncMemory.open(settings, tenant_id=tenant_id, actor="mcp")
    closed = anyio.Event()

    async def close() -> None:
        if not closed.is_set():
            closed.set()
            await memory.close()

    @asynccontextmanager
    async def lend_store(_: MCPServer[Owner]) -> AsyncIterator[Owner]:
        try:
            yield Owner(memory, user_id)
        finally:
            await close()  # in uvicorn's graceful shutdown, before it re-raises SIGTERM

    server = build_server(lend_store, log_level=settings.log_level)
    try:
        await server.run_streamable_http_async(host=host, port=port)
    finally:
        await close()  # uvicorn never started the app (the port was taken)


def _memvault_error(exc: BaseException) -> MemvaultError | None:
    if isinstance(exc, MemvaultError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if found := _memvault_error(inner):
                return found
    return None
