"""A LangGraph ``BaseStore`` on memvault: ``MemvaultStore(memory, user_id=...)``.

How items map onto memories (docs/integrations.md says the same for users):

* A store is one memvault user (``user_id``) in one app (``app_id``): its whole namespace tree
  lives there, so erasing or exporting that user takes the store's items with it.
* An item is one memory whose sealed content is its value as compact JSON (keys in the order
  given), so the value comes back exactly as put and is encrypted at rest like any memory. It
  is stored with ``infer=False`` (no dedup, no merge, no rewriting) and PII policy ``allow``
  (redacting would change the value).
* What search embeds and indexes is the memory's ``index_text``: the texts at the ``index``
  config's ``fields`` (or a put's own ``index`` list), one per line, as LangGraph's stores
  extract them; the whole value's JSON without an ``index`` config or with ``fields=["$"]``;
  nothing (``index_text=""``) for ``put(..., index=False)`` or a value with no text at those
  fields, so query searches never find it while get, list and filter searches do.
* The item's namespace, key, timestamps and TTL live in the memory's metadata under
  ``"langgraph"``: ``namespace`` (the tuple as a JSON array text), ``prefixes`` (every leading
  part, so a namespace prefix is one containment filter), ``key``, ``created_at``,
  ``updated_at`` and ``ttl`` (minutes, what a refresh extends by). The memory's source is
  ``"langgraph"``, so the store never sees the user's other memories and they never see
  filters they did not ask for.
* A put over an existing key writes the new memory, then deletes the old one (the new one
  keeps the item's ``created_at``); reads take the newest row, so a reader never sees no item.
* TTL is the memory's ``expires_at``; a read with ``refresh_ttl`` moves it in place (an update
  of the same memory), so the item keeps its id and its place in every ranking and page.
* Concurrent calls on one store are batched as LangGraph's async stores batch them: the
  operations that arrive while a batch runs wait in the store (no deadline, nothing refused)
  and run together as the next batch, identical reads once, the last put of a key winning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from memvault.errors import NotFound
from memvault.integrations._faces import Bridge
from memvault.models import MemoryInput

SOURCE = "langgraph"
META = "langgraph"
PAGE = 100  # the service's largest list/search page by default
# How many of a batch's service calls run at once. The rest wait in the store, never in the
# connection pool, whose deadline (pool_timeout_s) answers StoreUnavailable: thousands of
# concurrent calls each taking a connection (LangGraph's test_large_batches_async: 6,000 and
# 60,000) met it.
SLOTS = 4
# A batch that needs at least this many keys of one namespace reads the namespace's items a
# page at a time instead of one query per key (at most one page per this many keys, so it
# never makes more queries than the keys would).
KEYS_PER_PAGE = 8


IndexFields = list[tuple[str, str | list[str]]]
R = TypeVar("R")


def _fields(paths: list[str]) -> IndexFields:
    return [(p, p if p == "$" else tokenize_path(p)) for p in paths]


def _index_text(value: dict[str, Any], fields: IndexFields | None) -> str | None:
    """What search should find ``value`` by: None for the whole value (the memory's content
    itself), else the texts at ``fields`` one per line ("" when there are none)."""
    if fields is None or [p for p, _ in fields] == ["$"]:
        return None
    return "\n".join(text for _, path in fields for text in get_text_at_path(value, path))


def _ns_text(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def _canonical(value: dict[str, Any]) -> str:
    # Key order is kept: a caller that put {"b", "a"} reads back {"b", "a"}.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _compare(item_value: Any, wanted: Any) -> bool:
    """A filter value against an item's field, as LangGraph's stores compare them (JSONB-like:
    nested objects by containment, lists element by element, ``$`` operators)."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, op, arg) for op, arg in wanted.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(wanted)
            and all(_compare(a, b) for a, b in zip(item_value, wanted, strict=True))
        )
    return bool(item_value == wanted)


def _field(value: dict[str, Any], key: str) -> Any:
    """What a filter key names in an item's value: the key itself, as LangGraph's Postgres and
    in-memory stores read it, else, for a key with dots that is not a key of the value, the
    nested path it spells, as LangGraph's SQLite store reads it (``"user.access-level"``)."""
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, dict) or part not in found:
            return None
        found = found[part]
    return found


