"""What every ``memvault`` command shares: the two consoles, tables, ``--json``, ``--yes`` and
the question a destructive command asks.

Neither console hard-wraps: a message names paths, ids and fields that a reader copies or a
script greps, and the terminal wraps long lines on its own. Written to a pipe or a file, a
table is as wide as its content (no cell cut at 80 columns).

rich loads on the first print, not on import: ``memvault --help`` prints none of it.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

# Wide enough for any row a command prints; a table is only as wide as its content.
PIPED_WIDTH = 100_000

JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]
YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="do not ask first (needed without a terminal)")
]


class _Lazy:
    """A console made on first use, so importing a command module loads no rich."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def get(self) -> Console:
        if self._console is None:
            self._console = _console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


def _console(*, stderr: bool) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # rich takes the width of whichever standard stream is a terminal (or COLUMNS, which some
    # shells export), so `memvault list | cat` would be cut to it: written anywhere but a
    # terminal, a table is as wide as its content.
    piped = not stream.isatty()
    return Console(stderr=stderr, soft_wrap=True, width=PIPED_WIDTH if piped else None)


out = cast("Console", _Lazy(stderr=False))
err = cast("Console", _Lazy(stderr=True))


def progress() -> Progress:
    """A progress bar on stderr (results stay alone on stdout): done of total, the rate, the
    time taken and the time left (a bulk import of years of chat runs for minutes)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            shown = f"{speed:,.0f}/s" if speed else ""
            return Text(shown, style="progress.data.speed")

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        Rate(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=cast("_Lazy", err).get(),
    )


def table(*headers: str) -> Table:
    from rich.table import Table

    return Table(*headers)


def print_json(value: Any) -> None:
    """A pydantic model, a list of them, or plain JSON data, as indented JSON on stdout."""
    if isinstance(value, list):
        value = [_plain(v) for v in value]
    out.print_json(json.dumps(_plain(value), default=str))


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def confirm(question: str, *, yes: bool) -> None:
    """Ask before destroying something; without a terminal to ask on, refuse unless --yes
    (a script that means it says so, one that does not is not answered by its stdin)."""
    if yes:
        return
    if not sys.stdin.isatty():
        from rich.markup import escape

        err.print(
            f"[red]error:[/red] {escape(question)} Not asked: there is no terminal to ask on. "
            "Pass --yes to go ahead.",
            highlight=False,
        )
        raise typer.Exit(2)
    typer.confirm(question, abort=True, err=True)


class Group(TyperGroup):
    """Help as plain text (rich's help renderer alone takes longer to import than the rest of
    the command), listing each command's first sentence whole rather than cut to the width."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def typer_app(**options: Any) -> typer.Typer:
    """A command group as every memvault group is made: plain help, no locals in tracebacks
    (they would print settings, keys included)."""
    options.setdefault("no_args_is_help", True)
    return typer.Typer(
        cls=Group, rich_markup_mode=None, pretty_exceptions_show_locals=False, **options
    )
