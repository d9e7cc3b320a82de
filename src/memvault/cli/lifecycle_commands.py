"""The lifecycle's commands: ``memvault jobs schedule …``, ``audit``, ``erase``, ``backup``,
``restore``, ``export``, the ``doctor --memory`` report and ``fix``, which does what a finding
recommends. The CLI calls the service (and ``lifecycle.backup``, which must run without opening
the store) and nothing below it."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from memvault.cli import target
from memvault.console import JsonOpt, YesOpt, confirm, err, out, print_json, table, typer_app
from memvault.errors import MemvaultError

if TYPE_CHECKING:  # the store loads when a command runs, not for --help
    from memvault.admin import Admin
    from memvault.cli.target import CommandMemory
    from memvault.lifecycle.reports import HealthActionResult, HealthFinding, ScheduledRun

lifecycle_app = typer_app()
schedule_app = typer_app(
    help="Scheduled lifecycle jobs: list them, run one now, undo a run.",
    invoke_without_command=True,
    no_args_is_help=False,
)
T = TypeVar("T")

TenantOpt = Annotated[str, typer.Option("--tenant", help="the tenant (organisation) acted in")]


def _fail(exc: MemvaultError) -> None:
    err.print(f"[red]error:[/red] {exc.message}", highlight=False)
    raise typer.Exit(1)


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except MemvaultError as exc:
        _fail(exc)
        raise  # unreachable: _fail always exits


@contextmanager
def _admin() -> Iterator[Admin]:
    try:
        with target.admin() as admin:
            yield admin
    except MemvaultError as exc:
        _fail(exc)


@contextmanager
def _memory(tenant: str) -> Iterator[CommandMemory]:
    try:
        with target.memory(tenant=tenant) as memory:
            yield memory
    except MemvaultError as exc:
        _fail(exc)


# --- jobs schedule -----------------------------------------------------------------------------


@schedule_app.callback()
def schedule_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the scheduled jobs: interval, last run and outcome, next due."""
    if ctx.invoked_subcommand is not None:
        return
    with _admin() as admin:
        found = _call(admin.schedule)
    if as_json:
        print_json(found)
        return
    shown = table("job", "interval", "last run", "outcome", "took", "next due")
    for s in found:
        last = s.last_run
        shown.add_row(
            s.name,
            f"{s.interval_s:g} s ({s.interval_setting})",
            f"{last.started_at:%Y-%m-%d %H:%M}{' (dry)' if last.dry_run else ''}"
            if last
            else "never",
            last.outcome if last else "",
            f"{last.duration_ms:.0f} ms" if last and last.duration_ms is not None else "",
            f"{s.next_due:%Y-%m-%d %H:%M}",
        )
    out.print(shown)


def _print_run(run: ScheduledRun) -> None:
    print_json(run)
    if run.outcome == "stopped":
        err.print(
            "[yellow]safety stop:[/yellow] the run would change more than "
            "MEMVAULT_LIFECYCLE_MAX_SHARE of the users listed; nothing was changed."
        )
    if run.outcome in ("stopped", "failed"):
        raise typer.Exit(1)


@schedule_app.command("run")
def schedule_run(
    name: Annotated[str, typer.Argument(help="cleanup, tiers, decay, audit_partitions, …")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show, change nothing")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON (what it prints anyway)")] = False,
) -> None:
    """Run one job now, due or not (still only one runner across every process)."""
    with _admin() as admin:
        run = _call(lambda: admin.run_scheduled(name, dry_run=dry_run))
    _print_run(run)


@schedule_app.command("undo")
def schedule_undo(
    name: Annotated[str, typer.Argument(help="the job (decay)")],
    run_id: Annotated[int, typer.Argument(help="the run's id (jobs schedule runs)")],
    as_json: Annotated[bool, typer.Option("--json", help='{"restored": N}')] = False,
) -> None:
    """Put back what one run changed; values changed since are left as they are."""
    with _admin() as admin:
        restored = _call(lambda: admin.undo_scheduled(name, run_id))
    if as_json:
        print_json({"restored": restored})
    else:
        out.print(f"run {run_id} of {name} undone: {restored} value(s) put back")


