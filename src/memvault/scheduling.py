"""What a scheduled job is, for the packages that define one (the graph's, cognitive memory's,
the lifecycle's own): the run it is handed, the outcome it answers, the errors that say the
store is away. The scheduler that runs them is ``lifecycle.schedule``; the table of jobs,
``lifecycle.jobs``, names each one."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memvault.db.driver_errors import CONNECTION_FAILED
from memvault.errors import StoreUnavailable

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.config import Settings

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class RunContext:
    """What a job run sees: the store, the run's clock reading, whether it is a dry run."""

    backend: Backend
    now: datetime
    dry_run: bool
    run_id: int

    @property
    def settings(self) -> Settings:
        return self.backend.settings


@dataclass
class Outcome:
    """What a run did (or, dry, would do); ``stopped`` lists the users the safety stop held
    it back for, in which case it changed nothing."""

    counts: dict[str, Any]
    stopped: list[dict[str, Any]] = field(default_factory=list)
    # Per change kind, for the metrics (e.g. {"deleted": 3}); dry runs are not counted.
    changed: dict[str, int] = field(default_factory=dict)
    # The records it could not handle and went past (``skipped``): owner, record, error code.
    skipped: list[dict[str, str]] = field(default_factory=list)


# What says the store is away: a run fails on these instead of skipping every record.
OUTAGES: tuple[type[BaseException], ...] = (StoreUnavailable, *CONNECTION_FAILED, OSError)
# At most this many skipped records are listed in a run's counts (all are counted).
MAX_REPORTED = 100


def skipped(tenant_id: str, user_id: str | None, record: object, exc: Exception) -> dict[str, str]:
    """A record a job went past, as its run reports it (never its content), and logged."""
    code = str(getattr(exc, "code", type(exc).__name__))
    log.warning("a scheduled job skipped a record of tenant %r: %s", tenant_id, code)
    return {
        "tenant_id": tenant_id,
        "user_id": user_id or "",
        "record": str(record),
        "error_code": code,
    }


@dataclass(frozen=True)
class ScheduledJob:
    name: str
    interval_setting: str
    run: Callable[[RunContext], Awaitable[Outcome]]
    dry_run: bool = True
    undo: Callable[[Backend, int], Awaitable[int]] | None = None
    description: str = ""

    def interval_s(self, settings: Settings) -> float:
        return float(getattr(settings, self.interval_setting))
