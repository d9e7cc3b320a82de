"""The audit log writer: rows gathered in memory and written in batches by a background task,
so recording a search costs a list append, never a round trip.

What is recorded depends on ``audit_level``: ``off`` nothing; ``writes`` every change (store,
update, delete, promote, merge, decay, export, import, tier); ``reads`` also every retrieval;
``verbose`` also the query text, sealed like content (bound to the tenant and the audit row's
id), never in plaintext. A batch that cannot be written while the store is away is counted and
logged and kept for the next flush, up to a bound; deletion receipts do not take this path: they
are written in the deleting transaction (``row_for`` + ``db.audit.insert_rows``).

The log is shared by every tenant, so no row may stop it: each row is repaired on the way in
(NUL and lone surrogates out of its text, non-finite numbers to null), and a batch the store
refuses for its data is written row by row, a row still refused set aside alone (counted as
``set_aside``, logged with its tenant and operation) while every other row goes in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import Iterator
from datetime import UTC, date, timedelta
from typing import TYPE_CHECKING, Any

from memvault.config import Settings
from memvault.crypto.envelope import KeyringSource
from memvault.db import audit
from memvault.db.audit import AuditEvent
from memvault.db.driver_errors import SERVER_REFUSED, SIDE_WORK_FAILED, refused_value
from memvault.db.sealed_columns import audit_query_aad
from memvault.db.units import reading, transaction
from memvault.logs import request_id
from memvault.metrics import AUDIT_ROWS

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)
READ_OPERATIONS = frozenset({"retrieve"})
_LEVELS = ("off", "writes", "reads", "verbose")
# Rows held while the store is away: beyond this the oldest are dropped (and counted).
MAX_PENDING = 100_000


def storable(value: Any) -> Any:
    """``value`` as PostgreSQL takes it in a text or ``jsonb`` column: NUL removed, a lone
    surrogate replaced, NaN and infinities as null (a row is repaired, never refused)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {storable(str(k)): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value


# A batch write that failed: the store refused it, or was away (an outage reaches here as
# StoreUnavailable, translated by the unit of work).
_WRITE_FAILED: tuple[type[BaseException], ...] = (*SIDE_WORK_FAILED, ValueError, OSError)


def _refused(exc: BaseException) -> bool:
    """Whether the store refused a row for what it holds (a value out of range, a broken
    constraint, text it cannot encode), as opposed to being away or failing as a whole (a
    partition it could not make): only such a row is set aside; anything else keeps the rows
    for the next flush."""
    return isinstance(exc, ValueError) or refused_value(exc)


def records(level: str, operation: str) -> bool:
    if level == "off":
        return False
    return operation not in READ_OPERATIONS or _LEVELS.index(level) >= _LEVELS.index("reads")


def settings_snapshot(settings: Settings) -> tuple[bytes, dict[str, Any]]:
    """The settings in force, secrets left out, and the hash audit rows refer to them by."""
    snapshot = json.loads(settings.model_dump_json(exclude=_secret_fields(settings)))
    digest = hashlib.sha256(json.dumps(snapshot, sort_keys=True).encode()).digest()[:16]
    return digest, snapshot


def _secret_fields(settings: Settings) -> set[str]:
    return {
        name
        for name, info in type(settings).model_fields.items()
        if "SecretStr" in repr(info.annotation)
    }


class Audit:
    def __init__(
        self, engine: AsyncEngine, ddl_engine: AsyncEngine, keys: KeyringSource, settings: Settings
    ) -> None:
        self._engine, self._ddl, self._keys = engine, ddl_engine, keys
        self.level = settings.audit_level
        self._flush_s = settings.audit_flush_ms / 1000
        self._batch = settings.audit_batch
        self.settings_id, self._snapshot = settings_snapshot(settings)
        self._pending: list[dict[str, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._days: set[date] = set()
        self._settings_saved = False
        # One flush at a time: an explicit flush waits for the background one in flight, so
        # whoever flushes then reads finds every row recorded before.
        self._flushing: asyncio.Lock | None = None
        self._closing = False

    def wants(self, operation: str) -> bool:
        return records(self.level, operation)

    def record(self, event: AuditEvent) -> None:
        """Queue a row for the next batch (a list append; the write happens in the background)."""
        if not self.wants(event.operation):
            return
        self._pending.append(self.row_for(event))
        if len(self._pending) > MAX_PENDING:
            dropped = len(self._pending) - MAX_PENDING
            del self._pending[:dropped]
            AUDIT_ROWS.labels("dropped").inc(dropped)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._flush_later())

    @contextlib.contextmanager
    def timed(self, event: AuditEvent) -> Iterator[AuditEvent]:
        """Time the block; record its outcome (an exception's code on failure) when it ends."""
        started = time.perf_counter()
        try:
            yield event
        except Exception as exc:
            event.success = False
            event.error_code = getattr(exc, "code", type(exc).__name__)
            raise
        finally:
            event.latency_ms = (time.perf_counter() - started) * 1000
            self.record(event)

    def row_for(self, event: AuditEvent) -> dict[str, Any]:
        values = {
            k: storable(getattr(event, k))
            for k in (
                "tenant_id",
                "at",
                "id",
                "operation",
                "memory_kind",
                "user_id",
                "actor",
                "session_id",
                "conversation_id",
                "source_channel",
                "target_channel",
                "memory_ids",
                "result_count",
                "latency_ms",
                "success",
                "error_code",
                "promotion_rule",
                "promotion_score",
                "details",
            )
        }
        values.update(
            request_id=request_id.get(),
            settings_id=self.settings_id,
            query_ciphertext=None,
            query_nonce=None,
            query_key_id=None,
        )
        if self.level == "verbose" and event.query is not None:
            sealed = self._keys.current(event.tenant_id).seal(
                event.query, audit_query_aad(event.tenant_id, event.id)
            )
            values.update(
                query_ciphertext=sealed.ciphertext,
                query_nonce=sealed.nonce,
                query_key_id=sealed.key_id,
            )
        return values

    async def _flush_later(self) -> None:
        if not self._closing:
            await asyncio.sleep(self._flush_s)
        await self.flush()

    async def flush(self) -> int:
        """Write everything queued so far; returns how many rows went in."""
        if self._flushing is None:
            self._flushing = asyncio.Lock()
        async with self._flushing:
            return await self._flush()

    async def _flush(self) -> int:
        written = 0
        while self._pending:
            batch, self._pending = self._pending[: self._batch], self._pending[self._batch :]
            try:
                await self.write(batch)
            except _WRITE_FAILED as exc:
                if not _refused(exc):
                    self._keep(batch, exc)
                    return written
                # One row the store refuses must not hold back the others (any tenant's).
                done, away = await self._row_by_row(batch)
                written += done
                if away:
                    return written
                continue
            written += len(batch)
        return written

    def _keep(self, batch: list[dict[str, Any]], exc: BaseException) -> None:
        self._pending[:0] = batch  # kept for the next flush
        AUDIT_ROWS.labels("failed").inc(len(batch))
        log.warning("audit write failed: %s; %d rows kept", type(exc).__name__, len(batch))

    async def _row_by_row(self, batch: list[dict[str, Any]]) -> tuple[int, bool]:
        """Write each row alone: (rows written, whether the store went away meanwhile, the
        rest of the batch then kept for the next flush)."""
        written = 0
        for n, row in enumerate(batch):
            try:
                await self.write([row])
            except _WRITE_FAILED as exc:
                if not _refused(exc):
                    self._keep(batch[n:], exc)
                    return written, True
                AUDIT_ROWS.labels("set_aside").inc()
                log.error(
                    "audit row set aside (%s): tenant %r, operation %r",
                    type(exc).__name__,
                    row.get("tenant_id"),
                    row.get("operation"),
                )
                continue
            written += 1
        return written, False

    async def write(self, rows: list[dict[str, Any]]) -> None:
        await self.ensure_days({r["at"].astimezone(UTC).date() for r in rows})
        async with transaction(self._engine, every_tenant=True) as conn:
            await self.remember_settings(conn)
            await audit.insert_rows(conn, rows)
        AUDIT_ROWS.labels("written").inc(len(rows))

    async def remember_settings(self, conn: Any) -> None:
        if not self._settings_saved:
            await audit.remember_settings(conn, self.settings_id, self._snapshot)
            self._settings_saved = True

    async def ensure_days(self, days: set[date]) -> None:
        """Partitions for these days (and the next), made by the table owner when missing."""
        missing = {d + timedelta(days=n) for d in days for n in (0, 1)} - self._days
        for day in sorted(missing):
            try:
                # Upkeep, even inside a keyed request (an erasure makes them before it
                # deletes): a request that fails after it has not written.
                async with transaction(self._ddl, side_work=True) as conn:
                    await audit.create_partition(conn, day)
            except SERVER_REFUSED:
                # Another process made it in the same instant: the catalogue says so now.
                async with reading(self._ddl) as conn:
                    if day not in await audit.partition_days(conn):
                        raise
            self._days.add(day)

    async def close(self) -> None:
        """Write what is queued. A background flush still asleep is cut short; one already
        writing finishes (cancelling it could lose the batch it holds)."""
        self._closing = True
        task = self._task
        if task is not None and not task.done():
            if self._flushing is not None and self._flushing.locked():
                with contextlib.suppress(Exception):
                    await task
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.flush()