@schedule_app.command("runs")
def schedule_runs(
    job: Annotated[str | None, typer.Option(help="only this job")] = None,
    limit: Annotated[int, typer.Option()] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Recent runs, newest first."""
    with _admin() as admin:
        found = _call(lambda: admin.scheduled_runs(job, limit))
    if as_json:
        print_json(found)
        return
    shown = table("id", "job", "started", "outcome", "dry", "counts")
    for r in found:
        shown.add_row(
            str(r.id),
            r.job,
            f"{r.started_at:%Y-%m-%d %H:%M:%S}",
            r.outcome + (" (undone)" if r.undone_at else ""),
            "yes" if r.dry_run else "",
            json.dumps(r.counts, default=str)[:120],
        )
    out.print(shown)


# --- audit, erase ------------------------------------------------------------------------------


@lifecycle_app.command("audit")
def audit(
    tenant: TenantOpt = "default",
    user: Annotated[str | None, typer.Option("--user", "-u")] = None,
    operation: Annotated[str | None, typer.Option(help="store, retrieve, delete, …")] = None,
    since: Annotated[datetime | None, typer.Option(help="ISO time")] = None,
    limit: Annotated[int, typer.Option()] = 100,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's audit log, newest first."""
    with _memory(tenant) as memory:
        page = _call(
            lambda: memory.audit_log(user_id=user, operation=operation, since=since, limit=limit)
        )
    if as_json:
        print_json(page.results)
        return
    shown = table("at", "operation", "user", "actor", "results", "ms", "ok")
    for e in page.results:
        shown.add_row(
            f"{e.at:%Y-%m-%d %H:%M:%S}",
            e.operation,
            e.user_id or "",
            e.actor,
            "" if e.result_count is None else str(e.result_count),
            "" if e.latency_ms is None else f"{e.latency_ms:.1f}",
            "yes" if e.success else f"no ({e.error_code})",
        )
    out.print(shown)


@lifecycle_app.command("erase")
def erase(
    user: Annotated[str, typer.Option("--user", "-u", help="whose memories")],
    memory_id: Annotated[str | None, typer.Option("--memory", help="only this memory")] = None,
    app: Annotated[str | None, typer.Option(help="only this app's memories")] = None,
    tenant: TenantOpt = "default",
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="the receipt (always JSON)")] = False,
) -> None:
    """Delete a memory, or all of a user's, from every store; prints the deletion receipt
    (erasing a whole user asks first unless --yes)."""
    if memory_id is None:
        scope = f"app {app!r} of " if app else ""
        confirm(f"Erase every memory of {scope}user {user!r} from every store?", yes=yes)
    with _memory(tenant) as memory:
        if memory_id is not None:
            receipt = _call(lambda: memory.erase(memory_id, user_id=user))
        else:
            receipt = _call(lambda: memory.erase_user(user_id=user, app_id=app))
    print_json(receipt)


@lifecycle_app.command("delete-memories")
def delete_memories(
    memory_ids: Annotated[list[str], typer.Argument(help="the memories' ids")],
    user: Annotated[str, typer.Option("--user", "-u", help="whose memories")],
    tenant: TenantOpt = "default",
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="the receipt (always JSON)")] = False,
) -> None:
    """Delete several memories of a user at once, with one receipt (asks first unless
    --yes)."""
    confirm(f"Delete {len(memory_ids)} memories of user {user!r} from every store?", yes=yes)
    with _memory(tenant) as memory:
        receipt = _call(lambda: memory.erase_memories(list(memory_ids), user_id=user))
    print_json(receipt)


@lifecycle_app.command("receipts")
def receipts(
    request_id: Annotated[str | None, typer.Argument(help="one receipt, by request id")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u")] = None,
    tenant: TenantOpt = "default",
    limit: Annotated[int, typer.Option()] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="JSON (what it prints anyway)")] = False,
) -> None:
    """The tenant's deletion receipts, newest first, or one of them (JSON)."""
    with _memory(tenant) as memory:
        if request_id is not None:
            print_json(_call(lambda: memory.deletion_receipt(request_id)))
            return
        print_json(_call(lambda: memory.deletion_receipts(user_id=user, limit=limit)))


