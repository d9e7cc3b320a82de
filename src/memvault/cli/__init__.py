"""The ``memvault`` command: the server, memory CRUD, maintenance and diagnostics."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from memvault.cli import cognitive_commands, lifecycle_commands, target, webhook_commands
from memvault.cli.graph_commands import entities_app, facts_app, graph_app
from memvault.console import (
    JsonOpt,
    YesOpt,
    confirm,
    err,
    out,
    print_json,
    progress,
    table,
    typer_app,
)
from memvault.errors import MemvaultError

# The store, its models and settings load when a command runs: `memvault --help` and a
# command's own --help need none of them.
if TYPE_CHECKING:
    from memvault.admin import Admin
    from memvault.cli.target import CommandMemory
    from memvault.config import Settings
    from memvault.models import AddResult, HistoryEntry, MemoryRecord

app = typer_app(help="memvault: long-term memory for AI agents.")
keys_app = typer_app(help="Encryption keys.")
app.add_typer(keys_app, name="keys")
jobs_app = typer_app(help="The embedding job queue.")
app.add_typer(jobs_app, name="jobs")
api_keys_app = typer_app(
    help="API keys for the HTTP API (not the encryption key: see `memvault keys`)."
)
app.add_typer(api_keys_app, name="api-keys")
app.add_typer(lifecycle_commands.lifecycle_app)
jobs_app.add_typer(lifecycle_commands.schedule_app, name="schedule")
app.add_typer(cognitive_commands.app, name="cognitive")
# knowledge graph
app.add_typer(facts_app, name="facts")
app.add_typer(entities_app, name="entities")
app.add_typer(graph_app, name="graph")
app.add_typer(webhook_commands.app, name="webhooks")
T = TypeVar("T")

UserOpt = Annotated[str, typer.Option("--user", "-u", help="owner of the memories")]


@app.callback()
def _target(
    ctx: typer.Context,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            envvar="MEMVAULT_SERVER_URL",
            help="a running memvault server, e.g. http://127.0.0.1:8765: commands about a "
            "user's memories go to it over HTTP instead of opening the store",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="MEMVAULT_API_KEY", help="with --server: the key to send"),
    ] = None,
) -> None:
    target.use(target.Server(server, api_key) if server else None)
    # Forgotten when the command ends, so nothing run after it in this process inherits it.
    ctx.call_on_close(lambda: target.use(None))


def _fail(exc: MemvaultError, *, where: str = "") -> None:
    err.print(f"[red]error:[/red] {where}{_describe(exc)}", highlight=False)
    raise typer.Exit(1)


def _describe(exc: MemvaultError) -> str:
    """The message and, as the API's details do, which field was wrong and why."""
    problems = exc.details.get("errors")
    if isinstance(problems, list) and problems:
        named = "; ".join(f"{p.get('field')}: {p.get('problem')}" for p in problems)
        return f"{exc.message} {named}"
    field = exc.details.get("field")
    return f"{exc.message} (field: {field})" if field else exc.message


@contextmanager
def _memory(*, worker: bool = False, embeds: bool = False) -> Iterator[CommandMemory]:
    """A user's memories for one command: the store, or the server named by --server."""
    try:
        with target.memory(worker=worker, embeds=embeds) as memory:
            yield memory
    except MemvaultError as exc:
        _fail(exc)


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except MemvaultError as exc:
        _fail(exc)
        raise  # unreachable: _fail always exits


def _print_records(records: list[MemoryRecord], as_json: bool) -> None:
    if as_json:
        print_json(records)
        return
    shown = table("created", "content", "tags")
    shown.add_column("id", no_wrap=True, min_width=36)
    for r in records:
        shown.add_row(
            r.created_at.strftime("%Y-%m-%d %H:%M"), r.content, ", ".join(r.tags), str(r.id)
        )
    out.print(shown)


