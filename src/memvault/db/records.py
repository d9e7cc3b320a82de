"""What ``db/`` hands back: typed, immutable records, one class per shape of row, so callers
above it read named fields with known types instead of ``Row[Any]``.

Each record is built from a result row by column name (``Record.from_row``); columns a record
does not name (e.g. a ``pg_notify`` result beside an inserted row) are left behind. Content
stays sealed: these hold ciphertext, nonce and key id, never text.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Self, TypeAlias
from uuid import UUID

from sqlalchemy.engine import Row

AnyRow: TypeAlias = Row[*tuple[Any, ...]]

_NAMES: dict[type[Any], tuple[str, ...]] = {}


def field_names(cls: type[Any]) -> tuple[str, ...]:
    """A dataclass's field names, in order (read once per class: rows are many)."""
    if cls not in _NAMES:
        _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return _NAMES[cls]


class _Record:
    __slots__ = ()

    @classmethod
    def from_row(cls, row: AnyRow) -> Self:
        values = row._mapping
        return cls(*(values[name] for name in field_names(cls)))


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryRow(_Record):
    """A row of ``memories``, sealed."""

    tenant_id: str
    id: UUID
    user_id: str
    app_id: str
    project_id: str | None
    environment: str | None
    channel: str
    source: str | None
    tags: list[str]
    ciphertext: bytes
    nonce: bytes
    key_id: str
    content_hash: bytes
    metadata: dict[str, Any]
    categories: list[str]
    importance: int | None
    memory_type: str
    valid_until: datetime | None
    tier: str
    embedded: bool
    embedding_model: str | None
    term_count: int
    access_count: int
    last_accessed: datetime | None
    reinforced_count: int
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class RankedMemory(MemoryRow):
    """A memory from a candidate list, with what the list is ordered by: cosine distance for a
    vector list (nearest first), BM25 score for a keyword list (highest first)."""

    rank: float


@dataclasses.dataclass(frozen=True, slots=True)
class RankedPage:
    """One page of a statement that ranks several pages at once, in its order, and the values
    the statement computed beside the memories (the same on every row; none when empty)."""

    rows: list[RankedMemory]
    extra: dict[str, Any]

    @classmethod
    def from_rows(cls, rows: list[AnyRow]) -> RankedPage:
        ranked = [RankedMemory.from_row(row) for row in rows]
        own = {*field_names(RankedMemory), "page"}
        extra = {k: v for k, v in rows[0]._mapping.items() if k not in own} if rows else {}
        return cls(ranked, extra)


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryRow(_Record):
    """A row of ``memory_history``: each side's content sealed as the memory's was."""

    tenant_id: str
    id: int
    memory_id: UUID
    user_id: str
    action: str
    old_ciphertext: bytes | None
    old_nonce: bytes | None
    old_key_id: str | None
    new_ciphertext: bytes | None
    new_nonce: bytes | None
    new_key_id: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None
    actor: str
    created_at: datetime
    claimed_actor: str | None
    claimed_at: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimedJob(_Record):
    """An embedding job a worker holds until ``locked_until`` (its lease)."""

    tenant_id: str
    id: int
    memory_id: UUID
    kind: str
    attempts: int
    locked_until: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class JobRow(_Record):
    """A row of ``embedding_jobs``."""

    tenant_id: str
    id: int
    memory_id: UUID
    status: str
    kind: str
    attempts: int
    last_error: str | None
    available_at: datetime
    locked_until: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ApiKeyRow(_Record):
    """A row of ``api_keys``: the secret only as its hash."""

    id: UUID
    tenant_id: str
    name: str | None
    prefix: str
    secret_hash: bytes
    scopes: list[str]
    created_at: datetime
    revoked_at: datetime | None


# --- the lifecycle's rows (db/lifecycle.py, db/health.py, db/audit.py) ---------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ScheduledRunRow(_Record):
    """A row of ``scheduled_runs``: one run of a lifecycle job (dry or real)."""

    id: int
    job: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    duration_ms: float | None
    counts: dict[str, Any]
    dry_run: bool
    error_code: str | None
    undone_at: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class UserShare(_Record):
    """How many of a user's memories a job would touch, of how many they have: what the
    safety stop weighs."""

    tenant_id: str
    user_id: str
    touched: int
    total: int


@dataclasses.dataclass(frozen=True, slots=True)
class DoomedMemory(_Record):
    """A memory a deletion has locked: its sealed content (to clear the caches that hold
    vectors of its text) and the model that embedded it."""

    tenant_id: str
    id: UUID
    user_id: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    embedding_model: str | None
    # Where a conversation turn sits (its session's working memory holds its words too).
    channel: str
    source: str | None
    metadata: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class FailedJob(_Record):
    """An embedding job that gave up, and its memory."""

    id: int
    memory_id: UUID


@dataclasses.dataclass(frozen=True, slots=True)
class AuditRow(_Record):
    """A row of ``audit_log``; the verbose level's query text sealed, bound to tenant and id."""

    tenant_id: str
    at: datetime
    id: UUID
    operation: str
    memory_kind: str | None
    user_id: str | None
    actor: str
    request_id: str | None
    session_id: str | None
    conversation_id: str | None
    source_channel: str | None
    target_channel: str | None
    memory_ids: list[UUID]
    result_count: int | None
    latency_ms: float | None
    success: bool
    error_code: str | None
    promotion_rule: str | None
    promotion_score: float | None
    details: dict[str, Any]
    settings_id: bytes | None
    query_ciphertext: bytes | None
    query_nonce: bytes | None
    query_key_id: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class SubscriptionRow(_Record):
    """A row of ``webhook_subscriptions``: the secret sealed."""

    tenant_id: str
    id: UUID
    url: str
    secret_ciphertext: bytes
    secret_nonce: bytes
    secret_key_id: str
    event_types: list[str] | None
    app_id: str | None
    filter_user_id: str | None
    include_content: bool
    enabled: bool
    description: str | None
    created_at: datetime
    updated_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class DeliveryRow(_Record):
    """A row of ``webhook_deliveries``: one event for one subscription."""

    tenant_id: str
    id: int
    subscription_id: UUID
    event_id: UUID
    event_type: str
    user_id: str
    data: dict[str, Any]
    occurred_at: datetime
    state: str
    attempts: int
    last_status: int | None
    last_error: str | None
    available_at: datetime
    locked_until: datetime | None
    delivered_at: datetime | None


__all__ = [
    "ApiKeyRow",
    "AuditRow",
    "ClaimedJob",
    "DeliveryRow",
    "DoomedMemory",
    "FailedJob",
    "HistoryRow",
    "IdempotentWriteRow",
    "JobRow",
    "MemoryRow",
    "RankedMemory",
    "ScheduledRunRow",
    "SubscriptionRow",
    "UserShare",
]


@dataclasses.dataclass(frozen=True, slots=True)
class IdempotentWriteRow(_Record):
    """A keyed write: claimed while it runs (``status`` None), then its sealed answer.
    ``lapsed`` is not a column: whether the claim's lease had lapsed when it was read (by the
    database's clock, the one that set it)."""

    tenant_id: str
    key: str
    user_id: str
    fingerprint: bytes
    status: int | None
    ciphertext: bytes | None
    nonce: bytes | None
    key_id: str | None
    lease_until: datetime
    expires_at: datetime
    created_at: datetime
    committed_at: datetime | None
    lapsed: bool
