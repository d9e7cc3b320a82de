"""The shape DESIGN.md draws, read from the code itself: dependencies point one way, the faces
reach the store only through the service, no two modules import each other in a circle
(typing-only and function-level imports included), and every face takes the filters the one
model defines."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from pydantic import BaseModel

import memvault
from memvault.client import ROUTES, Route
from memvault.db import tables
from memvault.db.records import ApiKeyRow, AuditRow, HistoryRow, JobRow, MemoryRow, ScheduledRunRow
from memvault.models import MemoryQuery, SearchRequest

ROOT = Path(memvault.__file__).parent
FACES = (
    "memvault.api",
    "memvault.cli",
    "memvault.mcp",
    "memvault.client",
    "memvault.diagnostics",
    "memvault.integrations",
    "memvault.compat",
)
# The framework adapters and compat APIs are thin over the service's public faces: nothing else.
ADAPTER_REACH = {
    "memvault",
    "memvault.service",
    "memvault.client",
    "memvault._sync",
    "memvault.models",
    "memvault.errors",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    _module_name(p): p for p in ROOT.rglob("*.py") if "migrations" not in p.relative_to(ROOT).parts
}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {m for n in names if n.startswith("memvault") and (m := _resolve(n))}
    return found


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _is_face(name: str) -> bool:
    return any(name == face or name.startswith(face + ".") for face in FACES)


def test_the_faces_never_reach_below_the_service() -> None:
    reaching = {
        (name, target)
        for name, targets in GRAPH.items()
        if _is_face(name)
        for target in targets
        if target.startswith("memvault.db")
    }
    assert reaching == set()


def test_adapters_stand_on_the_service_faces_alone() -> None:
    adapters = ("memvault.integrations", "memvault.compat")
    reaching = {
        (name, target)
        for name, targets in GRAPH.items()
        if name.startswith(adapters)
        for target in targets
        if target not in ADAPTER_REACH and not target.startswith(adapters)
    }
    assert reaching == set()
    assert any(name.startswith("memvault.integrations.") for name in GRAPH)


def test_no_module_imports_itself_in_a_circle() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert cycles == []


def _keywords(function: object) -> list[str]:
    return [
        p.name
        for p in inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]


@pytest.mark.parametrize(
    ("method", "model", "positional"),
    [("list", MemoryQuery, set()), ("search", SearchRequest, {"query"})],
)
def test_every_face_takes_the_filters_the_model_defines(
    method: str, model: type[BaseModel], positional: set[str]
) -> None:
    expected = [name for name in model.model_fields if name not in positional]
    faces = (
        memvault.AsyncMemory,
        memvault.Memory,
        memvault.AsyncMemoryClient,
        memvault.MemoryClient,
    )
    for face in faces:
        assert _keywords(getattr(face, method)) == expected, face.__name__


def test_the_routes_take_the_same_filters(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    listed = spec["paths"]["/v1/memories"]["get"]["parameters"]
    assert [p["name"] for p in listed] == list(MemoryQuery.model_fields)
    body = spec["paths"]["/v1/memories/search"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(spec["components"]["schemas"][schema]["properties"]) == set(
        SearchRequest.model_fields
    )


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_every_client_route_has_the_library_method_it_stands_in_for(route: Route) -> None:
    name = route.name
    library = inspect.signature(getattr(memvault.Memory, name))
    assert getattr(memvault.AsyncMemory, name) is route.service
    assert inspect.signature(getattr(memvault.MemoryClient, name)) == library
    assert inspect.signature(getattr(memvault.AsyncMemoryClient, name)) == library
    hints = typing.get_type_hints(route.service)
    assert typing.get_type_hints(getattr(memvault.AsyncMemoryClient, name)) == hints
    assert set(route.path_names) <= set(library.parameters), "a path name no argument fills"
    assert set(route.wire) <= set(library.parameters), "a wire name for no argument"


def test_the_client_routes_name_each_library_method_once() -> None:
    names = [route.name for route in ROUTES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_every_client_route_is_one_the_server_answers(client: TestClient, route: Route) -> None:
    spec = client.get("/openapi.json").json()
    operations = spec["paths"].get(route.path, {})
    assert route.method.lower() in operations, f"{route.method} {route.path} is not served"
    operation = operations[route.method.lower()]
    if route.body is None:
        assert "requestBody" not in operation
    else:
        body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert body.rsplit("/", 1)[-1] == route.body.__name__
    served = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    arguments = inspect.signature(route.service).parameters
    named = set(route.query if isinstance(route.query, tuple) else route.query.model_fields)
    sent = named & {route.wire.get(name, name) for name in arguments}
    assert sent or not named, f"{route.method} {route.path}: no argument goes in its query"
    assert sent <= served, f"{route.method} {route.path} takes no {sorted(sent - served)}"


@pytest.mark.parametrize(
    ("record", "table"),
    [
        (MemoryRow, tables.memories),
        (HistoryRow, tables.memory_history),
        (JobRow, tables.embedding_jobs),
        (ApiKeyRow, tables.api_keys),
        (ScheduledRunRow, tables.scheduled_runs),
        (AuditRow, tables.audit_log),
    ],
)
def test_a_record_names_every_column_of_its_table(record: type, table: sa.Table) -> None:
    assert [f.name for f in dataclasses.fields(record)] == [c.name for c in table.columns]


def test_rows_leave_db_as_typed_records() -> None:
    """No function in db/ hands back SQLAlchemy rows: callers read records' typed fields."""
    untyped = []
    for name, path in MODULES.items():
        if not name.startswith("memvault.db") or name == "memvault.db.records":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
                returns = ast.unparse(node.returns)
                if "Row[" in returns or "AnyRow" in returns or returns == "Row":
                    untyped.append(f"{name}.{node.name} -> {returns}")
    assert untyped == []


def test_code_comments_say_why_not_which_issue() -> None:
    """An issue number means nothing to a reader of the code; what it asked for does."""
    import re

    named = re.compile(r"\bissue \d+", re.IGNORECASE)
    sources = [*ROOT.rglob("*.py"), *(ROOT.parent.parent / "tests").rglob("*.py")]
    found = [
        f"{path.name}:{n}"
        for path in sources
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if named.search(line)
    ]
    assert found == []


def _runtime_imports(tree: ast.AST) -> list[str]:
    """The modules a file imports when it runs (what ``if TYPE_CHECKING:`` guards aside)."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def test_sqlalchemy_is_imported_only_in_db() -> None:
    """SQL and connections live in db/: the rest asks it for units of work and typed rows."""
    importing = {
        name
        for name, path in MODULES.items()
        if not name.startswith("memvault.db")
        for imported in _runtime_imports(ast.parse(path.read_text()))
        if imported == "sqlalchemy" or imported.startswith("sqlalchemy.")
    }
    assert importing == set()