@lifecycle_app.command("users")
def users(
    tenant: TenantOpt = "default",
    limit: Annotated[int, typer.Option()] = 100,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's users with how many memories, conversations and facts each holds."""
    with _memory(tenant) as memory:
        found = _call(lambda: memory.list_users(limit=limit))
    if as_json:
        print_json(found)
        return
    shown = table("user", "memories", "conversations", "facts", "last activity")
    for u in found:
        last = f"{u.last_activity:%Y-%m-%d %H:%M}" if u.last_activity else ""
        shown.add_row(u.user_id, str(u.memories), str(u.conversations), str(u.facts), last)
    out.print(shown)


@lifecycle_app.command("erase-tenant")
def erase_tenant(
    tenant: Annotated[str, typer.Argument(help="the tenant to erase")],
    yes: YesOpt = False,
    shred: Annotated[
        bool,
        typer.Option("--shred", help="also destroy its data key (needs per-tenant keys)"),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the receipt (always JSON)")] = False,
) -> None:
    """Erase a whole tenant: memories, derived rows, history, audit, API keys (and with
    --shred its data key: crypto-shredding); asks first unless --yes."""
    confirm(f"Erase every memory of tenant {tenant!r}?", yes=yes)
    with _admin() as admin:
        if shred:
            receipt = _call(lambda: admin.shred_tenant(tenant))
        else:
            receipt = _call(lambda: admin.erase_tenant(tenant))
    print_json(receipt)


# --- backup, restore, export -------------------------------------------------------------------


@lifecycle_app.command("backup")
def backup(file: Annotated[Path, typer.Argument(help="where to write the dump")]) -> None:
    """Dump the whole store (pg_dump, custom format). The encryption key is NOT in it: back up
    the key file (or MEMVAULT_ENCRYPTION_KEY) apart — see the README."""
    from memvault.config import Settings
    from memvault.lifecycle import backup as backups

    _call(target.local_only)
    size = _call(lambda: backups.backup_sync(Settings(), file))
    out.print(f"wrote {file} ({size} bytes); keep the encryption key apart from it")


@lifecycle_app.command("restore")
def restore(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="a backup")],
    replace: Annotated[
        bool, typer.Option("--replace", help="replace a store that already holds memories")
    ] = False,
    yes: YesOpt = False,
) -> None:
    """Load a backup into this store (stop servers and workers on it first). Start with the
    key the backup was made under (key file or MEMVAULT_ENCRYPTION_KEY). --replace asks
    first unless --yes."""
    from memvault.config import Settings
    from memvault.lifecycle import backup as backups

    _call(target.local_only)
    if replace:
        confirm("Replace everything in this store with the backup?", yes=yes)

    _call(lambda: backups.restore_sync(Settings(), file, replace=replace))
    out.print(f"restored {file}")