@contextmanager
def _admin(*, worker: bool = False) -> Iterator[Admin]:
    """The whole store, for one operator command; embedding workers only when it waits on them."""
    try:
        with target.admin(worker=worker) as admin:
            yield admin
    except MemvaultError as exc:
        _fail(exc)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _refuse_a_busy_port(host: str, port: int) -> None:
    """Fail before anything is started or created when another process holds the port."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        err.print(
            f"[red]error:[/red] cannot listen on {host}:{port}: {exc.strerror or exc}. Is "
            "another server running there? Stop it, or choose a port with --port or "
            "MEMVAULT_PORT."
        )
        raise typer.Exit(1) from None


def _command() -> str:
    """How to run this program again, as the user can type it: `memvault` when it is on PATH,
    else the path it was started by (`.venv/bin/memvault` under `make run`)."""
    started = Path(sys.argv[0])
    if started.name != "memvault":
        return "memvault"
    found = shutil.which("memvault")
    if found and Path(found).resolve() == started.resolve():
        return "memvault"
    return str(started)


def _auth_off_banner() -> str:
    cmd = _command()
    # MAKELEVEL is set by make for the commands it runs: then `make run` is the way back.
    restart = "MEMVAULT_AUTH=required make run" if "MAKELEVEL" in os.environ else f"{cmd} serve"
    return (
        "[bold yellow]memvault: AUTHENTICATION IS OFF[/bold yellow] - a request without a key "
        "acts as tenant 'default' (one that sends a key acts as the key's tenant). Fine for one "
        "person on this machine. To turn it on and keep what you stored here, make a key for "
        "tenant 'default':\n"
        f"  1. {cmd} api-keys create --tenant default --scopes read,write\n"
        f"  2. {restart}     (then send: Authorization: Bearer <key>)"
    )


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="bind address (MEMVAULT_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="port (MEMVAULT_PORT)")] = None,
    auth: Annotated[
        str | None, typer.Option(help="required or off (MEMVAULT_AUTH; default required)")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="server processes on the port and database (MEMVAULT_WORKERS)"),
    ] = None,
) -> None:
    """Run the REST API (and, in embedded mode, the database with it)."""
    # Only what the refusals below need loads before them: a bad address, a busy port or a
    # data directory another server owns is refused at once, not after the seconds it takes
    # to import the store and build the app.
    from pydantic import ValidationError

    from memvault import logs
    from memvault.config import Settings
    from memvault.datadir import ServeLock

    overrides: dict[str, Any] = {"host": host, "port": port, "auth": auth, "workers": workers}
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        err.print(f"[red]error:[/red] {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}")
        raise typer.Exit(2) from None
    if settings.auth == "off" and not _loopback(settings.host):
        err.print(
            f"[red]error:[/red] refusing to serve on {settings.host} with authentication off: "
            "anyone who can reach it could read every memory. Bind 127.0.0.1, or create a key "
            f"(`{_command()} api-keys create --tenant default --scopes read,write`) and set "
            "MEMVAULT_AUTH=required."
        )
        raise typer.Exit(1)
    _refuse_a_busy_port(settings.host, settings.port)
    as_json = logs.wants_json(settings.log_format, settings.log_json, tty=sys.stderr.isatty())
    logs.configure(settings.log_level, as_json=as_json)
    lock = ServeLock(settings.data_dir)
    if settings.embedded:
        try:
            lock.acquire()
        except MemvaultError as exc:
            _fail(exc)
        out.print(f"memvault: embedded PostgreSQL, data in [bold]{settings.data_dir}[/bold]")
    else:
        out.print("memvault: using the database at MEMVAULT_DATABASE_URL")
    import uvicorn

    url = f"http://{settings.host}:{settings.port}"
    out.print(f"memvault: serving on [bold]{url}[/bold] (API docs at {url}/docs)")
    if settings.auth == "off":
        out.print(_auth_off_banner(), highlight=False)
    try:
        with _embedded_for_workers(settings):
            if settings.workers == 1:
                uvicorn.run(
                    _app(settings),
                    host=settings.host,
                    port=settings.port,
                    log_level=settings.log_level.lower(),
                    **logs.uvicorn_options(),
                )
            else:
                _serve_in_processes(settings)
    finally:
        lock.release()


def _serve_in_processes(settings: Settings) -> None:
    """``uvicorn.run(..., workers=N)``, but on a listening socket that sends small writes at
    once. uvicorn binds the workers' shared socket without naming TCP as its protocol, and
    asyncio then leaves Nagle's algorithm on for the connections it accepts: on Linux every
    request on a kept-alive connection after the first waited ~40 ms for the client's delayed
    ACK (reported to uvicorn upstream: "--workers N loses TCP_NODELAY"). Linux hands
    TCP_NODELAY down from the listener to each accepted connection."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from memvault import logs

    config = uvicorn.Config(
        # Each process builds its own: this parent never imports the store.
        "memvault.api.app:create_app_from_env",
        factory=True,
        workers=settings.workers,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        **logs.uvicorn_options(),
    )
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: Ctrl-C is a clean stop
        Multiprocess(config, sockets=[sends_at_once(config.bind_socket())]).run()


