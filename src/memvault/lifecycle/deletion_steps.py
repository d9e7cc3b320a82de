"""The steps of a deletion, one per way the catalogue says a store is erased (db/catalogue.py):
rows keyed by a memory, the graph, a user's cognitive rows and turns, and the stores outside
the deleting transaction (the embedding cache, working memory in Redis).

Which stores a deletion covers is the catalogue's, read at each deletion; nothing registers
here. A kind or an outside store the catalogue names without a step here fails the test that
reads both (tests/test_data_catalogue.py).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memvault.cognitive.working import TURNS
from memvault.cognitive.working_store import RedisWorkingStore, WorkingMemory, list_of, open_store
from memvault.db import catalogue, graph_admin
from memvault.db import cognitive as cognitive_db
from memvault.db import webhooks as webhooks_db
from memvault.db.catalogue import Place
from memvault.db.erasure import delete_by_memory
from memvault.db.records import DoomedMemory
from memvault.embedding.chunking import chunk, clean
from memvault.errors import StoreUnavailable
from memvault.lifecycle.reports import DeletionScope
from memvault.models import TURN_SOURCE

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend


@dataclass(frozen=True)
class Targets:
    """What one deletion takes: the tenant, the user (for user scope), the memory rows."""

    tenant_id: str
    scope: DeletionScope
    user_id: str | None
    rows: Sequence[DoomedMemory]
    # Every version of each memory's text (current and in history), opened: for the caches.
    texts: dict[uuid.UUID, list[str]]
    # Memories whose vectors came in several chunks (each chunk's text was cached apart).
    chunked: frozenset[uuid.UUID] = frozenset()
    # A user-scope deletion limited to one app (None: every app of the user).
    app_id: str | None = None
    # A user erased as a whole (not one app's memories): what is theirs beyond memories goes.
    whole_user: bool = False
    # Texts derived from the memories (fact claims, entity names), by owner: the embedding
    # cache may hold their vectors too.
    derived: Sequence[tuple[str, str]] = ()
    # A conversation-scope deletion's conversation (its rows beyond the turns go too).
    conversation_id: str | None = None

    @property
    def ids(self) -> list[uuid.UUID]:
        return [r.id for r in self.rows]


InStore = Callable[["AsyncConnection", Targets], Awaitable[int]]
Outside = Callable[["Backend", Targets], Awaitable[int]]


def in_store() -> list[tuple[str, InStore]]:
    """The steps inside the deleting transaction, named as the receipt counts them, in the
    catalogue's order (the graph counted once, as ``graph``)."""
    steps: list[tuple[str, InStore]] = []
    for place in catalogue.CATALOGUE:
        if place.erase == "by_memory":
            steps.append((place.name, _by_memory(place)))
        elif place.erase == "graph" and all(name != "graph" for name, _ in steps):
            steps.append(("graph", _graph_rows))
        elif place.erase in ("owned", "turns"):
            steps.append((place.name, _owned_rows(place)))
        elif place.erase == "events":
            steps.append((place.name, _event_rows))
    return steps


def outside() -> list[tuple[str, Outside]]:
    """The steps outside the transaction (run just before it, so the receipt counts them and
    none of them waits for a connection while the deletion holds one)."""
    return [(p.name, OUTSIDE[p.name]) for p in catalogue.places(erase="outside")]


def _by_memory(place: Place) -> InStore:
    async def delete(conn: AsyncConnection, targets: Targets) -> int:
        return await delete_by_memory(conn, catalogue.table(place), targets.tenant_id, targets.ids)

    return delete


async def _graph_rows(conn: AsyncConnection, targets: Targets) -> int:
    """Graph rows the owner has beyond what the memories derived (facts stated directly).
    A memory's own facts, mentions and orphaned entities go with it by the graph's triggers."""
    if targets.scope == "tenant":
        return await graph_admin.delete_tenant(conn, targets.tenant_id)
    if targets.scope == "user" and targets.user_id is not None:
        return await graph_admin.delete_owner(
            conn, targets.tenant_id, targets.user_id, targets.app_id
        )
    return 0


