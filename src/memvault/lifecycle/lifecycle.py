"""``Lifecycle``: a tenant's memory over its lifetime — deletion with a receipt, the audit log,
export and import (memory health and its actions: ``lifecycle.health.Health``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import audit as audit_db
from memvault.db import cognitive as cognitive_db
from memvault.db import curated as curated_db
from memvault.db.sealed_columns import audit_query_aad
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading
from memvault.errors import InvalidInput, NotFound
from memvault.lifecycle import deletion, portable
from memvault.lifecycle.reports import (
    AuditEntry,
    AuditPage,
    BulkDeletion,
    DeletionReceipt,
    Growth,
    OverviewQuery,
    ReceiptsQuery,
    UserOverview,
    UsersQuery,
    UserSummary,
)
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    from memvault.context import TenantContext
    from memvault.db.records import AuditRow


def identifier(value: str, field: str) -> str:
    from memvault.models import Owner

    try:
        return Owner(user_id=value).user_id
    except ValueError:
        raise InvalidInput(
            f"{field} is not a valid identifier.", details={"field": field}
        ) from None


class Lifecycle:
    """Deletion with a receipt, the audit log, export and import: one tenant's data as a
    whole, over its lifetime."""

    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self.actor = context.actor

    # --- provable deletion -------------------------------------------------------------------

    @scoped_to_tenant
    async def erase(self, memory_id: UUID | str, *, user_id: str) -> DeletionReceipt:
        """Delete one memory and everything derived from it; answers the deletion receipt."""
        ident, owner = parse_id(memory_id), identifier(user_id, "user_id")
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.memory_where(self.tenant_id, ident, owner),
            scope="memory",
            user_id=owner,
            actor=self.actor,
        )

    @scoped_to_tenant
    async def erase_memories(
        self, memory_ids: list[UUID | str], *, user_id: str
    ) -> DeletionReceipt:
        """Delete several memories of one user and everything derived from them, in one
        transaction with one receipt; ids that are not this user's are left alone, and when
        none is, nothing happens (404)."""
        request: BulkDeletion = validated(BulkDeletion, user_id=user_id, memory_ids=memory_ids)
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.memories_where(
                self.tenant_id, request.user_id, list(dict.fromkeys(request.memory_ids))
            ),
            scope="memory",
            user_id=request.user_id,
            actor=self.actor,
        )

    @scoped_to_tenant
    async def deletion_receipts(
        self, *, user_id: str | None = None, limit: int = 50
    ) -> list[DeletionReceipt]:
        """The receipts of this tenant's deletions (one user's, if given), newest first: each
        is kept in its deletion's audit row (none are kept at ``audit_level=off``)."""
        query: ReceiptsQuery = validated(ReceiptsQuery, user_id=user_id, limit=limit)
        await self._backend.audit.flush()
        async with reading(self._backend.engine) as conn:
            found = await curated_db.receipts(
                conn, self.tenant_id, user_id=query.user_id, request_id=None, limit=query.limit
            )
        return [DeletionReceipt.model_validate(r) for r in found]

    @scoped_to_tenant
    async def deletion_receipt(self, request_id: str) -> DeletionReceipt:
        """One deletion's receipt, by its request id (404 when this tenant has none)."""
        ident = identifier(request_id, "request_id")
        async with reading(self._backend.engine) as conn:
            found = await curated_db.receipts(
                conn, self.tenant_id, user_id=None, request_id=ident, limit=1
            )
        if not found:
            raise NotFound("No deletion receipt with that request id.", details={"id": ident})
        return DeletionReceipt.model_validate(found[0])

    @scoped_to_tenant
    async def list_users(self, *, limit: int = 100) -> list[UserSummary]:
        """This tenant's users (anyone holding a memory, a conversation or a fact), with how
        many of each they hold, most recently active first."""
        query: UsersQuery = validated(UsersQuery, limit=limit)
        async with reading(self._backend.engine) as conn:
            rows = await curated_db.users(conn, self.tenant_id, query.limit)
        return [UserSummary.model_validate(r, from_attributes=True) for r in rows]

    @scoped_to_tenant
    async def user_overview(self, *, user_id: str, days: int = 14, weeks: int = 26) -> UserOverview:
        """What one user holds, each kind counted exactly, and how many memories they gained
        on each of the last ``days`` days and ``weeks`` weeks (UTC), every memory counted."""
        query: OverviewQuery = validated(OverviewQuery, user_id=user_id, days=days, weeks=weeks)
        now = datetime.now(UTC)
        today = now.replace(hour=0, minute=0, second=0, microsecond=0)
        first_day = today - timedelta(days=query.days - 1)
        first_week = today - timedelta(days=today.weekday() + 7 * (query.weeks - 1))
        async with reading(self._backend.engine) as conn:
            totals = await curated_db.user_totals(conn, self.tenant_id, query.user_id, now)
            daily = await curated_db.memories_per_day(
                conn, self.tenant_id, query.user_id, min(first_day, first_week)
            )
        return UserOverview(
            user_id=query.user_id,
            memories=totals.memories,
            conversations=totals.conversations,
            turns=totals.turns,
            turns_unconsolidated=totals.turns_unconsolidated,
            facts=totals.facts,
            entities=totals.entities,
            goals=totals.goals,
            per_day=_series(daily, first_day, timedelta(days=1), query.days),
            per_week=_series(daily, first_week, timedelta(weeks=1), query.weeks),
        )

    @scoped_to_tenant
    async def erase_conversation(self, conversation_id: str, *, user_id: str) -> DeletionReceipt:
        """Delete one conversation: its turns and everything derived from them, its tool
        calls, its session's working memory and the conversation itself; answers the
        receipt."""
        ident = identifier(conversation_id, "conversation_id")
        owner = identifier(user_id, "user_id")
        async with reading(self._backend.engine) as conn:
            if not await cognitive_db.conversation_exists(conn, self.tenant_id, owner, ident):
                raise NotFound("No such conversation for this user.", details={"id": ident})
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.conversation_where(self.tenant_id, owner, ident),
            scope="conversation",
            user_id=owner,
            actor=self.actor,
            conversation_id=ident,
        )

    @scoped_to_tenant
    async def erase_user(self, *, user_id: str, app_id: str | None = None) -> DeletionReceipt:
        """Delete every memory of a user (in one app, if given) and all derived from them;
        without an app, the user's whole history too."""
        owner = identifier(user_id, "user_id")
        if app_id is not None:
            app_id = identifier(app_id, "app_id")
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.user_where(self.tenant_id, owner, app_id),
            scope="user",
            user_id=owner,
            actor=self.actor,
            whole_user=app_id is None,
            app_id=app_id,
        )

    # --- the audit log -----------------------------------------------------------------------

    @scoped_to_tenant
    async def audit_log(
        self,
        *,
        user_id: str | None = None,
        operation: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
    ) -> AuditPage:
        """This tenant's audit rows, newest first (written in batches: a row appears within
        ``audit_flush_ms``; ``flush_audit`` waits for it)."""
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit is 1 to 1000.", details={"field": "limit"})
        await self._backend.audit.flush()
        async with reading(self._backend.engine) as conn:
            rows = await audit_db.read_rows(
                conn, self.tenant_id, user_id=user_id, operation=operation, since=since, limit=limit
            )
        return AuditPage(results=[self._audit_entry(r) for r in rows])

    async def flush_audit(self) -> int:
        """Write the audit rows queued so far now (they are written in the background)."""
        return await self._backend.audit.flush()

    def _audit_entry(self, row: AuditRow) -> AuditEntry:
        query = None
        ciphertext, nonce, key_id = row.query_ciphertext, row.query_nonce, row.query_key_id
        if ciphertext is not None and nonce is not None and key_id is not None:
            from memvault.crypto.envelope import Sealed

            query = self._backend.keys.current(row.tenant_id).open(
                Sealed(ciphertext, nonce, key_id),
                audit_query_aad(row.tenant_id, row.id),
            )
        values = {
            k: getattr(row, k) for k in AuditEntry.model_fields if k not in {"query", "settings_id"}
        }
        return AuditEntry(
            **values,
            settings_id=row.settings_id.hex() if row.settings_id else None,
            query=query,
        )

    # --- export / import ---------------------------------------------------------------------

    @scoped_to_tenant
    async def export_memories(self, *, user_id: str) -> list[dict[str, Any]]:
        """A user's whole memory as JSON-ready dicts, one per line of an export file (format
        2, docs/export-format.md): memories with history and vectors, the graph, conversations
        and turns, tool invocations, strategies, goals and profiles."""
        owner = identifier(user_id, "user_id")
        with self._context.audit("export", owner) as event:
            lines = await portable.export_user(self._backend, self.tenant_id, owner)
            event.result_count = len(lines)
        return lines

    @scoped_to_tenant
    async def import_memories(self, lines: list[Any]) -> dict[str, int]:
        """Load an export (format 2, or 1) into this tenant, ids kept; rows the user has
        already are skipped, so an import can run twice. Every line is checked before anything
        is written, and a problem anywhere (named by line and field) imports nothing."""
        owners = sorted(
            {
                i["user_id"]
                for i in lines
                if isinstance(i, dict) and isinstance(i.get("user_id"), str)
            }
        )
        with self._context.audit("import", owners[0] if len(owners) == 1 else None) as event:
            counts = await portable.import_lines(self._backend, self.tenant_id, lines, self.actor)
            event.result_count, event.details = counts["imported"], dict(counts)
        return counts


def _series(daily: dict[datetime, int], first: datetime, step: timedelta, n: int) -> list[Growth]:
    """``n`` buckets of ``step`` from ``first`` on, the empty ones too, each the sum of its
    days (``daily`` is keyed by each day's start in UTC wall time)."""
    counts = [0] * n
    for day, count in daily.items():
        bucket = (day.replace(tzinfo=UTC) - first) // step
        if 0 <= bucket < n:
            counts[bucket] += count
    return [Growth(start=first + step * i, memories=counts[i]) for i in range(n)]
