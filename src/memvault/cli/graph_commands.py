"""``memvault facts``, ``memvault entities`` and ``memvault graph``: the knowledge graph from the
command line. Every command calls the service (``Memory``) and nothing below it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from memvault.cli import target
from memvault.console import JsonOpt, err, out, print_json, table, typer_app
from memvault.errors import MemvaultError

if TYPE_CHECKING:  # the store loads when a command runs, not for --help
    from memvault.cli.target import CommandMemory
    from memvault.models import Entity, Fact

facts_app = typer_app(help="Facts of the knowledge graph.")
entities_app = typer_app(help="Entities of the knowledge graph.")
graph_app = typer_app(help="The knowledge graph as a whole.")
T = TypeVar("T")

UserOpt = Annotated[str, typer.Option("--user", "-u", help="owner of the facts")]
# Commands that print JSON whatever is asked accept --json, so a script can pass it everywhere.
JsonAlways = Annotated[bool, typer.Option("--json", help="JSON (what it prints anyway)")]
When = Annotated[datetime | None, typer.Option(help="ISO time, e.g. 2024-05-01T00:00:00Z")]


@contextmanager
def _memory() -> Iterator[CommandMemory]:
    try:
        with target.memory() as memory:
            yield memory
    except MemvaultError as exc:
        _fail(exc)


def _fail(exc: MemvaultError) -> None:
    problems = exc.details.get("errors")
    detail = ""
    if isinstance(problems, list) and problems:
        detail = " " + "; ".join(f"{p.get('field')}: {p.get('problem')}" for p in problems)
    err.print(f"[red]error:[/red] {exc.message}{detail}", highlight=False)
    raise typer.Exit(1)


def _call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except MemvaultError as exc:
        _fail(exc)
        raise


def _json(items: Any) -> None:
    print_json(items)


def _print_facts(facts: list[Fact], as_json: bool) -> None:
    if as_json:
        _json(facts)
        return
    shown = table("subject", "predicate", "object / value", "valid", "recorded", "superseded")
    shown.add_column("id", no_wrap=True, min_width=36)
    for f in facts:
        valid = f"{_day(f.valid_from)} … {_day(f.valid_until)}"
        shown.add_row(
            f.subject,
            f.predicate,
            f.object or f.value or "",
            valid,
            _day(f.recorded_at),
            _day(f.superseded_at),
            str(f.id),
        )
    out.print(shown)


def _print_entities(entities: list[Entity], as_json: bool) -> None:
    if as_json:
        _json(entities)
        return
    shown = table("name", "type", "aliases", "salience")
    shown.add_column("id", no_wrap=True, min_width=36)
    for e in entities:
        shown.add_row(e.name, e.type, ", ".join(e.aliases), f"{e.salience:.2f}", str(e.id))
    out.print(shown)


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


@facts_app.command("add")
def add_fact(
    subject: str,
    predicate: str,
    user: UserOpt,
    object: Annotated[str | None, typer.Option("--object", help="an entity name")] = None,
    value: Annotated[str | None, typer.Option("--value", help="a literal value")] = None,
    valid_from: When = None,
    confidence: Annotated[float | None, typer.Option(min=0, max=1)] = None,
    source: Annotated[str | None, typer.Option()] = None,
    as_json: JsonOpt = False,
) -> None:
    """State a fact: SUBJECT PREDICATE --object ENTITY or --value LITERAL (@user: the user)."""
    with _memory() as memory:
        fact = _call(
            lambda: memory.add_fact(
                subject,
                predicate,
                user_id=user,
                object=object,
                value=value,
                valid_from=valid_from,
                confidence=confidence,
                source=source,
            )
        )
    _print_facts([fact], as_json)


@facts_app.command("list")
def list_facts(
    user: UserOpt,
    entity: Annotated[str | None, typer.Option(help="an entity's name, alias or id")] = None,
    predicate: Annotated[str | None, typer.Option()] = None,
    valid_at: When = None,
    known_at: When = None,
    history: Annotated[bool, typer.Option("--history", help="superseded facts too")] = False,
    limit: int = 100,
    as_json: JsonOpt = False,
) -> None:
    """What is true now as currently known (or at --valid-at / --known-at, or --history)."""
    with _memory() as memory:
        found = _call(
            lambda: memory.facts(
                user_id=user,
                entity=entity,
                predicate=predicate,
                valid_at=valid_at,
                known_at=known_at,
                include_superseded=history,
                limit=limit,
            )
        )
    _print_facts(found, as_json)


@facts_app.command("retire")
def retire_fact(
    fact_id: str,
    user: UserOpt,
    never_held: Annotated[
        bool, typer.Option("--never-held", help="it was never true (empty valid time)")
    ] = False,
    as_json: JsonAlways = False,
) -> None:
    """Retire FACT_ID: it stops holding now (kept in the history, superseded)."""
    with _memory() as memory:
        _json(_call(lambda: memory.retire_fact(fact_id, user_id=user, never_held=never_held)))


@facts_app.command("correct")
def correct_fact(
    fact_id: str,
    user: UserOpt,
    object: Annotated[str | None, typer.Option("--object", help="an entity name")] = None,
    value: Annotated[str | None, typer.Option("--value", help="a literal value")] = None,
    as_json: JsonAlways = False,
) -> None:
    """Correct FACT_ID with --object or --value: the new fact replaces it from its start."""
    with _memory() as memory:
        _json(_call(lambda: memory.correct_fact(fact_id, user_id=user, object=object, value=value)))


@facts_app.command("restore")
def restore_fact(fact_id: str, user: UserOpt, as_json: JsonAlways = False) -> None:
    """Undo the retire or correction of FACT_ID (refused if something changed in between)."""
    with _memory() as memory:
        _json(_call(lambda: memory.restore_fact(fact_id, user_id=user)))


@facts_app.command("reviews")
def fact_reviews(
    user: UserOpt, limit: int = 50, offset: int = 0, as_json: JsonAlways = False
) -> None:
    """Contradictions kept side by side by the flag_review policy, newest first (JSON)."""
    with _memory() as memory:
        found = _call(lambda: memory.fact_reviews(user_id=user, limit=limit, offset=offset))
    _json(found)


@facts_app.command("resolve")
def resolve_review(
    review_id: Annotated[str, typer.Argument(help="the review's id, from `facts reviews`")],
    user: UserOpt,
    keep: Annotated[
        str,
        typer.Option(
            help="fact: the newer fact replaces the one it contradicts; conflicts_with: the "
            "newer one never held; both: no contradiction, both stay current"
        ),
    ],
    as_json: JsonAlways = False,
) -> None:
    """Decide a contradiction awaiting review (JSON). Nothing is deleted: a replaced fact stays
    in the history, superseded, and other reviews naming it close too."""
    with _memory() as memory:
        done = _call(lambda: memory.resolve_fact_review(review_id, user_id=user, keep=keep))
    _json(done)


@entities_app.command("list")
def list_entities(
    user: UserOpt,
    q: Annotated[str | None, typer.Option("--q", "-q", help="a name or alias")] = None,
    type: Annotated[str | None, typer.Option("--type")] = None,
    limit: int = 50,
    as_json: JsonOpt = False,
) -> None:
    """Entities by name or alias, else the most salient."""
    with _memory() as memory:
        found = _call(lambda: memory.entities(user_id=user, q=q, type=type, limit=limit))
    _print_entities(found, as_json)


@entities_app.command("show")
def show_entity(entity_id: str, user: UserOpt, as_json: JsonAlways = False) -> None:
    """One entity and its current facts (JSON)."""
    with _memory() as memory:
        _json(_call(lambda: memory.entity(entity_id, user_id=user)))


@entities_app.command("graph")
def entity_graph(
    entity_id: str,
    user: UserOpt,
    depth: Annotated[int, typer.Option(min=1, max=3)] = 2,
    valid_at: When = None,
    known_at: When = None,
    limit: Annotated[int | None, typer.Option(help="nodes at most (reached_nodes: all)")] = None,
    as_json: JsonAlways = False,
) -> None:
    """The entity's neighbourhood: nodes and edges within DEPTH hops (JSON); the graph as it
    held in the world at --valid-at, or as the store knew it at --known-at."""
    with _memory() as memory:
        _json(
            _call(
                lambda: memory.entity_graph(
                    entity_id,
                    user_id=user,
                    depth=depth,
                    valid_at=valid_at,
                    known_at=known_at,
                    limit=limit,
                )
            )
        )


@entities_app.command("merge")
def merge_entities(
    entity_id: str,
    user: UserOpt,
    into: Annotated[str, typer.Option(help="entity id")],
    as_json: JsonAlways = False,
) -> None:
    """Merge ENTITY_ID into --into (recorded; `split` undoes it)."""
    with _memory() as memory:
        _json(_call(lambda: memory.merge_entities(entity_id, into=into, user_id=user)))


@entities_app.command("split")
def split_entity(entity_id: str, user: UserOpt, as_json: JsonAlways = False) -> None:
    """Undo the last merge of ENTITY_ID."""
    with _memory() as memory:
        _json(_call(lambda: memory.split_entity(entity_id, user_id=user)))


@graph_app.command("show")
def user_graph(
    user: UserOpt,
    valid_at: When = None,
    known_at: When = None,
    limit: Annotated[int | None, typer.Option(help="nodes at most (reached_nodes: all)")] = None,
    as_json: JsonAlways = False,
) -> None:
    """The user's whole graph: every entity, the most salient first, and the edges among
    them (JSON); as it held at --valid-at, or as the store knew it at --known-at."""
    with _memory() as memory:
        _json(
            _call(
                lambda: memory.user_graph(
                    user_id=user, valid_at=valid_at, known_at=known_at, limit=limit
                )
            )
        )


@graph_app.command("export")
def export_graph(
    format: Annotated[str, typer.Option("--format", help="cypher or csv")] = "cypher",
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="one user (default: the whole tenant)")
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="write the files here (default: print)")
    ] = None,
) -> None:
    """The current graph as Cypher statements or CSV files for Neo4j / FalkorDB."""
    try:
        with target.local_memory() as memory:  # no HTTP operation serves it
            files = memory.export_graph(format=format, user_id=user)
    except MemvaultError as exc:
        _fail(exc)
        raise
    if out_dir is None:
        for name, text in files.items():
            if len(files) > 1:
                typer.echo(f"# {name}")
            typer.echo(text, nl=False)
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out_dir / name).write_text(text)
        err.print(f"wrote {out_dir / name}")
