"""``LifecycleAdmin``: the lifecycle's whole-store operations on ``AsyncAdmin`` — the
schedule (list, run, undo), a tenant's erasure (and crypto-shredding), backup and restore."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.db.tenancy import across_tenants
from memvault.errors import Conflict
from memvault.lifecycle import backup as backups
from memvault.lifecycle import deletion, jobs
from memvault.lifecycle.reports import DeletionReceipt, JobStatus, ScheduledRun
from memvault.lifecycle.schedule import Clock, utc_now

if TYPE_CHECKING:
    from memvault.backend import Backend


class LifecycleAdmin:
    _backend: Backend

    async def schedule(self, *, clock: Clock = utc_now) -> builtins.list[JobStatus]:
        """Every scheduled job: its interval, last run and outcome, when it is next due."""
        return await jobs.statuses(self._backend, clock=clock)

    async def run_scheduled(
        self, name: str, *, dry_run: bool = False, clock: Clock = utc_now
    ) -> ScheduledRun:
        """Run one job now, due or not (still only one runner across every process)."""
        return await jobs.run_job(self._backend, name, dry_run=dry_run, clock=clock)

    async def undo_scheduled(self, name: str, run_id: int) -> int:
        """Reverse one run (decay); returns how many values were put back."""
        return await jobs.undo(self._backend, name, run_id)

    async def scheduled_runs(
        self, job: str | None = None, limit: int = 20
    ) -> builtins.list[ScheduledRun]:
        return await jobs.history(self._backend, job, limit)

    @across_tenants
    async def erase_tenant(self, tenant_id: str, *, actor: str = "admin") -> DeletionReceipt:
        """Delete a whole tenant: its memories and all derived from them, its history, audit
        trail and API keys, and its data key with per-tenant keys; answers the receipt
        (itself kept in the tenant's audit log)."""
        return await deletion.erase(
            self._backend,
            tenant_id,
            deletion.tenant_where(tenant_id),
            scope="tenant",
            user_id=None,
            actor=actor,
        )

    async def shred_tenant(self, tenant_id: str, *, actor: str = "admin") -> DeletionReceipt:
        """Crypto-shred a tenant: ``erase_tenant``, which with per-tenant keys destroys the
        data key in the same transaction (the receipt names it), so a copy of its content
        anywhere else (a replica, a dump) can no longer be opened. Refused (Conflict) when
        keys are not per tenant: there would be no key to destroy."""
        if not self._backend.keys.per_tenant:
            raise Conflict(
                "Shredding needs per-tenant keys (MEMVAULT_PER_TENANT_KEYS=true): with one key "
                "for every tenant there is no tenant key to destroy. Erase the tenant instead.",
                details={"per_tenant_keys": False},
            )
        return await self.erase_tenant(tenant_id, actor=actor)

    async def backup(self, file: Path) -> int:
        """Dump the whole store into ``file`` (pg_dump); returns its size. The keys are not
        in it: back them up apart."""
        return await backups.backup(self._backend.settings, file)