def _operator(value: Any, operator: str, arg: Any) -> bool:
    if operator == "$eq":
        return bool(value == arg)
    if operator == "$ne":
        return bool(value != arg)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if value is None:
            return False
        left, right = float(value), float(arg)
        return {
            "$gt": left > right,
            "$gte": left >= right,
            "$lt": left < right,
            "$lte": left <= right,
        }[operator]
    raise ValueError(f"Unsupported operator: {operator}")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or k == p for k, p in pairs)


def _score(hit: Any) -> float:
    """LangGraph's score: the cosine similarity of the query's embedding to the item's, as its
    stores compute it (memvault's best chunk), so a query that is not the item's text scores
    below one that is. Not the hit's relevance, which counts a query whose every word the item
    holds as a full match ("test!@#" against "test document": 1.0, LangGraph's
    test_vector_search_edge_cases), nor its score, which only orders one result. An item found
    by its words alone has no similarity: its relevance stands in."""
    return float(hit.similarity) if hit.similarity is not None else float(hit.relevance)


class _Row:
    """One stored item: the memory's id and the item it holds."""

    __slots__ = ("expires", "id", "item", "ttl")

    def __init__(self, record: Any) -> None:
        meta = record.metadata[META]
        self.id = record.id
        self.ttl: float | None = meta.get("ttl")
        self.expires = record.expires_at
        self.item = Item(
            value=json.loads(record.content),
            key=meta["key"],
            namespace=tuple(json.loads(meta["namespace"])),
            created_at=datetime.fromisoformat(meta["created_at"]),
            updated_at=datetime.fromisoformat(meta["updated_at"]),
        )


Hit = tuple[_Row, float | None]


def _newest(rows: Iterable[_Row]) -> dict[tuple[tuple[str, ...], str], _Row]:
    kept: dict[tuple[tuple[str, ...], str], _Row] = {}
    for row in rows:
        ident = (row.item.namespace, row.item.key)
        if ident not in kept or row.item.updated_at > kept[ident].item.updated_at:
            kept[ident] = row
    return kept


