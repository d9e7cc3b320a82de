"""The shape docs/development.md describes, read from the code itself: dependencies point one
way, the faces (API, CLI, MCP, client) reach the store only through the service, no two
modules import each other in a circle (typing-only and function-level imports included), every
face takes the filters the one model defines, every operation is declared once (the routes, the
client, the MCP tools and the sync face are derived), the service is composed of resources
rather than mixins, and no two modules share a name."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import functools
import inspect
import typing
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel

import memvault
from memvault._compose import resources
from memvault._stubs import (
    CLIENT_SURFACE,
    KEYWORDS,
    client_surface,
    keywords_name,
    keywords_source,
)
from memvault._sync import NOT_DERIVED, STUB, TAKES, coroutine_methods, surface_stub
from memvault.api import create_app
from memvault.api.routes import query_model, split_example
from memvault.db import tables
from memvault.db.records import ApiKeyRow, AuditRow, HistoryRow, JobRow, MemoryRow, ScheduledRunRow
from memvault.models import MemoryQuery, SearchRequest
from memvault.operations import OPERATIONS, Operation, client_operations
from tests.conftest import KEY

ROOT = Path(memvault.__file__).parent
FACES = (
    "memvault.api",
    "memvault.cli",
    "memvault.mcp",
    "memvault.client",
    "memvault.diagnostics",
    "memvault.integrations",
    "memvault.compat",
    "memvault.ui",
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
    _module_name(p): p
    for p in [*ROOT.rglob("*.py"), *ROOT.rglob("*.pyi")]  # stubs import for the type checker
    if "migrations" not in p.relative_to(ROOT).parts
}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path, *, typing_too: bool = True) -> set[str]:
    """The memvault modules ``path`` imports; without ``typing_too``, those it imports when it
    runs (module level and inside functions, not ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if not typing_too
        and isinstance(block, ast.If)
        and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {m for n in names if n.startswith("memvault") and (m := _resolve(n))}
    return found


# Parsed when a test first asks, not at import: every xdist worker imports this module to
# collect it, and parsing every source file twice cost each one seconds before any test ran.
@functools.cache
def import_graph() -> dict[str, set[str]]:
    return {name: _imports(path) - {name} for name, path in MODULES.items()}


def _is_face(name: str) -> bool:
    return any(name == face or name.startswith(face + ".") for face in FACES)


def test_the_faces_never_reach_below_the_service() -> None:
    reaching = {
        (name, target)
        for name, targets in import_graph().items()
        if _is_face(name)
        for target in targets
        if target.startswith("memvault.db")
    }
    assert reaching == set()


def test_adapters_stand_on_the_service_faces_alone() -> None:
    adapters = ("memvault.integrations", "memvault.compat")
    reaching = {
        (name, target)
        for name, targets in import_graph().items()
        if name.startswith(adapters)
        for target in targets
        if target not in ADAPTER_REACH and not target.startswith(adapters)
    }
    assert reaching == set()
    assert any(name.startswith("memvault.integrations.") for name in import_graph())


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
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

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return cycles


def test_no_module_imports_itself_in_a_circle() -> None:
    assert _cycles(import_graph()) == []


# The package order, lowest first (docs/development.md, "Layers"): a module imports from its
# own layer and those below it, never from one above. Each name is a package or a top-level
# module of memvault; a new one must be placed here (the test names it).
LAYERS: tuple[tuple[str, ...], ...] = (
    # foundation: settings, errors, plain data and helpers that know nothing of the store
    ("errors", "config", "console", "text", "jsonvalues", "metrics", "tracing", "logs",
     "validation", "consistency", "idempotency_key", "models", "events", "deadline", "_compose",
     "_sync", "_keywords", "tls"),
    # keys, text reading and the outside world (LLMs, outbound HTTP)
    ("crypto", "language", "llm", "outbound"),
    ("db",),
    # what stands on the tables: keys, sealing, sessions, API keys, embeddings, vector indexes
    ("keys", "auth", "embedding", "vectorindex", "scheduling"),
    ("retrieval",),
    ("graph",),
    ("pipeline",),
    ("cognitive",),
    ("lifecycle", "worker"),
    # the store assembled, and the resources over it
    ("backend", "runtime", "context", "idempotency", "memories", "webhooks", "rotation",
     "datadir"),
    # the operation table and the HTTP shapes it names
    ("wire", "paths", "operations"),
    ("service", "_memory_methods"),
    ("admin",),
    # faces
    ("ui", "api", "mcp", "client", "_client_surface", "_stubs", "_typescript", "cli",
     "diagnostics", "integrations", "compat"),
)  # fmt: skip
LAYER = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _top(module: str) -> str:
    return module.split(".")[1] if "." in module else module


@functools.cache
def runtime_graph() -> dict[str, set[str]]:
    return {
        name: _imports(path, typing_too=False) - {name}
        for name, path in MODULES.items()
        if path.suffix == ".py" and name != "memvault"  # the root re-exports the faces
    }


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes up the package order, as ``module -> module``."""
    return sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        for target in targets
        if target != "memvault" and LAYER[_top(target)] > LAYER[_top(name)]
    )


def test_every_package_has_its_place_in_the_order() -> None:
    placed = {_top(name) for name in MODULES if name != "memvault"}
    assert placed - set(LAYER) == set(), "add it to LAYERS (docs/development.md, Layers)"
    assert set(LAYER) - placed == set(), "a layer names a package that is gone"


def test_no_import_goes_up_the_package_order() -> None:
    assert upward_imports(runtime_graph()) == []


def test_an_upward_import_is_caught() -> None:
    # The store's SQL reaching for the service: the shape of the inversions this test stops.
    graph = {"memvault.db.tables": {"memvault.models"}, "memvault.service": {"memvault.db.tables"}}
    assert upward_imports(graph) == []
    graph["memvault.db.tables"].add("memvault.service")
    assert upward_imports(graph) == ["memvault.db.tables -> memvault.service"]


def test_no_two_packages_import_each_other_in_a_circle() -> None:
    packages: dict[str, set[str]] = {}
    for name, targets in runtime_graph().items():
        packages.setdefault(_top(name), set()).update(
            _top(t) for t in targets if t != "memvault" and _top(t) != _top(name)
        )
    assert _cycles(packages) == []


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


@pytest.fixture(scope="module")
def app() -> FastAPI:
    """The served app's routes and OpenAPI document, built once for the module: they are fixed
    when the app is made, so no store is opened (the lifespan never runs)."""
    settings = memvault.Settings(
        database_url="postgresql://unused@127.0.0.1:1/unused", encryption_key=KEY, auth="off"
    )
    return create_app(settings)


def test_the_routes_take_the_same_filters(app: FastAPI) -> None:
    spec = app.openapi()
    listed = spec["paths"]["/v1/memories"]["get"]["parameters"]
    assert [p["name"] for p in listed] == list(MemoryQuery.model_fields)
    body = spec["paths"]["/v1/memories/search"]["post"]["requestBody"]["content"]
    schema = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(spec["components"]["schemas"][schema]["properties"]) == set(
        SearchRequest.model_fields
    )


CLIENT_OPERATIONS = client_operations()
ROUTED = tuple(op for op in OPERATIONS if op.routed)


def _library(op: Operation) -> typing.Callable[..., typing.Any]:
    assert op.service is not None
    method: typing.Callable[..., typing.Any] = getattr(memvault.AsyncMemory, op.service)
    return method


@pytest.mark.parametrize("op", CLIENT_OPERATIONS, ids=lambda op: op.service)
def test_every_client_method_has_the_library_method_it_stands_in_for(op: Operation) -> None:
    name, service = op.service, _library(op)
    assert name is not None
    library = inspect.signature(getattr(memvault.Memory, name))
    assert inspect.signature(getattr(memvault.MemoryClient, name)) == library
    assert inspect.signature(getattr(memvault.AsyncMemoryClient, name)) == library
    hints = typing.get_type_hints(service)
    assert typing.get_type_hints(getattr(memvault.AsyncMemoryClient, name)) == hints
    assert set(op.path_names) <= set(library.parameters), "a path name no argument fills"
    assert set(op.renamed) <= set(library.parameters), "a wire name for no argument"


def test_the_table_names_each_library_method_and_route_once() -> None:
    services = [op.service for op in CLIENT_OPERATIONS]
    assert len(services) == len(set(services))
    routes = [(op.method, op.path) for op in ROUTED]
    assert len(routes) == len(set(routes))
    unrouted = [(op.method, op.path) for op in OPERATIONS if not op.routed]
    assert set(unrouted) <= set(routes), "an operation answered by no route"


def _served(app: FastAPI) -> dict[tuple[str, str], dict[str, typing.Any]]:
    spec = app.openapi()
    return {
        (method.upper(), path): operation
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    }


def test_the_served_operations_are_the_table_and_each_is_documented(app: FastAPI) -> None:
    served = _served(app)
    assert set(served) == {(op.method, op.path) for op in ROUTED}
    for (method, path), operation in served.items():
        assert operation.get("summary") and operation.get("description"), (method, path)
        samples = operation.get("x-codeSamples") or [{}]
        assert samples[0].get("source", "").startswith(f"curl -X {method} "), (method, path)
        if "requestBody" in operation:
            assert "example" in operation["requestBody"]["content"]["application/json"]


def _api_routes(routes: list[typing.Any]) -> typing.Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):  # an included router
            yield from _api_routes(route.original_router.routes)


def _route_scope(route: APIRoute) -> str | None:
    pending = list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        if getattr(dependency.call, "__name__", "") == "memory_for":
            return str(inspect.getclosurevars(dependency.call).nonlocals["scope"])
        pending.extend(dependency.dependencies)
    return None


@pytest.mark.parametrize("op", ROUTED, ids=lambda op: f"{op.method} {op.path}")
def test_every_operation_is_served_as_the_table_declares(app: FastAPI, op: Operation) -> None:
    operation = _served(app)[(op.method, op.path)]
    assert (operation["summary"], operation["description"]) == (op.summary, op.description)
    assert str(op.status) in operation["responses"]
    routes = _api_routes(app.routes)
    # The table's routes (the dashboard's pages are mounted under their own prefix).
    ours = [r for r in routes if r.endpoint.__module__.startswith("memvault.api.routes")]
    (route,) = [r for r in ours if r.name == op.name and r.path == op.path]
    assert _route_scope(route) == op.scope
    if op.handler is not None:
        return
    if op.body is None:
        assert "requestBody" not in operation
    else:
        body = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert body.rsplit("/", 1)[-1] == op.body.__name__
    served = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    query = query_model(op)
    assert served == {f.wire for f in op.flags} | set(query.model_fields if query else ())


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path} {op.service}")
def test_every_example_is_a_valid_request(op: Operation) -> None:
    path, params, body = split_example(op)
    assert set(path) == set(op.path_names)
    query = query_model(op) if op.handler is None else None
    if query is not None:
        query.model_validate({k: v for k, v in params.items() if k in query.model_fields})
    if op.body is not None:
        op.body.model_validate(body)
    else:
        assert not body, f"{op.name}: {sorted(body)} go nowhere"


def _route_declarations(path: Path) -> list[str]:
    """Routes declared in a module: ``@x.get(...)``-style decorators and ``add_api_route``
    calls, less pages kept out of the OpenAPI document (``include_in_schema=False``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        verb = node.func.attr
        if verb not in {"get", "post", "put", "patch", "delete", "api_route", "add_api_route"}:
            continue
        hidden = any(
            k.arg == "include_in_schema" and isinstance(k.value, ast.Constant) and not k.value.value
            for k in node.keywords
        )
        routed = verb == "add_api_route" or (
            node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith("/")
        )
        if routed and not hidden:
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_routes_client_methods_and_tools_come_from_the_operation_table_only() -> None:
    generator = ROOT / "api" / "routes" / "__init__.py"
    declared = [
        where
        for name, path in MODULES.items()
        if name.startswith("memvault.api") and path != generator
        for where in _route_declarations(path)
    ]
    assert declared == [], "declare an operation in memvault/operations.py instead"
    client_source = ast.parse((ROOT / "client.py").read_text())
    paths = [
        node.value
        for node in ast.walk(client_source)
        if isinstance(node, ast.Constant) and str(node.value).startswith("/v1")
    ]
    assert paths == [], "the client's requests are the operation table's"
    functions = {
        node.name
        for node in ast.parse((ROOT / "mcp.py").read_text()).body
        if isinstance(node, ast.AsyncFunctionDef)
        and node.args.args
        and node.args.args[0].arg == "ctx"
    }
    assert functions == {op.mcp.name for op in OPERATIONS if op.mcp is not None}


def test_the_mcp_tools_are_the_marked_operations_as_described() -> None:
    from contextlib import asynccontextmanager

    from memvault import mcp

    @asynccontextmanager
    async def no_store(_: typing.Any) -> typing.AsyncIterator[None]:
        yield None

    tools = asyncio.run(mcp.build_server(no_store).list_tools())  # type: ignore[arg-type]
    marked = [op.mcp for op in OPERATIONS if op.mcp is not None]
    assert [(t.name, t.description) for t in tools] == [(m.name, m.description) for m in marked]
    for tool, mark in zip(tools, marked, strict=True):
        assert tool.annotations is not None
        assert bool(tool.annotations.read_only_hint) == mark.read_only
        assert bool(tool.annotations.destructive_hint) == mark.destructive


def test_the_sync_face_is_derived_from_every_coroutine_method() -> None:
    service = ROOT / "service.py"
    written = [
        node.lineno
        for node in ast.walk(ast.parse(service.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "blocking"
    ]
    assert written == [], "Memory's methods are derived; write the coroutine on AsyncMemory"
    core = {
        name
        for name, method in inspect.getmembers(memvault.AsyncMemory, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    face = {
        name
        for name, value in vars(memvault.Memory).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }
    assert face == core - NOT_DERIVED
    for name in face:
        expected = inspect.signature(getattr(memvault.AsyncMemory, name))
        assert inspect.signature(getattr(memvault.Memory, name)) == expected, name


def test_the_type_checkers_view_of_the_sync_face_is_current() -> None:
    """Regenerate with ``python -m memvault._stubs`` after changing an AsyncMemory coroutine or
    the operation table (the door's derived methods are in the stub too)."""
    current = ast.dump(ast.parse(STUB.read_text()))
    assert current == ast.dump(ast.parse(surface_stub(memvault.AsyncMemory, "Memory")))


def test_the_headers_the_client_copies_are_current() -> None:
    """The client takes its methods' signatures from ``_client_surface.py``, not the service:
    regenerate it with ``python -m memvault._stubs`` as the stub above."""
    assert CLIENT_SURFACE.read_text() == client_surface(memvault.AsyncMemory)


def test_the_keywords_of_the_methods_taking_a_models_fields_are_current() -> None:
    """Regenerate with ``python -m memvault._stubs`` after changing a model's fields that a
    method takes (``takes``), or taking a new one."""
    assert KEYWORDS.read_text() == keywords_source(memvault.AsyncMemory)


def test_a_method_taking_a_models_fields_is_typed_in_its_source() -> None:
    """Its ``**fields`` is annotated with the model's generated TypedDict, so the type checker
    refuses a misspelt keyword on the resource itself (``await memory.goals.add_goal(...)``)
    and on the door, as it does on the faces generated from them."""
    untyped = []
    for kind in (memvault.AsyncMemory, *resources(memvault.AsyncMemory).values()):
        for name, method in coroutine_methods(kind):
            if (taken := getattr(method, TAKES, None)) is None:
                continue
            rest, annotation = _keywords_parameter(method)
            if annotation != f"Unpack[{keywords_name(taken[0])}]":
                untyped.append(f"{kind.__name__}.{name}: **{rest}: {annotation}")
    assert untyped == [], f"annotate as **fields: Unpack[<Model>Keywords]: {untyped}"


def _keywords_parameter(method: typing.Callable[..., object]) -> tuple[str, object]:
    """The ``**`` parameter of a method as written (its signature says what ``takes`` made)."""
    code = inspect.unwrap(method).__code__
    if not code.co_flags & inspect.CO_VARKEYWORDS:
        return "", None
    starred = bool(code.co_flags & inspect.CO_VARARGS)
    name = code.co_varnames[code.co_argcount + code.co_kwonlyargcount + starred]
    return name, inspect.unwrap(method).__annotations__.get(name)


# --- the service by composition ----------------------------------------------------------------

SERVICE_LAYER = (
    "memvault.service",
    "memvault.admin",
    "memvault.memories",
    "memvault.webhooks",
    "memvault.context",
    "memvault.cognitive",
    "memvault.graph",
    "memvault.lifecycle",
    "memvault.retrieval",
    "memvault.pipeline",
)


def _service_classes() -> list[type]:
    import importlib

    found = []
    for name in sorted(n for n in MODULES if n.startswith(SERVICE_LAYER) and n in _IMPORTABLE):
        module = importlib.import_module(name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value) and value.__module__ == name
        ]
    return found


_IMPORTABLE = {n for n, p in MODULES.items() if p.suffix == ".py"}


def test_no_service_class_is_built_from_mixins() -> None:
    """A class of the service layer that is not data (a pydantic model, an exception, an enum)
    derives from no other memvault class (the sync face's ``SyncFace`` aside): what it does is
    its own methods, and what it needs is its constructor's parameters, never attributes a
    sibling class in an inheritance chain is expected to set."""
    import enum

    from memvault._sync import SyncFace

    data = (BaseModel, BaseException, enum.Enum)
    mixed = {
        cls.__qualname__: [b.__qualname__ for b in cls.__mro__[1:] if b.__module__ != "builtins"]
        for cls in _service_classes()
        if not issubclass(cls, data)
        and any(b.__module__.startswith("memvault") and b is not SyncFace for b in cls.__mro__[1:])
    }
    assert mixed == {}


def test_every_resource_is_reachable_from_the_door() -> None:
    """Every resource (a class built with the tenant's ``context``) hangs off ``AsyncMemory``
    and is built when the door is."""
    from memvault._compose import is_resource, resources

    held = resources(memvault.AsyncMemory)
    defined = {cls for cls in _service_classes() if is_resource(cls)}
    assert defined == set(held.values())
    memory = memvault.AsyncMemory(typing.cast(typing.Any, None))  # no store: nothing is read
    for attribute, kind in held.items():
        assert isinstance(getattr(memory, attribute), kind), attribute


def test_each_resource_lives_in_the_module_named_for_its_attribute() -> None:
    """A name leads to the code: ``memory.working`` is ``Working`` in ``cognitive/working.py``,
    ``memory.profile`` is in ``cognitive/profile.py``, whatever package holds the module."""
    from memvault._compose import resources

    held = resources(memvault.AsyncMemory)
    misplaced = {
        attribute: kind.__module__
        for attribute, kind in held.items()
        if kind.__module__.rpartition(".")[2] != attribute
    }
    assert misplaced == {}


def test_every_resource_method_has_its_flat_name_from_the_table() -> None:
    """Each public coroutine method of a resource is a verb of the door by the same name: the
    operation table (or its library-only list) names its resource, and the door's method of
    that name calls it (the everyday verbs written out, the rest derived)."""
    from memvault._compose import DELEGATE, resources
    from memvault._sync import coroutine_methods
    from memvault.operations import service_calls

    held = resources(memvault.AsyncMemory)
    calls = dict(service_calls())
    assert len(calls) == len(service_calls()), "a verb named twice"
    offered = {
        name: attribute for attribute, kind in held.items() for name, _ in coroutine_methods(kind)
    }
    assert calls == offered
    written = {"add", "search", "get", "update", "delete", "list", "history", "add_messages"}
    written |= {"remember"}
    for name, attribute in calls.items():
        door = getattr(memvault.AsyncMemory, name)
        assert name in vars(memvault.AsyncMemory), name
        assert getattr(door, DELEGATE, attribute) == attribute, name
        assert (name in written) != hasattr(door, DELEGATE), name
        implementation = getattr(held[attribute], name)
        assert inspect.signature(door) == inspect.signature(implementation), name
        assert door.__doc__ == implementation.__doc__, name


# --- one name, one meaning ----------------------------------------------------------------------


# Names two modules may share, because they mean the same thing in each place: a provider
# package's protocol and its OpenAI-compatible provider (embedding/, llm/, vectorindex/), and
# db/<name>.py holding the SQL of the one service module of that name (the graph's and the
# lifecycle's SQL is their package's, whose resource is graph/graph.py, lifecycle/lifecycle.py).
SAME_ROLE = {"base", "openai"}
SQL_OF = {
    "audit",
    "cache",
    "graph",
    "health",
    "idempotency",
    "lifecycle",
    "portable",
    "ratelimit",
    "recall",
    "webhooks",
}


def test_no_two_modules_share_a_name() -> None:
    """A module's file name says what it holds, once: no second ``models.py``, ``errors.py``,
    ``jobs.py`` or ``recall.py`` for a reader to open by mistake, in a traceback or a tab."""
    import collections

    by_name: dict[str, list[str]] = collections.defaultdict(list)
    for name, path in MODULES.items():
        if path.suffix == ".py" and path.name != "__init__.py":
            by_name[path.stem].append(name)
    shared = {stem: sorted(names) for stem, names in by_name.items() if len(names) > 1}
    allowed = {
        stem
        for stem, names in shared.items()
        if stem in SAME_ROLE
        or (stem in SQL_OF and len(names) == 2 and f"memvault.db.{stem}" in names)
    }
    assert {stem: names for stem, names in shared.items() if stem not in allowed} == {}
    assert allowed == SAME_ROLE | SQL_OF, "an allowance no longer needed"


def test_each_word_list_is_written_once() -> None:
    """The months are spelled out in ``memvault.text`` alone, and ``STOP_WORDS`` is the keyword
    index's list there, no other: a second copy drifts from the first unseen."""
    import re

    month = re.compile(r"\bseptember\b", re.IGNORECASE)
    spelling = {
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if month.search(node.value)
    }
    assert spelling == {"memvault.text"}
    defining = {
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id == "STOP_WORDS"
    }
    assert defining == {"memvault.text"}


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


def test_connections_outside_db_are_units_of_work() -> None:
    """Outside db/, a connection comes from db/units.py (the transaction, the tenant and the
    driver's errors handled once), not from the engine directly."""
    import re

    opening = re.compile(r"\.(begin|connect)\(\)")
    own = {
        name
        for name, path in MODULES.items()
        if not name.startswith("memvault.db") and opening.search(path.read_text())
    }
    assert own == set(), f"open connections from the engine, not db/units.py: {sorted(own)}"


# --- one object's private methods are its own ---------------------------------------------------

# Leading underscores that are public by convention: a named tuple's methods.
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_make"}


def _private_calls(source: str) -> list[str]:
    """Calls of another object's (or module's) private method, ``x._y(...)``: calls on
    ``self``, ``cls`` and ``super()`` are the object's own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, node.func.value
        if not name.startswith("_") or name.startswith("__") or name in PUBLIC_UNDERSCORED:
            continue
        if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
            continue
        if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
            continue
        found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def test_no_object_calls_into_another_objects_private_methods() -> None:
    """What one resource needs of another is a public method of it (marked
    ``between_resources`` where the door should not offer it), so copies of private logic do
    not grow beside each other and drift."""
    reaching = {
        name: calls
        for name, path in MODULES.items()
        if path.suffix == ".py" and (calls := _private_calls(path.read_text()))
    }
    assert reaching == {}


def test_a_call_into_another_objects_private_method_is_caught() -> None:
    source = (
        "class A:\n"
        "    def f(self):\n"
        "        self._own()\n"
        "        super()._own()\n"
        "        self._other._theirs()\n"
        "        row._replace(a=1)\n"
        "        store._helper()\n"
    )
    assert _private_calls(source) == ["5: self._other._theirs", "7: store._helper"]


# --- nothing in db/ that nothing calls ---------------------------------------------------------

# db/ functions whose callers live outside the package, and who they are.
CALLED_FROM_OUTSIDE = {
    "memvault.db.graph_admin.insert_many": "bench/graph_query.py loads its large graphs with it",
}


def _uncalled_db_functions(sources: dict[str, str]) -> set[str]:
    """Functions (and methods) of db/ modules whose name no module of ``sources`` (module name
    to text) mentions but in its own definition: a name-based reading, so a name also used
    for something else counts as a use (it errs towards keeping)."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    mentioned: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                mentioned.add(node.id)
            elif isinstance(node, ast.Attribute):
                mentioned.add(node.attr)
    uncalled = set()
    for module, tree in trees.items():
        if not module.startswith("memvault.db.") or ".migrations" in module:
            continue
        for node in tree.body:
            inner = node.body if isinstance(node, ast.ClassDef) else [node]
            for defined in inner:
                if not isinstance(defined, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if defined.name.startswith("__") or defined.name in mentioned:
                    continue
                owner = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
                uncalled.add(f"{module}.{owner}{defined.name}")
    return uncalled


def test_every_db_function_has_a_caller() -> None:
    """SQL nobody runs still has to be read, kept in step with the schema and trusted: a db/
    function that no module uses goes (tests alone do not keep it)."""
    sources = {name: path.read_text() for name, path in MODULES.items() if path.suffix == ".py"}
    assert _uncalled_db_functions(sources) == set(CALLED_FROM_OUTSIDE)


def test_an_uncalled_db_function_is_caught() -> None:
    sources = {
        "memvault.db.things": "async def used(): ...\nasync def unused(): ...\n",
        "memvault.things": "from memvault.db import things\nthings.used()\n",
    }
    assert _uncalled_db_functions(sources) == {"memvault.db.things.unused"}
