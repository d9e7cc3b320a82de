"""``memvault webhooks …``: a tenant's webhook subscriptions, their deliveries and replay. The
commands call the service (``Memory.create_webhook`` and its siblings) and nothing below it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from memvault.cli import target
from memvault.console import JsonOpt, err, out, print_json, table, typer_app
from memvault.errors import MemvaultError

if TYPE_CHECKING:  # the store loads when a command runs, not for --help
    from memvault.cli.target import CommandMemory
    from memvault.events import Webhook

app = typer_app(help="Webhooks: subscribe URLs to this tenant's events, see deliveries, replay.")
T = TypeVar("T")
TenantOpt = Annotated[str, typer.Option("--tenant", help="the tenant (organisation) acted in")]
IdArg = Annotated[str, typer.Argument(help="the webhook's id")]


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except MemvaultError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False)
        raise typer.Exit(1) from None


@contextmanager
def _memory(tenant: str) -> Iterator[CommandMemory]:
    try:
        with target.memory(tenant=tenant) as memory:
            yield memory
    except MemvaultError as exc:
        err.print(f"[red]error:[/red] {exc.message}", highlight=False)
        raise typer.Exit(1) from None


def _show(hooks: list[Webhook]) -> None:
    shown = table("id", "url", "events", "filters", "content", "enabled")
    for h in hooks:
        filters = ", ".join(f"{k}={v}" for k, v in (("app", h.app_id), ("user", h.user_id)) if v)
        shown.add_row(
            str(h.id),
            h.url,
            ", ".join(h.event_types or ["all"]),
            filters,
            "yes" if h.include_content else "no",
            "yes" if h.enabled else "no",
        )
    out.print(shown)


@app.command("add")
def add(
    url: Annotated[str, typer.Argument(help="the endpoint (https://…)")],
    event: Annotated[
        list[str] | None, typer.Option("--event", "-e", help="an event type (repeat); none: all")
    ] = None,
    app_id: Annotated[str | None, typer.Option("--app", help="only this app's events")] = None,
    user: Annotated[str | None, typer.Option("--user", "-u", help="only this user's")] = None,
    include_content: Annotated[
        bool, typer.Option("--include-content", help="memory and turn events carry the text")
    ] = False,
    description: Annotated[str | None, typer.Option(help="a note for operators")] = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Subscribe a URL; prints the signing secret, shown this once."""
    with _memory(tenant) as memory:
        hook = _call(
            lambda: memory.create_webhook(
                url,
                event_types=event or None,
                app_id=app_id,
                user_id=user,
                include_content=include_content,
                description=description,
            )
        )
    if as_json:
        print_json(hook)
        return
    _show([hook])
    out.print(f"secret (shown once): {hook.secret}", highlight=False)


@app.command("list")
def list_(tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """The tenant's subscriptions (never their secrets)."""
    with _memory(tenant) as memory:
        hooks = _call(memory.list_webhooks)
    if as_json:
        print_json(hooks)
        return
    _show(hooks)


def _print_one(hook: Webhook, as_json: bool) -> None:
    if as_json:
        print_json(hook)
    else:
        _show([hook])


@app.command("enable")
def enable(webhook_id: IdArg, tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """Send this subscription's events again (those waiting go out in order)."""
    with _memory(tenant) as memory:
        hook = _call(lambda: memory.update_webhook(webhook_id, enabled=True))
    _print_one(hook, as_json)


@app.command("disable")
def disable(webhook_id: IdArg, tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """Pause a subscription: its events wait."""
    with _memory(tenant) as memory:
        hook = _call(lambda: memory.update_webhook(webhook_id, enabled=False))
    _print_one(hook, as_json)


@app.command("remove")
def remove(webhook_id: IdArg, tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """Unsubscribe: the subscription and its deliveries go."""
    with _memory(tenant) as memory:
        _call(lambda: memory.delete_webhook(webhook_id))
    if as_json:
        print_json({"removed": str(webhook_id)})
        return
    out.print("removed")


@app.command("rotate-secret")
def rotate_secret(
    webhook_id: IdArg, tenant: TenantOpt = "default", as_json: JsonOpt = False
) -> None:
    """A new signing secret, printed this once."""
    with _memory(tenant) as memory:
        hook = _call(lambda: memory.rotate_webhook_secret(webhook_id))
    if as_json:
        print_json(hook)
        return
    out.print(f"secret (shown once): {hook.secret}", highlight=False)


@app.command("deliveries")
def deliveries(
    webhook_id: IdArg,
    state: Annotated[str | None, typer.Option(help="pending, delivered or dead")] = None,
    limit: Annotated[int, typer.Option()] = 50,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """A subscription's deliveries, newest first."""
    with _memory(tenant) as memory:
        found = _call(lambda: memory.webhook_deliveries(webhook_id, state=state, limit=limit))
    if as_json:
        print_json(found)
        return
    shown = table("id", "event", "type", "user", "state", "tries", "last", "at")
    for d in found:
        shown.add_row(
            str(d.id),
            str(d.event_id),
            d.event_type,
            d.user_id or "",
            d.state,
            str(d.attempts),
            d.last_error or ("" if d.last_status is None else str(d.last_status)),
            f"{d.occurred_at:%Y-%m-%d %H:%M:%S}",
        )
    out.print(shown)


@app.command("replay")
def replay(
    webhook_id: IdArg,
    delivery: Annotated[
        int | None, typer.Option("--delivery", help="one delivery; none: every dead one")
    ] = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Send deliveries again: one, or every dead-lettered one."""
    with _memory(tenant) as memory:
        done = _call(lambda: memory.replay_webhook(webhook_id, delivery_id=delivery))
    if as_json:
        print_json(done)
        return
    out.print(f"queued {done.replayed}")