class MemvaultStore(BaseStore):
    """LangGraph's key-value store with search, kept in memvault.

    ``memory`` is any of ``Memory``, ``AsyncMemory``, ``MemoryClient`` or
    ``AsyncMemoryClient``. With an async one, use the ``a*`` methods (or the sync ones from
    another thread); with a sync one, both work. ``index`` is LangGraph's ``IndexConfig``: its
    ``fields`` name what search finds an item by (default: the whole value); its ``embed`` and
    ``dims`` are not used, memvault's configured embedding model embeds every text. ``ttl``
    configures default TTLs (minutes) and refresh-on-read as LangGraph's ``TTLConfig``.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Any,
        *,
        user_id: str,
        app_id: str = "default",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._bridge = Bridge(memory)
        self._waiting: list[tuple[asyncio.Future[list[Result]], list[Op]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.user_id = user_id
        self.app_id = app_id
        self.index_config = index
        self.ttl_config = ttl
        self._fields = _fields(list(index.get("fields") or ["$"])) if index else None

    # --- BaseStore ----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._bridge.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._bridge.arun(self._batch(list(ops)))

    # --- the work, on the service's loop ------------------------------------------------------

    async def _batch(self, ops: list[Op]) -> list[Result]:
        """Queue ``ops`` for the store's next batch and wait for their results."""
        if not ops:
            return []
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[list[Result]] = loop.create_future()
        self._waiting.append((waiter, ops))
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._drain())
        return await waiter

    async def _drain(self) -> None:
        """Run what waits, one merged batch at a time, until nothing does."""
        while self._waiting:
            taken = [(w, ops) for w, ops in self._waiting if not w.done()]
            self._waiting = []
            if not taken:
                continue
            try:
                merged, where = _merge([ops for _, ops in taken])
                results = await self._run(merged)
            except asyncio.CancelledError:
                for waiter, _ in taken + self._waiting:
                    waiter.cancel()
                raise
            except Exception as error:
                if len(taken) == 1:
                    _settle(taken[0][0], error=error)
                    continue
                # One caller's bad operation (an unknown filter operator, say) fails that
                # caller alone: each batch runs again on its own.
                for waiter, ops in taken:
                    if waiter.done():
                        continue
                    try:
                        _settle(waiter, await self._run(ops))
                    except Exception as own:
                        _settle(waiter, error=own)
                continue
            for (waiter, _), places in zip(taken, where, strict=True):
                _settle(waiter, [results[i] for i in places])

    async def _run(self, ops: list[Op]) -> list[Result]:
        reads = _Reads(
            self._records,
            self._rows,
            self._pages,
            whole=any(isinstance(op, ListNamespacesOp) for op in ops),
        )
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        # Reads answer from the state before the batch's writes, and the last put of a key in a
        # batch wins: what LangGraph's InMemoryStore does.
        for op in ops:
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
            elif not isinstance(op, GetOp | SearchOp | ListNamespacesOp):
                raise ValueError(f"Unknown operation type: {type(op)}")
        await reads.prefetch(
            [(op.namespace, op.key) for op in ops if isinstance(op, GetOp)] + list(puts)
        )

        async def read(op: Op) -> Result:
            if isinstance(op, GetOp):
                return await self._get(op, reads)
            if isinstance(op, SearchOp):
                return await self._search(op, reads)
            if isinstance(op, ListNamespacesOp):
                return await self._list_namespaces(op, reads)
            return None

        results = await _bounded([read(op) for op in ops])
        await self._write(list(puts.values()), reads)
        return results

    async def _records(self, metadata: dict[str, Any] | None) -> list[Any]:
        service = self._bridge.service
        found: list[Any] = []
        cursor: str | None = None
        while True:
            page = await service.list(
                user_id=self.user_id,
                app_id=self.app_id,
                source=SOURCE,
                metadata=metadata,
                limit=PAGE,
                cursor=cursor,
            )
            found.extend(page.results)
            cursor = page.next_cursor
            if cursor is None:
                return found

    async def _rows(self, namespace: tuple[str, ...], key: str) -> list[_Row]:
        wanted = {META: {"namespace": _ns_text(namespace), "key": key}}
        return [_Row(r) for r in await self._records(wanted)]

    async def _pages(self, namespace: tuple[str, ...], pages: int) -> tuple[list[_Row], bool]:
        """Up to ``pages`` pages of the namespace's items, and whether they are all of them."""
        cursor: str | None = None
        found: list[_Row] = []
        for _ in range(pages):
            page = await self._bridge.service.list(
                user_id=self.user_id,
                app_id=self.app_id,
                source=SOURCE,
                metadata={META: {"namespace": _ns_text(namespace)}},
                limit=PAGE,
                cursor=cursor,
            )
            found += [_Row(r) for r in page.results]
            cursor = page.next_cursor
            if cursor is None:
                return found, True
        return found, False

    async def _get(self, op: GetOp, reads: _Reads) -> Item | None:
        rows = reads.rows(op.namespace, op.key)
        if not rows:
            return None
        row = max(rows, key=lambda r: r.item.updated_at)
        if op.refresh_ttl:
            await self._refresh(row)
        return row.item

    async def _write(self, puts: list[PutOp], reads: _Reads) -> None:
        """A batch's puts: the new values stored together (one embedding call and one
        transaction for each hundred), then the rows they replace and the deleted keys' rows
        removed, so a reader never sees a key missing."""
        values = [put for put in puts if put.value is not None]
        for start in range(0, len(values), PAGE):
            await self._bridge.service.add_many(
                [
                    self._input(put, reads.rows(put.namespace, put.key))
                    for put in values[start : start + PAGE]
                ]
            )
        await _bounded(
            [self._delete(row) for put in puts for row in reads.rows(put.namespace, put.key)]
        )

    def _input(self, op: PutOp, old: list[_Row]) -> MemoryInput:
        assert op.value is not None
        value = dict(op.value)
        ttl = op.ttl if isinstance(op.ttl, int | float) else None
        index = list(op.index) if isinstance(op.index, list | tuple) else op.index
        now = datetime.now(UTC)
        created = min((r.item.created_at for r in old), default=now)
        meta = {
            "namespace": _ns_text(op.namespace),
            "prefixes": [_ns_text(op.namespace[:n]) for n in range(1, len(op.namespace) + 1)],
            "key": op.key,
            "created_at": created.isoformat(),
            "updated_at": now.isoformat(),
            "ttl": ttl,
        }
        fields = self._fields if index is None else (_fields(index) if index else [])
        return MemoryInput(
            content=_canonical(value),
            index_text=_index_text(value, fields),
            user_id=self.user_id,
            app_id=self.app_id,
            source=SOURCE,
            metadata={META: meta},
            expires_at=now + timedelta(minutes=ttl) if ttl is not None else None,
            infer=False,
            pii_policy="allow",
        )

    async def _refresh(self, row: _Row) -> None:
        """A read's TTL refresh: the same memory's expiry moved, nothing else. Rewriting the
        item as a new memory gave it a new id, and with it a new tie-break among equal
        scores, so paging a query with ``offset`` repeated and skipped items."""
        if row.ttl is None:
            return
        expires = datetime.now(UTC) + timedelta(minutes=row.ttl)
        # Gone meanwhile (deleted, or expired since it was read): nothing left to refresh.
        with contextlib.suppress(NotFound):
            await self._bridge.service.update(row.id, user_id=self.user_id, expires_at=expires)

    async def _delete(self, row: _Row) -> None:
        # Already gone (a concurrent delete, or expired) is what a delete wants.
        with contextlib.suppress(NotFound):
            await self._bridge.service.delete(row.id, user_id=self.user_id)

    def _in_prefix(self, prefix: tuple[str, ...]) -> dict[str, Any] | None:
        return {META: {"prefixes": [_ns_text(prefix)]}} if prefix else None

    async def _search(self, op: SearchOp, reads: _Reads) -> list[SearchItem]:
        def wanted(item: Item) -> bool:
            return all(_compare(_field(item.value, k), v) for k, v in (op.filter or {}).items())

        if not op.query:
            rows = list(
                _newest(
                    _Row(r) for r in await reads.records(self._in_prefix(op.namespace_prefix))
                ).values()
            )
            rows.sort(key=lambda r: r.item.updated_at, reverse=True)
            hits: list[tuple[_Row, float | None]] = [(r, None) for r in rows if wanted(r.item)]
        else:
            hits = await self._query(op, wanted, reads)
        page = hits[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            for row, _ in page:
                await self._refresh(row)
        return [
            SearchItem(
                namespace=row.item.namespace,
                key=row.item.key,
                value=row.item.value,
                created_at=row.item.created_at,
                updated_at=row.item.updated_at,
                score=score,
            )
            for row, score in page
        ]

    async def _ask(self, query: str, metadata: dict[str, Any] | None, limit: int) -> Any:
        return await self._bridge.service.search(
            query,
            user_id=self.user_id,
            app_id=self.app_id,
            source=SOURCE,
            metadata=metadata,
            limit=limit,
        )

    async def _query(
        self, op: SearchOp, wanted: Callable[[Item], bool], reads: _Reads
    ) -> list[Hit]:
        assert op.query is not None
        prefix = self._in_prefix(op.namespace_prefix)
        wide = PAGE if op.filter else min(PAGE, op.offset + op.limit)
        found = await self._ask(op.query, prefix, wide)
        hits: list[Hit] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for hit in found.results:
            row = _Row(hit)
            ident = (row.item.namespace, row.item.key)
            if ident not in seen and wanted(row.item):
                hits.append((row, _score(hit)))
            seen.add(ident)
        short = len(hits) < op.offset + op.limit
        if op.filter and short and len(found.results) >= PAGE:
            hits += await self._beyond_cut(op.query, prefix, wanted, seen, reads)
        return hits

    async def _beyond_cut(
        self,
        query: str,
        prefix: dict[str, Any] | None,
        wanted: Callable[[Item], bool],
        seen: set[tuple[tuple[str, ...], str]],
        reads: _Reads,
    ) -> list[Hit]:
        """The items that pass the filter beyond the best matches a search page holds, each
        scored against the query, best first: the filter reads the value, which only the
        listing decrypts, so it cannot narrow the search itself (LangGraph's stores filter
        before they rank: a filter that selects the lowest-ranked item still finds it)."""
        rows = _newest(_Row(r) for r in await reads.records(prefix))
        scored: list[Hit] = []
        for ident, row in rows.items():
            if ident in seen or not wanted(row.item):
                continue
            one = await self._ask(
                query, {META: {"namespace": _ns_text(ident[0]), "key": ident[1]}}, 1
            )
            # An unindexed item has no match: a query search never returns it.
            scored += [(row, _score(hit)) for hit in one.results]
        scored.sort(key=lambda pair: -(pair[1] or 0.0))
        return scored

    async def _list_namespaces(self, op: ListNamespacesOp, reads: _Reads) -> list[tuple[str, ...]]:
        namespaces = {_Row(r).item.namespace for r in await reads.records(None)}
        chosen = [
            ns
            for ns in namespaces
            if all(_matches(condition, ns) for condition in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]


Key = tuple[tuple[str, ...], str]


class _Reads:
    """What one batch reads, from the state before its writes: each listing once however many
    of the batch's operations ask for it, and the rows of the keys its gets and puts name."""

    def __init__(
        self,
        listing: Callable[[dict[str, Any] | None], Awaitable[list[Any]]],
        lookup: Callable[[tuple[str, ...], str], Awaitable[list[_Row]]],
        pages: Callable[[tuple[str, ...], int], Awaitable[tuple[list[_Row], bool]]],
        *,
        whole: bool,
    ) -> None:
        # The store's own readers, handed over: a batch reads through them, not into the store.
        self._listing, self._lookup, self._pages = listing, lookup, pages
        # The batch lists the whole store anyway (it lists namespaces): its other listings and
        # lookups are read from that one.
        self._whole = whole
        self._listings: dict[str, asyncio.Future[list[Any]]] = {}
        self._rows: dict[Key, list[_Row]] = {}

    async def records(self, metadata: dict[str, Any] | None) -> list[Any]:
        prefixes = (metadata or {}).get(META, {}).get("prefixes")
        if self._whole and metadata is not None and metadata == {META: {"prefixes": prefixes}}:
            return [
                r
                for r in await self.records(None)
                if all(p in r.metadata[META].get("prefixes", []) for p in prefixes)
            ]
        key = json.dumps(metadata, sort_keys=True)
        if key not in self._listings:
            self._listings[key] = asyncio.ensure_future(self._listing(metadata))
        return await self._listings[key]

    def rows(self, namespace: tuple[str, ...], key: str) -> list[_Row]:
        return self._rows.get((namespace, key), [])

    async def prefetch(self, keys: list[Key]) -> None:
        if self._whole:
            needed = set(keys)
            for row in map(_Row, await self.records(None)):
                ident = (row.item.namespace, row.item.key)
                if ident in needed:
                    self._rows.setdefault(ident, []).append(row)
            return
        by_namespace: dict[tuple[str, ...], set[str]] = {}
        for namespace, key in dict.fromkeys(keys):
            by_namespace.setdefault(namespace, set()).add(key)
        single: list[Key] = []
        for namespace, wanted in by_namespace.items():
            if len(wanted) >= KEYS_PER_PAGE:
                left = await self._namespace(namespace, wanted, len(wanted) // KEYS_PER_PAGE)
                single += [(namespace, key) for key in left]
            else:
                single += [(namespace, key) for key in wanted]
        await _bounded([self._one(namespace, key) for namespace, key in single])

    async def _namespace(
        self, namespace: tuple[str, ...], wanted: set[str], pages: int
    ) -> set[str]:
        """Reads up to ``pages`` pages of the namespace's items; the wanted keys it could not
        settle (the namespace holds more) are left for one query each."""
        found, whole = await self._pages(namespace, pages)
        for row in found:
            if row.item.key in wanted:
                self._rows.setdefault((namespace, row.item.key), []).append(row)
        if whole:
            return set()
        return wanted - {row.item.key for row in found}

    async def _one(self, namespace: tuple[str, ...], key: str) -> None:
        self._rows[(namespace, key)] = await self._lookup(namespace, key)


async def _bounded(work: list[Coroutine[Any, Any, R]]) -> list[R]:
    """Awaits ``work``, at most ``SLOTS`` at a time, all of it to its end; the results in
    ``work``'s order, or the first error."""
    slots = asyncio.Semaphore(SLOTS)

    async def one(step: Coroutine[Any, Any, R]) -> R:
        async with slots:
            return await step

    done = await asyncio.gather(*(one(step) for step in work), return_exceptions=True)
    for outcome in done:
        if isinstance(outcome, BaseException):
            raise outcome
    return done  # type: ignore[return-value]


def _merge(batches: list[list[Op]]) -> tuple[list[Op], list[list[int]]]:
    """The callers' batches as one, each read once (LangGraph's async stores dedupe a batch
    the same way), and where each caller's results are in it."""
    merged: list[Op] = []
    seen: dict[Any, int] = {}
    where: list[list[int]] = []
    for ops in batches:
        places: list[int] = []
        for op in ops:
            if isinstance(op, PutOp):
                places.append(len(merged))
                merged.append(op)
                continue
            ident: Any = op
            try:
                hash(op)
            except TypeError:  # a search with a filter holds a dict
                ident = (type(op), repr(op))
            if ident not in seen:
                seen[ident] = len(merged)
                merged.append(op)
            places.append(seen[ident])
        where.append(places)
    return merged, where


def _settle(
    waiter: asyncio.Future[list[Result]],
    results: list[Result] | None = None,
    *,
    error: BaseException | None = None,
) -> None:
    if waiter.done():  # the caller gave up (cancelled) meanwhile
        return
    if error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(results or [])


__all__ = ["MemvaultStore"]