async def _event_rows(conn: AsyncConnection, targets: Targets) -> int:
    """Webhook deliveries not yet purged name their user: a whole user's erasure takes
    theirs, a tenant's every one (the erasure's own event is written after this)."""
    takes, user_id = _owner(targets)
    if not takes:
        return 0
    return await webhooks_db.delete_deliveries(conn, targets.tenant_id, user_id)


# --- cognitive rows ----------------------------------------------------------------------------


def _owner(targets: Targets) -> tuple[bool, str | None]:
    """Whether this deletion takes cognitive rows at all, and whose (None: the tenant's).
    Cognitive rows belong to a user, not to an app, so erasing one app's memories keeps them."""
    if targets.scope == "tenant":
        return True, None
    if targets.scope == "user" and targets.whole_user:
        return True, targets.user_id
    return False, None


def _owned_rows(place: Place) -> InStore:
    table = catalogue.table(place)
    turns = place.erase == "turns"

    async def delete(conn: AsyncConnection, targets: Targets) -> int:
        takes, user_id = _owner(targets)
        tenant_id, conversation = targets.tenant_id, targets.conversation_id
        if conversation is not None and targets.user_id is not None:
            if turns:
                return await cognitive_db.delete_turns_of(conn, tenant_id, targets.ids)
            if not place.of_conversation:
                return 0
            return await cognitive_db.delete_conversation_rows(
                conn, table, tenant_id, targets.user_id, conversation
            )
        # A deleted memory's turn goes whatever the scope: its words were that memory.
        gone = await cognitive_db.delete_turns_of(conn, tenant_id, targets.ids) if turns else 0
        if not takes:
            return gone
        return gone + await cognitive_db.delete_owned(conn, table, tenant_id, user_id)

    return delete


# --- outside the transaction -------------------------------------------------------------------


async def _embedding_cache(backend: Backend, targets: Targets) -> int:
    """The entries of the memories' texts, of what was derived from them, and (a user or a
    tenant erased) every entry made for its users: their queries too."""
    cache = backend.embeddings.cache
    if cache is None:
        return 0
    keys = {
        k
        for row in targets.rows
        for text in targets.texts[row.id]
        for k in _cache_keys(backend, row, text, chunks=row.id in targets.chunked)
    }
    for user_id, text in targets.derived:
        keys.update(_text_keys(backend, targets.tenant_id, user_id, [text], None))
    try:
        forgotten = await cache.forget_many(sorted(keys))
        for tag in _owner_tags(backend, targets):
            forgotten += await cache.forget_owned(tag)
        return forgotten
    except Exception as exc:  # redis raises many unrelated types; any of them fails this
        raise StoreUnavailable(
            "The embedding cache could not be cleared, so nothing was deleted; try again.",
            details={"store": "embedding_cache"},
        ) from exc


def _owner_tags(backend: Backend, targets: Targets) -> list[bytes]:
    """The tags an erasure forgets every entry under: the user's, or the tenant's."""
    if targets.scope == "user" and targets.whole_user and targets.user_id is not None:
        return backend.embeddings.owner_tags((targets.tenant_id, targets.user_id))
    if targets.scope == "tenant":
        return backend.embeddings.tenant_tags(targets.tenant_id)
    return []


def _text_keys(
    backend: Backend, tenant_id: str, user_id: str, pieces: Sequence[str], model: str | None
) -> set[bytes]:
    """Keys of these texts for every model that may have embedded them, made by the user's
    calls or by the worker's batches (no owner), under every secret held."""
    limit = backend.settings.embedding_max_chars
    service = backend.embeddings
    models = {service.primary.model_id, *(f.model_id for f in service.fallbacks)}
    if model:
        models.add(model)
    texts = sorted({*pieces, *(clean(p, limit) for p in pieces)})
    return {
        k
        for m in models
        for owner in (None, (tenant_id, user_id))
        for k in service.cache_keys(m, texts, owner)
    }