@lifecycle_app.command("export")
def export(
    user: Annotated[str, typer.Option("--user", "-u", help="whose memory")],
    tenant: TenantOpt = "default",
) -> None:
    """Write a user's whole memory (memories with history and vectors, the knowledge graph,
    conversations, tool use, strategies, goals, profile) as JSON lines to stdout, in the format
    of docs/export-format.md; `memvault import FILE` loads it back."""
    with _memory(tenant) as memory:
        lines = _call(lambda: memory.export_memories(user_id=user))
    for line in lines:
        sys.stdout.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")
    kinds = Counter(str(line["kind"]) for line in lines)
    err.print(
        f"exported {len(lines)} lines of {user!r}: "
        + (", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) or "nothing")
    )


def is_export_file(path: Path) -> bool:
    """Whether the file's first line is a line `memvault export` wrote."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for text in handle:
            if text.strip():
                try:
                    first = json.loads(text)
                except ValueError:
                    return False
                return isinstance(first, dict) and "memvault_export" in first
    return False


def import_export_file(path: Path, tenant: str = "default", *, as_json: bool = False) -> None:
    """What ``memvault import`` does with a file written by ``memvault export``: every line
    checked first; each problem is printed as FILE:LINE: field: problem, and nothing is
    imported unless there is none."""
    numbers: list[int] = []
    items: list[Any] = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            items.append(json.loads(text))
        except ValueError:
            items.append(None)  # refused as "not a JSON object", with its line
        numbers.append(number)
    with _memory(tenant) as memory:
        try:
            counts = memory.import_memories(items)
        except MemvaultError as exc:
            for found in exc.details.get("errors", []):
                at = numbers[found["line"] - 1] if 0 < found["line"] <= len(numbers) else "?"
                where = _escape(f"{path}:{at}: {found['field']}: {found['problem']}")
                err.print(f"[red]error:[/red] {where}", highlight=False)
            _fail(exc)
            raise  # unreachable: _fail always exits
    if as_json:
        print_json(counts)
    else:
        out.print(", ".join(f"{n} {what}" for what, n in counts.items() if n))


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def memory_doctor(user: str, tenant: str = "default", *, as_json: bool = False) -> bool:
    """The ``doctor --memory`` report; True when nothing needs doing."""
    with _memory(tenant) as memory:
        report = _call(lambda: memory.memory_health(user_id=user))
    if as_json:
        print_json(report)
        return not report.findings
    shown = table("finding", "count", "recommendation", "fix")
    for f in report.findings:
        shown.add_row(f.kind, str(f.count), f.recommendation, _fix_command(f, user, tenant))
    out.print(f"{report.total} memories of {user!r}")
    out.print(shown if report.findings else "nothing to do")
    return not report.findings


def _fix_command(finding: HealthFinding, user: str, tenant: str) -> str:
    if finding.action is None:
        return ""
    if finding.action.method != "POST":
        return f"{finding.action.method} {finding.action.path} (read it, then decide)"
    where = "" if tenant == "default" else f" --tenant {tenant}"
    return f"memvault fix {finding.kind} -u {user}{where}"


# Actions that remove memories; the others (archive, retry_jobs, consolidate) can be undone
# or only add.
_DESTRUCTIVE = {"delete", "merge"}


@lifecycle_app.command("fix")
def fix(
    finding: Annotated[str, typer.Argument(help="a finding of `doctor --memory`, e.g. stale")],
    user: Annotated[str, typer.Option("--user", "-u", help="whose memories")],
    tenant: TenantOpt = "default",
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Do what `doctor --memory` recommends for FINDING, through the normal write path (and
    so the audit log): near_duplicates merges every cluster, the others act on the memories
    the finding lists (at most 50 at a time: run it again for more). Deleting and merging
    ask first unless --yes."""
    with _memory(tenant) as memory:
        report = _call(lambda: memory.memory_health(user_id=user))
        found = next((f for f in report.findings if f.kind == finding), None)
        if found is None:
            kinds = ", ".join(f.kind for f in report.findings) or "none"
            err.print(
                f"nothing to fix: no {finding!r} finding for {user!r} (findings: {kinds})",
                markup=False,
            )
            raise typer.Exit(1 if report.findings else 0)
        action = found.action
        if action is None or action.method != "POST":
            err.print(
                f"[red]error:[/red] {_escape(finding)!r} has no action to apply: "
                + _escape(found.recommendation),
                highlight=False,
            )
            raise typer.Exit(1)
        bodies = [action.body]
        if found.clusters:  # the action names the first cluster; one merge per cluster
            ids = [[str(i) for i in cluster] for cluster in found.clusters]
            bodies = [{**action.body, "memory_ids": cluster} for cluster in ids]
        if action.body["action"] in _DESTRUCTIVE:
            confirm(
                f"{action.body['action'].capitalize()} {_counted(bodies)} of {user!r} ({finding})?",
                yes=yes,
            )
        results = [_call(partial(memory.health_action, body)) for body in bodies]
    _print_fixed(results, as_json, user)


@lifecycle_app.command("undo-merge")
def undo_merge(
    merge_id: Annotated[str, typer.Argument(help="the merge's id, as `fix` printed it")],
    user: Annotated[str, typer.Option("--user", "-u", help="whose memories")],
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Undo a merge `fix near_duplicates` made: every copy back as it was, the memory that
    took them in with its own values again (once, until the undo record expires)."""
    with _memory(tenant) as memory:
        undone = _call(lambda: memory.undo_merge(merge_id, user_id=user))
    if as_json:
        print_json(undone.model_dump(mode="json"))
    else:
        out.print(f"merge {undone.merge_id} undone: {len(undone.restored)} memory(ies) back")


def _counted(bodies: list[dict[str, Any]]) -> str:
    memories = sum(len(b.get("memory_ids", [])) for b in bodies)
    return f"{memories} memories" + (f" in {len(bodies)} clusters" if len(bodies) > 1 else "")


def _print_fixed(results: list[HealthActionResult], as_json: bool, user: str) -> None:
    changed = sum(r.changed for r in results)
    if as_json:
        each = [r.model_dump(mode="json") for r in results]
        print_json({"action": results[0].action, "changed": changed, "results": each})
    else:
        out.print(f"{results[0].action}: {changed} changed")
        for r in results:
            if r.merge_id is not None:
                until = f" (until {r.undo_until:%Y-%m-%d})" if r.undo_until else ""
                out.print(
                    f"  undo: memvault undo-merge {r.merge_id} -u {user}{until}", markup=False
                )