def sends_at_once(listener: socket.socket) -> socket.socket:
    """``listener`` with TCP_NODELAY, which the connections it accepts inherit."""
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener


def _app(settings: Settings) -> Any:
    from memvault.api import create_app

    return create_app(settings, serving=True)


@contextmanager
def _embedded_for_workers(settings: Settings) -> Iterator[None]:
    """With several processes, each builds its settings from the environment (so this one's
    options go there), and this parent holds the embedded database from before the first
    starts until after the last has stopped: the server's start and stop belong to one
    process, whichever worker comes and goes."""
    if settings.workers == 1:
        yield
        return
    for name in ("host", "port", "auth", "workers"):
        os.environ[f"MEMVAULT_{name.upper()}"] = str(getattr(settings, name))
    if not settings.embedded:
        yield
        return
    from memvault.datadir import embedded_store_held

    with embedded_store_held(settings):
        yield


@app.command("mcp")
def mcp_(
    http: Annotated[bool, typer.Option("--http", help="streamable HTTP instead of stdio")] = False,
    host: Annotated[str | None, typer.Option(help="with --http (MEMVAULT_MCP_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="with --http (MEMVAULT_MCP_PORT)")] = None,
    tenant: Annotated[
        str | None, typer.Option(help="tenant the tools act in (MEMVAULT_MCP_TENANT_ID)")
    ] = None,
    user: Annotated[
        str | None, typer.Option(help="the one user the tools act for (MEMVAULT_MCP_USER_ID)")
    ] = None,
) -> None:
    """Run the MCP server: memory tools for an AI assistant, over stdio (or HTTP with --http).

    Tools act for one tenant and user, set here, never by the model calling them.
    """
    from pydantic import ValidationError

    from memvault.config import Settings
    from memvault.mcp import serve as serve_mcp

    given: dict[str, Any] = {
        "mcp_host": host,
        "mcp_port": port,
        "mcp_tenant_id": tenant,
        "mcp_user_id": user,
    }
    try:
        settings = Settings(**{k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        err.print(f"[red]error:[/red] {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}")
        raise typer.Exit(2) from None
    try:
        serve_mcp(
            settings,
            transport="streamable-http" if http else "stdio",
            tenant_id=settings.mcp_tenant_id,
            user_id=settings.mcp_user_id,
            host=settings.mcp_host,
            port=settings.mcp_port,
        )
    except MemvaultError as exc:
        _fail(exc)


@app.command()
def add(
    content: str,
    user: UserOpt,
    app_id: Annotated[str, typer.Option("--app")] = "default",
    tag: Annotated[list[str] | None, typer.Option(help="repeat for several")] = None,
    metadata: Annotated[str | None, typer.Option(help="JSON object")] = None,
    source: Annotated[str | None, typer.Option()] = None,
    expires_at: Annotated[datetime | None, typer.Option(help="ISO 8601")] = None,
    wait: Annotated[bool, typer.Option(help="return once it is searchable")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="the stored memory as JSON")] = False,
) -> None:
    """Store one memory; prints its id."""
    meta = _json_object(metadata)
    with _memory(worker=wait, embeds=True) as memory:
        record = _call(
            lambda: memory.add(
                content,
                user_id=user,
                app_id=app_id,
                tags=tag or [],
                metadata=meta or {},
                source=source,
                expires_at=expires_at,
                wait=wait,
            )
        )
    if as_json:
        print_json(record)
    else:
        out.print(str(record.id))


def _json_object(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        err.print("[red]error:[/red] --metadata must be a JSON object")
        raise typer.Exit(2)
    return value


@app.command()
def get(memory_id: str, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Show one memory."""
    with _memory() as memory:
        record = _call(lambda: memory.get(memory_id, user_id=user))
    _print_records([record], as_json)


@app.command("list")
def list_(
    user: UserOpt,
    app_id: Annotated[str | None, typer.Option("--app")] = None,
    tag: Annotated[list[str] | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 20,
    cursor: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """List memories, newest first."""
    with _memory() as memory:
        page = _call(
            lambda: memory.list(
                user_id=user, app_id=app_id, tags=tag or [], limit=limit, cursor=cursor
            )
        )
    _print_records(page.results, as_json)
    if page.next_cursor and not as_json:
        err.print(f"more: --cursor {page.next_cursor}")


@app.command()
def delete(
    user: UserOpt,
    memory_id: Annotated[str | None, typer.Argument()] = None,
    all_: Annotated[bool, typer.Option("--all", help="delete every memory of the user")] = False,
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help='{"deleted": N}')] = False,
) -> None:
    """Delete one memory, or all of a user's with --all (asks first unless --yes)."""
    if (memory_id is None) == (not all_):
        err.print("[red]error:[/red] give a memory id or --all, not both")
        raise typer.Exit(2)
    if all_:
        confirm(
            f"Delete every memory of user {user!r}? History is kept; this cannot be undone.",
            yes=yes,
        )
    with _memory() as memory:
        if all_:
            count = _call(lambda: memory.delete_all(user_id=user))
        else:
            assert memory_id is not None
            _call(lambda: memory.delete(memory_id, user_id=user))
            count = 1
    _print_count("deleted", count, as_json, f"deleted {count}")


def _print_count(key: str, count: int, as_json: bool, text: str) -> None:
    """A command's one number: a sentence for a reader, `{"deleted": 3}` with --json."""
    if as_json:
        print_json({key: count})
    else:
        out.print(text)


@app.command()
def history(memory_id: str, user: UserOpt, as_json: JsonOpt = False) -> None:
    """Show every change to a memory."""
    with _memory() as memory:
        entries: list[HistoryEntry] = _call(lambda: memory.history(memory_id, user_id=user))
    if as_json:
        print_json(entries)
        return
    shown = table("when", "action", "by", "old", "new")
    for e in entries:
        shown.add_row(
            e.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            e.action,
            e.actor,
            e.old_content or "",
            e.new_content or "",
        )
    out.print(shown)


@app.command("import")
def import_(
    path: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            readable=True,
            help="JSONL: a memory per line (the body of POST /v1/memories) or a conversation "
            "per line (the body of POST /v1/messages, with a messages list)",
        ),
    ],
    batch: Annotated[int, typer.Option(help="memories per batch")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="counts per outcome as JSON")] = False,
) -> None:
    """Bulk-import memories and conversations from a JSONL file, in batches, with progress."""
    from collections import Counter
    from functools import partial

    if lifecycle_commands.is_export_file(path):
        lifecycle_commands.import_export_file(path, as_json=as_json)
        return
    lines = _read_jsonl(path)
    actions: Counter[str] = Counter()
    with _memory(embeds=bool(lines)) as memory, progress() as bar:
        task = bar.add_task("importing", total=len(lines))
        pending: list[tuple[int, dict[str, Any]]] = []

        def flush() -> None:
            if pending:
                results = _at_lines(
                    path, [n for n, _ in pending], lambda: memory.add_many([i for _, i in pending])
                )
                actions.update(r.dedup.action for r in results)
                bar.advance(task, len(pending))
                pending.clear()

        for number, item in lines:
            if "messages" in item:
                flush()
                turns = _at_lines(path, [number], partial(_import_conversation, memory, item))
                actions.update(r.dedup.action for r in turns)
                bar.advance(task, 1)
            else:
                pending.append((number, item))
                if len(pending) >= batch:
                    flush()
        flush()
    if as_json:
        print_json({"lines": len(lines), **dict(sorted(actions.items()))})
        return
    out.print(
        f"imported {len(lines)} lines: "
        + ", ".join(f"{n} {action}" for action, n in sorted(actions.items()))
    )


def _at_lines(path: Path, numbers: list[int], fn: Callable[[], T]) -> T:
    """Run ``fn`` on the items read from ``numbers``; an error names the line it is about (a
    batch error's ``index`` is the position in the batch)."""
    try:
        return fn()
    except MemvaultError as exc:
        index = exc.details.get("index", 0)
        line = numbers[index] if isinstance(index, int) and 0 <= index < len(numbers) else None
        _fail(exc, where=f"{path}:{line}: " if line is not None else "")
        raise  # unreachable: _fail always exits


def _import_conversation(memory: CommandMemory, item: dict[str, Any]) -> list[AddResult]:
    from memvault.models import MessagesRequest
    from memvault.validation import validated

    convo = validated(MessagesRequest, **item)
    return memory.add_messages(list(convo.messages), **convo.model_dump(exclude={"messages"}))


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every line, checked before anything is stored: a bad one names its line number and the
    field, and nothing is imported."""
    from memvault.models import MemoryInput, MessagesRequest
    from memvault.validation import validated

    items = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if not isinstance(item, dict):
            err.print(f"[red]error:[/red] {path}:{number} is not a JSON object; nothing imported")
            raise typer.Exit(2)
        model = MessagesRequest if "messages" in item else MemoryInput
        try:
            validated(model, **item)
        except MemvaultError as exc:
            _fail(exc, where=f"{path}:{number}: ")
        items.append((number, item))
    return items


@app.command()
def search(
    query: str,
    user: UserOpt,
    app_id: Annotated[str | None, typer.Option("--app")] = None,
    tag: Annotated[list[str] | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 10,
    recipe: Annotated[str, typer.Option(help="hybrid, vector, keyword or recent")] = "hybrid",
    at: Annotated[
        datetime | None,
        typer.Option("--at", help="when the question is asked, for 'last week' (default now)"),
    ] = None,
    time_mode: Annotated[str, typer.Option(help="boost, filter or off")] = "boost",
    context: Annotated[int, typer.Option(help="neighbouring turns to show per hit")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Find a user's memories most relevant to QUERY (meaning + keywords)."""
    with _memory(embeds=recipe != "keyword") as memory:
        result = _call(
            lambda: memory.search(
                query,
                user_id=user,
                app_id=app_id,
                tags=tag or [],
                limit=limit,
                recipe=cast(Any, recipe),  # the service checks it: a wrong one exits 2
                reference_time=at,
                time_mode=cast(Any, time_mode),
                context_window=context,
            )
        )
    if as_json:
        print_json(result)
        return
    shown = table("score", "content")
    shown.add_column("id", no_wrap=True, min_width=36)
    for hit in result.results:
        around = "\n".join(f"  > {turn.content}" for turn in hit.context or [])
        shown.add_row(
            f"{hit.score:.4f}", hit.content + (f"\n{around}" if around else ""), str(hit.id)
        )
    out.print(shown)
    if result.diagnostics and result.diagnostics.time:
        span = result.diagnostics.time
        err.print(
            f"time: '{span.expression}' -> {span.after or '…'} to {span.before or '…'} "
            f"({span.mode})"
        )
    if result.degraded:
        err.print(f"[yellow]degraded:[/yellow] the query was embedded by {result.model}")


@app.command()
def worker(
    concurrency: Annotated[int, typer.Option(help="parallel workers in this process")] = 1,
) -> None:
    """Process embedding jobs until interrupted (run any number, on any machine)."""
    import asyncio
    import signal

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        from memvault.admin import AsyncAdmin
        from memvault.config import Settings

        admin = await AsyncAdmin.open(Settings(run_worker=False))
        err.print(
            f"memvault worker: {concurrency} worker(s), model {admin.embedder.model_id}; "
            "Ctrl-C to stop"
        )
        try:
            await admin.run_worker(stop, concurrency=concurrency)
        finally:
            await admin.close()

    try:
        asyncio.run(main())
    except MemvaultError as exc:
        _fail(exc)


@jobs_app.command("list")
def jobs_list(
    status: Annotated[str | None, typer.Option(help="queued, processing, done or failed")] = None,
    limit: Annotated[int, typer.Option()] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Show embedding jobs; --status failed lists the dead letters."""
    with _admin() as admin:
        found = _call(lambda: admin.list_jobs(status=status, limit=limit))
        counts = _call(admin.queue_counts)
    if as_json:
        print_json({"jobs": [j.model_dump(mode="json") for j in found], "counts": counts})
        return
    shown = table("job", "status", "attempts", "memory", "last error")
    for job in found:
        shown.add_row(
            str(job.id), job.status, str(job.attempts), str(job.memory_id), job.last_error or ""
        )
    out.print(shown)
    out.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no jobs")


@jobs_app.command("retry")
def jobs_retry(
    job_ids: Annotated[list[int] | None, typer.Argument()] = None,
    as_json: Annotated[bool, typer.Option("--json", help='{"queued": N}')] = False,
) -> None:
    """Queue failed jobs again (all of them, or the ids given)."""
    with _admin() as admin:
        count = _call(lambda: admin.retry_jobs(job_ids or None))
    _print_count("queued", count, as_json, f"queued {count} job(s) again")


@app.command()
def reembed(
    as_json: Annotated[bool, typer.Option("--json", help='{"reembedded": N}')] = False,
) -> None:
    """Rebuild vectors with the configured model, in the background, with progress.

    Search keeps answering throughout, from the memories already embedded by that model.
    """
    with _admin(worker=True) as admin:
        total = _call(admin.reembed)
        with progress() as bar:
            task = bar.add_task("re-embedding", total=total or 1)
            while True:
                counts = _call(admin.queue_counts)
                left = counts.get("queued", 0) + counts.get("processing", 0)
                bar.update(task, completed=max(total - left, 0))
                if left == 0:
                    break
                time.sleep(0.5)
    _print_count("reembedded", total, as_json, f"re-embedded {total} memories")


@app.command()
def cleanup(
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help='{"deleted": N}')] = False,
) -> None:
    """Delete memories whose expires_at has passed (reads already hide them); asks first
    unless --yes."""
    confirm("Delete every memory whose expires_at has passed, for every tenant?", yes=yes)
    with _admin() as admin:
        count = _call(admin.purge_expired)
    _print_count("deleted", count, as_json, f"deleted {count} expired memories")


@keys_app.command("generate")
def keys_generate() -> None:
    """Print a new random key for MEMVAULT_ENCRYPTION_KEY."""
    from memvault.crypto.envelope import generate_key

    out.print(generate_key())


@keys_app.command("rotate")
def keys_rotate(
    as_json: Annotated[bool, typer.Option("--json", help="the report as JSON")] = False,
) -> None:
    """Re-encrypt every memory under a new key, while the server keeps serving.

    Embedded mode: a new key is generated into the key file. With MEMVAULT_ENCRYPTION_KEY:
    set the new key there and the old one in MEMVAULT_ENCRYPTION_OLD_KEYS on every process
    first; this command then moves every row to the new key.
    """
    with _admin() as admin:
        err.print("re-encrypting…")
        report = _call(admin.rotate_encryption_key)
    if as_json:
        print_json(report)
        return
    out.print(
        f"active key {report.active_key_id}: {report.memories_reencrypted} memories and "
        f"{report.history_reencrypted} history rows re-encrypted"
    )
    if report.retired_key_ids:
        out.print(f"no row needs key(s) {', '.join(report.retired_key_ids)} any more")


@app.command()
def doctor(
    memory: Annotated[
        bool, typer.Option("--memory", help="report a user's memory health instead")
    ] = False,
    user: Annotated[str, typer.Option("--user", "-u", help="with --memory")] = "default",
    tenant: Annotated[str, typer.Option(help="with --memory")] = "default",
    as_json: JsonOpt = False,
) -> None:
    """Check the database, pgvector, the encryption key and the embedding model; with
    --memory, what a user's memories need (stale, duplicates, failed jobs, …) and the
    `memvault fix` that does it. Exits 1 when a check fails or something needs doing."""
    import asyncio
    from dataclasses import asdict

    from memvault.config import Settings
    from memvault.diagnostics import run_checks

    if memory:
        if not lifecycle_commands.memory_doctor(user, tenant, as_json=as_json):
            raise typer.Exit(1)
        return

    _call(target.local_only)
    checks = asyncio.run(run_checks(Settings()))
    if as_json:
        print_json([asdict(check) for check in checks])
    else:
        shown = table("check", "status", "detail")
        for check in checks:
            mark = "[green]ok[/green]" if check.ok else "[red]FAIL[/red]"
            shown.add_row(check.name, mark, check.detail)
        out.print(shown)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


# --- API keys ---------------------------------------------------------------------------------


@api_keys_app.command("create")
def api_keys_create(
    tenant: Annotated[str, typer.Option(help="the organisation the key acts for")],
    scopes: Annotated[
        str,
        typer.Option(
            help="comma-separated: read, write, admin (the tenant's), operator (the server's)"
        ),
    ] = "read,write",
    name: Annotated[str | None, typer.Option(help="a label to recognise it by")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the key and its record as JSON")] = False,
) -> None:
    """Create an API key and print it once: only its hash is stored."""
    with _admin() as admin:
        created = _call(lambda: admin.create_api_key(tenant, scopes, name))
    if as_json:
        print_json(created)
    else:
        out.print(created.key, highlight=False, soft_wrap=True)
    err.print(
        f"key {created.prefix} for tenant {created.tenant_id!r}, scopes "
        f"{','.join(created.scopes)}. Store it now: it cannot be shown again."
    )


@api_keys_app.command("list")
def api_keys_list(
    tenant: Annotated[str | None, typer.Option(help="only this tenant's keys")] = None,
    as_json: JsonOpt = False,
) -> None:
    """API keys (never their secrets)."""
    with _admin() as admin:
        keys = _call(lambda: admin.list_api_keys(tenant))
    if as_json:
        print_json(keys)
        return
    if not keys:
        out.print("no API keys")
        return
    shown = table("prefix", "tenant", "name", "scopes", "created", "revoked")
    for k in keys:
        shown.add_row(
            k.prefix,
            k.tenant_id,
            k.name or "",
            ",".join(k.scopes),
            k.created_at.strftime("%Y-%m-%d %H:%M"),
            k.revoked_at.strftime("%Y-%m-%d %H:%M") if k.revoked_at else "",
        )
    out.print(shown)


@api_keys_app.command("revoke")
def api_keys_revoke(
    key: Annotated[str, typer.Argument(help="the key's prefix, id, or the whole key")],
    yes: YesOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="the revoked key's record")] = False,
) -> None:
    """Revoke an API key: refused from the next request on, in every server process (asks
    first unless --yes)."""
    shown = key if len(key) <= 36 else key[:15]  # a whole key is shown as its prefix
    confirm(f"Revoke API key {shown!r}? Every client using it is refused from then on.", yes=yes)
    with _admin() as admin:
        revoked = _call(lambda: admin.revoke_api_key(key))
    if as_json:
        print_json(revoked)
    else:
        out.print(f"revoked {revoked.prefix} (tenant {revoked.tenant_id!r})")


def main() -> None:
    app(prog_name="memvault")
