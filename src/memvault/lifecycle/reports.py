"""What the lifecycle answers with: runs of scheduled jobs, deletion receipts, audit entries,
memory health findings. Faces import these; nothing here touches the store."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, RootModel

from memvault.models import AuditOperation, Identifier, Timestamp

RunOutcome = Literal["running", "ok", "stopped", "failed", "skipped"]
DeletionScope = Literal["memory", "conversation", "user", "tenant", "expired"]


class ScheduledRun(BaseModel):
    """One run of a scheduled job. ``stopped``: the safety stop held it back (``report``
    names who it would have touched too much of); ``skipped``: another runner held the job."""

    id: int | None
    job: str
    started_at: datetime
    finished_at: datetime | None = None
    outcome: RunOutcome
    duration_ms: float | None = None
    counts: dict[str, Any] = {}
    dry_run: bool = False
    error_code: str | None = None
    undone_at: datetime | None = None
    report: list[dict[str, Any]] = Field(
        default=[], description="safety stop: the users a run would have changed too much of"
    )


class JobStatus(BaseModel):
    name: str
    interval_s: float
    interval_setting: str
    dry_run: bool
    undo: bool
    last_run: ScheduledRun | None
    next_due: datetime


class DeletionReceipt(BaseModel):
    """Proof of a deletion: what went from each store, when, for which request."""

    request_id: str
    scope: DeletionScope
    tenant_id: str
    user_id: str | None
    memories: int
    counts: dict[str, int] = Field(description="rows (or entries) removed, per store")
    history: Literal["tombstone", "purge"]
    deleted_at: datetime
    key_destroyed: str | None = Field(
        default=None,
        description="crypto-shredding: the id of the tenant data key destroyed with the tenant",
    )


class AuditEntry(BaseModel):
    id: UUID
    at: datetime
    operation: AuditOperation
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
    settings_id: str | None = Field(description="hex id of the settings snapshot in force")
    query: str | None = Field(default=None, description="verbose level only: the query text")


class AuditPage(BaseModel):
    results: list[AuditEntry]


class HealthAction(BaseModel):
    """How to act on a finding, through the normal write path (and so the audit); a GET
    lists what the finding is about (its body is the query)."""

    method: Literal["POST", "GET"] = "POST"
    path: str
    body: dict[str, Any]


class HealthFinding(BaseModel):
    kind: str
    count: int
    memory_ids: list[UUID] = Field(default=[], description="a sample, at most 50")
    clusters: list[list[UUID]] = Field(default=[], description="near-duplicates, grouped")
    recommendation: str
    action: HealthAction | None = None


class MemoryHealth(BaseModel):
    user_id: str
    total: int
    findings: list[HealthFinding]


# Where a health finding's action is sent.
HEALTH_ACTIONS = "/v1/health/memory/actions"


class HealthActionRequest(BaseModel):
    """An action a health finding recommends: merge near-duplicates into the earliest,
    archive (tier cold), delete, retry failed embedding jobs, or consolidate the user's
    waiting conversation turns into the knowledge graph now."""

    model_config = ConfigDict(extra="forbid")
    user_id: Identifier
    action: Literal["merge", "archive", "delete", "retry_jobs", "consolidate"]
    memory_ids: list[UUID] = Field(default=[], max_length=1000)
    clusters: list[list[UUID]] = Field(
        default=[],
        max_length=500,
        description="merge only: several clusters at once, each into its earliest memory, "
        "with one receipt (in place of memory_ids)",
    )


class HealthActionResult(BaseModel):
    action: str
    changed: int
    receipt: DeletionReceipt | None = None
    merge_id: UUID | None = Field(
        default=None,
        description="merge only: undo the whole merge with POST "
        "/v1/health/memory/merges/{merge_id}/undo until `undo_until`",
    )
    undo_until: datetime | None = None


class MergeUndone(BaseModel):
    """A merge undone: every copy back as it was, the kept memories' merged values as they
    were before (each an update in its history)."""

    merge_id: UUID
    restored: list[UUID] = Field(description="the copies back, under their own ids")
    reverted: list[UUID] = Field(description="the kept memories whose values were put back")
    links: int = Field(description="source links (facts, relations, mentions) back on the copies")


# --- what the API and the HTTP client send (one definition for both) ---------------------------


class AuditQuery(BaseModel):
    """The audit log's filters, as a query string carries them."""

    model_config = ConfigDict(extra="forbid")
    user_id: Identifier | None = None
    operation: AuditOperation | None = None
    since: Timestamp | None = None
    limit: int = Field(default=100, ge=1, le=1000)


class DeletionRequest(BaseModel):
    """One memory (``memory_id``), or every memory of the user (in one app, if given). A
    conversation is deleted at its own address: ``DELETE /v1/conversations/{id}``."""

    model_config = ConfigDict(extra="forbid")
    user_id: Identifier
    memory_id: UUID | None = None
    app_id: Identifier | None = None


class BulkDeletion(BaseModel):
    """Memories of one user to delete at once, with one receipt (ids that are not this
    user's are not touched)."""

    model_config = ConfigDict(extra="forbid")
    user_id: Identifier
    memory_ids: list[UUID] = Field(min_length=1, max_length=1000)


class ReceiptsQuery(BaseModel):
    """Which deletion receipts to list: one user's, or the tenant's."""

    model_config = ConfigDict(extra="forbid")
    user_id: Identifier | None = None
    limit: int = Field(default=50, ge=1, le=1000)


class ReceiptPage(BaseModel):
    results: list[DeletionReceipt]


class UsersQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=100, ge=1, le=1000)


class UserSummary(BaseModel):
    """A user of the tenant and what they hold, counted by the store."""

    user_id: str
    memories: int
    conversations: int
    facts: int
    last_activity: datetime | None


class OverviewQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: Identifier
    days: int = Field(default=14, ge=1, le=366, description="days of the daily growth chart")
    weeks: int = Field(default=26, ge=1, le=520, description="weeks of the weekly growth chart")


class Growth(BaseModel):
    """How many memories were written in one day or week (UTC; a week starts on Monday)."""

    start: datetime
    memories: int


class UserOverview(BaseModel):
    """One user's holdings, each counted exactly by the store, and how their memories grew:
    every memory counted, oldest bucket first, empty ones included."""

    user_id: str
    memories: int = Field(description="every memory, conversation turns included")
    conversations: int = Field(description="conversations not archived")
    turns: int = Field(description="turns of the conversations not archived")
    turns_unconsolidated: int = Field(description="turns not yet in the knowledge graph")
    facts: int = Field(description="facts true now, as currently known")
    entities: int = Field(description="entities not merged into another")
    goals: int = Field(description="goals of every status")
    per_day: list[Growth]
    per_week: list[Growth]


class UserPage(BaseModel):
    results: list[UserSummary]


class ExportPage(BaseModel):
    results: list[dict[str, Any]]


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memories: list[dict[str, Any]] = Field(max_length=10_000)


class ImportCounts(RootModel[dict[str, int]]):
    """What an import did: ``imported``, ``skipped``, ``queued_for_embedding``."""
