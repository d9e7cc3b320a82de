"""``TenantContext``: what every resource of one tenant's memory is built with — the store, the
tenant and who acts — and the few things each of them does with it (sealing a row, counting a
text's tokens, timing a call into the audit log).

Each resource (``Memories``, ``Conversations``, ``Graph``, ``Goals``, …) takes the context and
the other resources it needs in its constructor; ``AsyncMemory`` builds them all, once, in
order, so a resource's dependencies are the parameters of its ``__init__`` and nothing else.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from memvault.backend import Backend
from memvault.cognitive.payloads import open_payload, seal_payload
from memvault.db.audit import AuditEvent


@dataclass(frozen=True)
class TenantContext:
    """One tenant's view of the store: the backend (pools, keys, models, settings), the tenant
    every row is read and written under, and the actor its changes are recorded as."""

    backend: Backend
    tenant_id: str
    actor: str

    def audit(
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
        return self.backend.audit.timed(event)

    def seal_row(self, table: str, key: tuple[Any, ...], payload: Any) -> dict[str, Any]:
        """``payload`` sealed for a row of ``table``, bound to this tenant and the row's key."""
        return seal_payload(self.backend.keys, table, (self.tenant_id, *key), payload)

    def open_row(self, table: str, key: tuple[Any, ...], row: Any) -> Any:
        return open_payload(self.backend.keys, table, (self.tenant_id, *key), row)

    def count_tokens(self, text: str) -> int:
        """``text``'s length in the primary embedding model's tokens."""
        return len(self.backend.embeddings.primary.tokenizer().spans(text))


__all__ = ["TenantContext"]