def _cache_keys(backend: Backend, row: DoomedMemory, text: str, *, chunks: bool) -> set[bytes]:
    """Every key the embedding cache may hold this text's vectors under: the whole text and,
    for a memory embedded in chunks, each chunk the worker makes (only then is the tokenizer
    needed: a delete never loads the model for nothing), for each model that may have
    embedded it."""
    settings, primary = backend.settings, backend.embeddings.primary
    whole = clean(text, settings.embedding_max_chars)
    pieces = {whole}
    if chunks:
        window = min(settings.chunk_tokens, primary.max_tokens)
        pieces.update(chunk(whole, primary.tokenizer(), window, settings.chunk_overlap))
    return _text_keys(backend, row.tenant_id, row.user_id, sorted(pieces), row.embedding_model)


async def _redis_working_memory(backend: Backend, targets: Targets) -> int:
    takes, user_id = _owner(targets)
    whole_session = targets.conversation_id is not None and targets.user_id is not None
    if not (takes or whole_session) or backend.settings.redis_url is None:
        return 0
    if backend.working is None:
        backend.working = open_store(backend.settings, backend.engine)
    store = backend.working
    if not isinstance(store, RedisWorkingStore):
        return 0
    if whole_session:
        assert targets.user_id is not None and targets.conversation_id is not None
        return await store.forget_conversation(
            targets.tenant_id, targets.user_id, targets.conversation_id
        )
    return await store.forget(targets.tenant_id, user_id)


async def _deleted_turns_in_sessions(backend: Backend, targets: Targets) -> int:
    """A deleted turn's words leave its session's working memory as well (an erased user's
    or tenant's sessions go whole, by the steps above)."""
    takes, _ = _owner(targets)
    if targets.conversation_id is not None:  # the whole session goes (the steps above)
        return 0
    sessions: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for row in targets.rows:
        session, turn = row.metadata.get("session_id"), row.metadata.get("turn")
        if row.source == TURN_SOURCE and isinstance(session, str) and isinstance(turn, int):
            sessions[(row.user_id, row.channel, session)].add(turn)
    if takes or not sessions:
        return 0
    settings = backend.settings
    if backend.working is None:
        backend.working = open_store(settings, backend.engine)
    working = WorkingMemory(
        backend.working,
        backend.keys,
        ttl_s=settings.working_ttl_s,
        max_turns=settings.working_max_turns,
        max_thoughts=settings.working_max_thoughts,
    )
    removed = 0
    for session, gone in sessions.items():
        held = list_of(await working.read(targets.tenant_id, session, TURNS, ""), TURNS)
        kept = [t for t in held if not (isinstance(t, dict) and t.get("index") in gone)]
        if len(kept) == len(held):
            continue
        removed += len(held) - len(kept)
        if kept:
            await working.put(targets.tenant_id, session, TURNS, "", kept)
        else:
            await working.store.delete(targets.tenant_id, session, TURNS, "")
    return removed


async def _vector_index(backend: Backend, targets: Targets) -> int:
    """An external vector index's points of what goes (a whole user's or tenant's: their
    collections), removed before the receipt is written; pgvector's went with the chunks.
    The index away fails the deletion: the receipt must not claim what is still there."""
    index = backend.vector_index
    if not index.fed:
        return 0
    takes, user_id = _owner(targets)
    if takes:
        return await index.drop(targets.tenant_id, user_id)
    by_user: dict[str, list[uuid.UUID]] = defaultdict(list)
    for row in targets.rows:
        by_user[row.user_id].append(row.id)
    return sum([await index.delete(targets.tenant_id, u, ids) for u, ids in by_user.items()])


# The stores outside PostgreSQL's transaction, by the name the catalogue gives them.
OUTSIDE: dict[str, Outside] = {
    "embedding_cache": _embedding_cache,
    "working_memory_redis": _redis_working_memory,
    "working_memory_turns": _deleted_turns_in_sessions,
    "vector_index": _vector_index,
}
