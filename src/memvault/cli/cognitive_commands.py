"""``memvault cognitive …``: recall for a prompt, conversations, goals and the profile, from
the command line (through the service, like every other command)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from memvault.cli import target
from memvault.console import YesOpt, confirm, err, print_json, typer_app
from memvault.errors import MemvaultError

if TYPE_CHECKING:  # the store loads when a command runs, not for --help
    from memvault.cli.target import CommandMemory

app = typer_app(help="Cognitive memory: remember(), conversations, goals, the profile.")
T = TypeVar("T")

UserOpt = Annotated[str, typer.Option("--user", "-u", help="whose memory")]
ChannelOpt = Annotated[str, typer.Option("--channel", "-c", help="_global or a project")]
# These commands print JSON whatever is asked; --json is accepted so that a script can pass it
# to every command that prints data.
JsonAlways = Annotated[bool, typer.Option("--json", help="JSON (what it prints anyway)")]


@contextmanager
def _memory() -> Iterator[CommandMemory]:
    try:
        with target.memory() as memory:
            yield memory
    except MemvaultError as exc:
        err.print(f"memvault: {exc.message}")
        raise typer.Exit(1) from None


def _run(fn: Callable[[CommandMemory], T]) -> T:
    with _memory() as memory:
        try:
            return fn(memory)
        except MemvaultError as exc:
            err.print(f"memvault: {exc.message}")
            raise typer.Exit(1) from None


def _print(value: Any) -> None:
    print_json(value)


@app.command()
def remember(
    query: str,
    user: UserOpt,
    channel: ChannelOpt = "_global",
    conversation: Annotated[str | None, typer.Option(help="add this session's context")] = None,
    budget: Annotated[int | None, typer.Option(help="token budget of the prompt block")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the whole bundle as JSON")] = False,
) -> None:
    """Print the prompt block remember() builds for QUERY (or the bundle, with --json)."""
    bundle = _run(
        lambda m: m.remember(
            query,
            user_id=user,
            channel=channel,
            conversation_id=conversation,
            budget_tokens=budget,
        )
    )
    if as_json:
        _print(bundle)
    else:
        sys.stdout.write(bundle.as_prompt() + "\n")


@app.command("conversations")
def conversations(
    user: UserOpt, channel: ChannelOpt = "_global", as_json: JsonAlways = False
) -> None:
    """List conversations, newest first (a project channel lists _global's too)."""
    _print(_run(lambda m: m.list_conversations(user_id=user, channel=channel)))


@app.command("conversation")
def conversation(conversation_id: str, user: UserOpt, as_json: JsonAlways = False) -> None:
    """Show one conversation with its turns in order."""
    _print(_run(lambda m: m.get_conversation(conversation_id, user_id=user)))


@app.command("delete-conversation")
def delete_conversation(
    conversation_id: str,
    user: UserOpt,
    yes: YesOpt = False,
    as_json: JsonAlways = False,
) -> None:
    """Delete one conversation: its turns and all derived from them, its tool calls and
    working memory (asks first unless --yes); prints the deletion receipt."""
    confirm(f"Delete conversation {conversation_id!r} of {user!r}?", yes=yes)
    _print(_run(lambda m: m.erase_conversation(conversation_id, user_id=user)))


@app.command("add-goal")
def add_goal(
    description: str,
    user: UserOpt,
    channel: ChannelOpt = "_global",
    priority: Annotated[int, typer.Option(min=1, max=10)] = 5,
    parent: Annotated[str | None, typer.Option(help="parent goal id")] = None,
    as_json: JsonAlways = False,
) -> None:
    """Add a goal; prints it."""
    _print(
        _run(
            lambda m: m.add_goal(
                description, user_id=user, channel=channel, priority=priority, parent_id=parent
            )
        )
    )


@app.command("goals")
def goals(
    user: UserOpt,
    status: Annotated[
        str | None, typer.Option(help="active, completed, abandoned, blocked")
    ] = None,
    as_json: JsonAlways = False,
) -> None:
    """List goals, optionally by status."""
    _print(_run(lambda m: m.list_goals(user_id=user, status=status)))  # type: ignore[arg-type]


@app.command("complete-goal")
def complete_goal(
    goal_id: str,
    user: UserOpt,
    result: Annotated[str | None, typer.Option(help="what came of it")] = None,
    abandon: Annotated[bool, typer.Option(help="abandoned rather than completed")] = False,
    as_json: JsonAlways = False,
) -> None:
    """Mark a goal completed (or abandoned); prints it."""
    status = "abandoned" if abandon else "completed"
    _print(_run(lambda m: m.complete_goal(goal_id, user_id=user, status=status, result=result)))


@app.command("profile")
def profile(
    user: UserOpt,
    channel: ChannelOpt = "_global",
    style: Annotated[str | None, typer.Option(help="set the communication style")] = None,
    expertise: Annotated[list[str] | None, typer.Option(help="set expertise (repeat)")] = None,
    as_json: JsonAlways = False,
) -> None:
    """Show the profile, or update it with --style / --expertise."""
    if style is None and not expertise:
        _print(_run(lambda m: m.get_profile(user_id=user, channel=channel)))
        return
    _print(
        _run(
            lambda m: m.update_profile(
                user_id=user, channel=channel, communication_style=style, expertise=expertise
            )
        )
    )
