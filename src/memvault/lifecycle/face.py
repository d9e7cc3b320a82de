"""``LifecycleFace``: the lifecycle's methods on a tenant's ``AsyncMemory`` — deletion with a
receipt, the audit log, memory health and its actions, export and import."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import audit as audit_db
from memvault.db.tenancy import scoped_to_tenant
from memvault.errors import InvalidInput
from memvault.lifecycle import deletion
from memvault.lifecycle.audit import AuditEvent, query_aad
from memvault.lifecycle.models import AuditEntry, AuditPage, DeletionReceipt

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.db.store import AnyRow


def _uuid(value: UUID | str) -> UUID:
    try:
        return value if isinstance(value, UUID) else UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise InvalidInput("A memory id must be a UUID.", details={"field": "memory_id"}) from None


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
        ident, owner = _uuid(memory_id), _identifier(user_id, "user_id")
        return await deletion.erase(
            self._backend,
            self.tenant_id,
            deletion.memory_where(self.tenant_id, ident, owner),
            scope="memory",
            user_id=owner,
            actor=self.actor,
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
        async with self._backend.engine.connect() as conn:
            rows = await audit_db.read_rows(
                conn, self.tenant_id, user_id=user_id, operation=operation, since=since, limit=limit
            )
        return AuditPage(results=[self._audit_entry(r) for r in rows])

    async def flush_audit(self) -> int:
        """Write the audit rows queued so far now (they are written in the background)."""
        return await self._backend.audit.flush()

    def _audit_entry(self, row: AnyRow) -> AuditEntry:
        query = None
        if row.query_ciphertext is not None:
            from memvault.crypto import Sealed

            query = self._backend.keys.current().open(
                Sealed(row.query_ciphertext, row.query_nonce, row.query_key_id),
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
