"""``LifecycleFace``: the lifecycle's methods on a tenant's ``AsyncMemory`` — deletion with a
receipt, the audit log, memory health and its actions, export and import."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import audit as audit_db
from memvault.db import cognitive as cognitive_db
from memvault.db import health as health_db
from memvault.db import jobs as jobs_db
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.lifecycle import deletion, graph_jobs, health, portable
from memvault.lifecycle.audit import AuditEvent, query_aad
from memvault.lifecycle.models import (
    AuditEntry,
    AuditPage,
    DeletionReceipt,
    HealthActionRequest,
    HealthActionResult,
    MemoryHealth,
)
from memvault.validation import parse_id

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.db.records import AuditRow


def _identifier(value: str, field: str) -> str:
    from memvault.models import Owner

    try:
        return Owner(user_id=value).user_id
    except ValueError:
        raise InvalidInput(
            f"{field} is not a valid identifier.", details={"field": field}
        ) from None


class LifecycleFace:
    _backend: Backend
    tenant_id: str
    actor: str

    if TYPE_CHECKING:  # AsyncMemory's, which a merge goes through

        async def update(
            self,
            memory_id: UUID | str,
            *,
            user_id: str,
            content: str | None = None,
            metadata: dict[str, Any] | None = None,
        ) -> Any: ...

    def _audit(
        self, operation: str, user_id: str | None, **fields: Any
    ) -> AbstractContextManager[AuditEvent]:
        """Time a block and record it in the audit log (if the level records ``operation``)."""
        event = AuditEvent(
            tenant_id=self.tenant_id,
            operation=operation,
            actor=self.actor,
            user_id=user_id,
            **fields,
        )
        return self._backend.audit.timed(event)

    # --- provable deletion -------------------------------------------------------------------

    @scoped_to_tenant
    async def erase(self, memory_id: UUID | str, *, user_id: str) -> DeletionReceipt:
        """Delete one memory and everything derived from it; answers the deletion receipt."""
        ident, owner = parse_id(memory_id), _identifier(user_id, "user_id")
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.memory_where(self.tenant_id, ident, owner),
            scope="memory",
            user_id=owner,
            actor=self.actor,
        )

    @scoped_to_tenant
    async def erase_conversation(self, conversation_id: str, *, user_id: str) -> DeletionReceipt:
        """Delete one conversation: its turns and everything derived from them, its tool
        calls, its session's working memory and the conversation itself; answers the
        receipt."""
        ident = _identifier(conversation_id, "conversation_id")
        owner = _identifier(user_id, "user_id")
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
        owner = _identifier(user_id, "user_id")
        if app_id is not None:
            app_id = _identifier(app_id, "app_id")
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
            from memvault.crypto import Sealed

            query = self._backend.keys.current(row.tenant_id).open(
                Sealed(ciphertext, nonce, key_id),
                query_aad(row.tenant_id, row.id),
            )
        values = {
            k: getattr(row, k) for k in AuditEntry.model_fields if k not in {"query", "settings_id"}
        }
        return AuditEntry(
            **values,
            settings_id=row.settings_id.hex() if row.settings_id else None,
            query=query,
        )

    # --- memory health -----------------------------------------------------------------------

    @scoped_to_tenant
    async def memory_health(self, *, user_id: str) -> MemoryHealth:
        """What this user's memories need, each finding with its recommended action."""
        owner = _identifier(user_id, "user_id")
        return await health.report(self._backend, self.tenant_id, owner)

    @scoped_to_tenant
    async def health_action(
        self, request: HealthActionRequest | dict[str, Any]
    ) -> HealthActionResult:
        """Act on a finding through the normal write path (and so the audit): ``merge`` keeps
        the first memory and deletes the rest (noting them on the first), ``archive`` moves
        them to the cold tier, ``delete`` erases them, ``retry_jobs`` requeues failed jobs."""
        if not isinstance(request, HealthActionRequest):
            request = HealthActionRequest.model_validate(request)
        owner = _identifier(request.user_id, "user_id")
        ids = list(dict.fromkeys(request.memory_ids))
        if request.action == "consolidate":
            with self._audit("update", owner, details={"via": "consolidate"}) as event:
                counts = await graph_jobs.consolidate_user(self._backend, self.tenant_id, owner)
                event.result_count = counts["turns_extracted"]
            return HealthActionResult(action="consolidate", changed=counts["conversations"])
        if request.action != "retry_jobs" and not ids:
            raise InvalidInput("Name the memories to act on.", details={"field": "memory_ids"})
        if request.action == "merge":
            return await self._merge(owner, ids)
        if request.action == "delete":
            receipt = await deletion.erase(
                self._backend,
                self.tenant_id,
                deletion.memories_where(self.tenant_id, owner, ids),
                scope="memory",
                user_id=owner,
                actor=self.actor,
            )
            return HealthActionResult(action="delete", changed=receipt.memories, receipt=receipt)
        with self._audit(
            "tier" if request.action == "archive" else "update", owner, memory_ids=ids
        ) as event:
            async with transaction(self._backend.engine) as conn:
                if request.action == "archive":
                    changed = await health_db.set_tier(conn, self.tenant_id, owner, ids, "cold")
                else:
                    failed = await health_db.failed_jobs(conn, self.tenant_id, owner)
                    wanted = [j.id for j in failed if not ids or j.memory_id in ids]
                    changed = await jobs_db.retry_failed(conn, wanted) if wanted else 0
                    # Memories with no job at all get one (a queued one is not doubled).
                    bare = await health_db.owned_unembedded(conn, self.tenant_id, owner, ids)
                    await jobs_db.enqueue(conn, self.tenant_id, bare)
                    changed = max(changed, len(bare))
            event.result_count = changed
        return HealthActionResult(action=request.action, changed=changed)

    async def _merge(self, owner: str, ids: list[UUID]) -> HealthActionResult:
        if len(ids) < 2:
            raise InvalidInput(
                "A merge needs two memories or more.", details={"field": "memory_ids"}
            )
        keep, rest = ids[0], ids[1:]
        with self._audit("merge", owner, memory_ids=ids) as event:
            await self.update(  # AsyncMemory's: the normal write path
                keep, user_id=owner, metadata={"merged_from": [str(i) for i in rest]}
            )
            receipt = await deletion.erase(
                self._backend,
                self.tenant_id,
                deletion.memories_where(self.tenant_id, owner, rest),
                scope="memory",
                user_id=owner,
                actor=self.actor,
            )
            event.result_count = receipt.memories
        return HealthActionResult(action="merge", changed=receipt.memories, receipt=receipt)

    # --- export / import ---------------------------------------------------------------------

    @scoped_to_tenant
    async def export_memories(self, *, user_id: str) -> list[dict[str, Any]]:
        """A user's whole memory as JSON-ready dicts, one per line of an export file (format
        2, docs/export-format.md): memories with history and vectors, the graph, conversations
        and turns, tool invocations, strategies, goals and profiles."""
        owner = _identifier(user_id, "user_id")
        with self._audit("export", owner) as event:
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
        with self._audit("import", owners[0] if len(owners) == 1 else None) as event:
            counts = await portable.import_lines(self._backend, self.tenant_id, lines, self.actor)
            event.result_count, event.details = counts["imported"], dict(counts)
        return counts
