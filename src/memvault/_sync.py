"""The sync face is derived from the async core: one event loop in a daemon thread runs every
coroutine, so the logic is written once."""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
import types
import typing
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from memvault._compose import BETWEEN_RESOURCES

P = ParamSpec("P")
DECLARED = "__declared_signature__"
# Set by ``takes``: the model and positional names, so the signature can be made again where
# the method's module is not loaded (``python -m memvault._stubs``).
TAKES = "__takes__"
R = TypeVar("R")
T = TypeVar("T")


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="memvault-loop", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class _HasAsync(Protocol):
    _async: Any
    _loop: LoopThread


def blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[_HasAsync, P], R]:
    """Turn ``AsyncMemory.x`` into a method that runs it on the owner's loop and waits."""
    name = method.__name__

    def call(self: _HasAsync, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._loop.run(getattr(self._async, name)(*args, **kwargs))
        return result

    call.__name__ = name
    call.__qualname__ = name
    call.__doc__ = method.__doc__
    # The async method's own signature, less the coroutine: what help() and IDEs show.
    call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return call


def takes(
    model: type[BaseModel], *, positional: tuple[str, ...] = ()
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Give a method written as ``f(self, *positional, **fields)`` the signature its callers see:
    ``positional`` first, then every other field of ``model`` as a keyword with the model's
    type and default, then the method's own keyword-only parameters. The fields are defined once
    (in ``models.py``); ``Memory``, ``AsyncMemory`` and both clients derive their keywords."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        own = inspect.signature(method).parameters.values()
        head = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY][
            : 1 + len(positional)
        ]
        tail = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
        taken = {p.name for p in (*head, *tail)}
        fields = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if info.is_required() else info.default,
                annotation=info.annotation,
            )
            for name, info in model.model_fields.items()
            if name not in taken
        ]
        # The signature as written stays the type checker's view (see ``surface_stub``).
        setattr(method, DECLARED, inspect.signature(method))
        setattr(method, TAKES, (model, positional))
        method.__signature__ = inspect.signature(method).replace(  # type: ignore[attr-defined]
            parameters=[*head, *fields, *tail]
        )
        return method

    return decorate


class SyncFace:
    """Base of the sync faces (``Memory``, ``MemoryClient``, ``Admin``): an async object living
    on its own loop thread, closed with it."""

    _async: Any

    def __init__(self, opening: Coroutine[Any, Any, Any]) -> None:
        self._loop = LoopThread()
        try:
            self._async = self._loop.run(opening)
        except BaseException:
            self._loop.stop()
            raise

    def close(self) -> None:
        if self._loop.loop.is_running():
            self._loop.run(self._async.close())
            self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Blocking(Generic[T]):
    """A resource of the async core seen from its sync face (``memory.goals``): each of its
    coroutine methods runs on the face's loop and waits; anything else is the resource's."""

    def __init__(self, loop: LoopThread, resource: T) -> None:
        self._loop = loop
        self._resource = resource

    # The type checker sees each view as the class ``surface_stub`` writes for its resource
    # (``BlockingGoals``: every method with its own parameters), never as "any attribute".
    if not typing.TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            value = getattr(self._resource, name)
            if not inspect.iscoroutinefunction(value):
                return value

            @functools.wraps(value)
            def call(*args: Any, **kwargs: Any) -> Any:
                return self._loop.run(value(*args, **kwargs))

            return call


def derive_resources(face: type, held: dict[str, type]) -> None:
    """Give ``face`` each resource of its core (``held``: attribute to resource class) as a
    property answering the resource's blocking view."""
    for attribute in held:

        def view(self: _HasAsync, attribute: str = attribute) -> Blocking[Any]:
            return Blocking(self._loop, getattr(self._async, attribute))

        setattr(face, attribute, property(view))


# Not sync faces of their core: the constructor and the closing (``SyncFace.close``).
NOT_DERIVED = frozenset({"open", "close"})


def coroutine_methods(core: type) -> list[tuple[str, Callable[..., Coroutine[Any, Any, Any]]]]:
    """The public coroutine methods of ``core`` (its bases' included), by name, less those
    only other resources call (``_compose.between_resources``)."""
    return [
        (name, method)
        for name, method in inspect.getmembers(core, inspect.iscoroutinefunction)
        if not name.startswith("_")
        and name not in NOT_DERIVED
        and not getattr(method, BETWEEN_RESOURCES, False)
    ]


def derive_blocking(face: type, core: type) -> None:
    """Give ``face`` a blocking twin of every public coroutine method of ``core``, so a method
    added to the async core is on the sync face without a line written for it."""
    for name, method in coroutine_methods(core):
        if name not in vars(face):
            setattr(face, name, blocking(method))


# --- the type checker's view of a derived face ----------------------------------------------------


def _render(annotation: Any, modules: set[str]) -> str:
    """An annotation as source text, module-qualified, with pydantic's field metadata dropped."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _render(args[0], modules)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_render(arg, modules) for arg in args)
    if origin is typing.Literal:
        modules.add("typing")
        return f"typing.Literal[{', '.join(repr(arg) for arg in args)}]"
    if annotation is type(None) or annotation is None:
        return "None"
    if annotation is typing.Any:
        modules.add("typing")
        return "typing.Any"
    if origin is not None:
        return f"{_render(origin, modules)}[{', '.join(_render(a, modules) for a in args)}]"
    if isinstance(annotation, type):
        if annotation.__module__ == "builtins":
            return f"builtins.{annotation.__qualname__}"
        modules.add(annotation.__module__)
        return f"{annotation.__module__}.{annotation.__qualname__}"
    raise TypeError(f"cannot render the annotation {annotation!r}")


ID_OR_TEXT = "uuid.UUID | builtins.str"


def field_annotation(field: FieldInfo, modules: set[str]) -> str:
    """A model's field as the keyword of a method taking the model's fields (``takes``): the
    model's type, an id also as its text (as the model reads it), and an optional field also
    None, which ``validated`` (and the client) take as not given."""
    rendered = _render(field.annotation, modules).replace("uuid.UUID", ID_OR_TEXT)
    if field.is_required() or rendered in ("None", "typing.Any"):
        return rendered
    return rendered if rendered.endswith("| None") else f"{rendered} | None"


def _stub_method(
    name: str, method: Callable[..., Any], modules: set[str], *, keyword: str = "def"
) -> str:
    hints = typing.get_type_hints(method)
    parameters = [
        (p.kind, p.name + _parameter_annotation(method, p, hints, modules) + _default(p))
        for p in inspect.signature(method).parameters.values()
    ]
    result = _render(hints.get("return"), modules)
    return f"    {keyword} {name}({_join(parameters)}) -> {result}: ..."


def _parameter_annotation(
    method: Callable[..., Any],
    parameter: inspect.Parameter,
    hints: dict[str, Any],
    modules: set[str],
) -> str:
    """``: type`` as the callers see it: a model's fields taken as ``**fields`` are named
    keywords with the model's types (``takes``), so a misspelt keyword is a type error on
    every face."""
    declared: inspect.Signature | None = getattr(method, DECLARED, None)
    model: type[BaseModel] | None = getattr(method, TAKES, (None,))[0]
    field = model.model_fields.get(parameter.name) if model is not None else None
    if parameter.name == "self":
        return ""
    if field is not None and declared is not None:
        if parameter.name not in declared.parameters:
            return f": {field_annotation(field, modules)}"
        # Named in the method itself: its own type, an id taken as its text too.
        return f": {_render(hints[parameter.name], modules).replace('uuid.UUID', ID_OR_TEXT)}"
    annotation = hints.get(parameter.name, parameter.annotation)
    return "" if annotation is inspect.Parameter.empty else f": {_render(annotation, modules)}"


def _default(parameter: inspect.Parameter) -> str:
    return "" if parameter.default is inspect.Parameter.empty else " = ..."


def _join(parameters: list[tuple[inspect._ParameterKind, str]]) -> str:
    kinds = inspect.Parameter
    out: list[str] = []
    starred = False
    for i, (kind, text) in enumerate(parameters):
        if kind is kinds.KEYWORD_ONLY and not starred:
            out.append("*")
            starred = True
        star = "**" if kind is kinds.VAR_KEYWORD else "*" if kind is kinds.VAR_POSITIONAL else ""
        out.append(star + text)
        starred = starred or kind is kinds.VAR_POSITIONAL
        following = parameters[i + 1][0] if i + 1 < len(parameters) else None
        if kind is kinds.POSITIONAL_ONLY and following is not kinds.POSITIONAL_ONLY:
            out.append("/")
    return ", ".join(out)


def _blocking_view(kind: type, modules: set[str]) -> list[str]:
    """The class the type checker sees for ``Blocking(loop, kind(...))``: each public coroutine
    method of the resource as a blocking method with the same parameters."""
    methods = [_stub_method(n, m, modules) for n, m in coroutine_methods(kind)]
    return ["", f"class Blocking{kind.__name__}:", *(methods or ["    ..."])]


def surface_stub(core: type, name: str) -> str:
    """Stub source declaring, for the type checker, the blocking twins ``derive_blocking``
    gives a face of ``core``: the parameters callers see (a model's fields taken as
    ``**fields`` named, with the model's types), its result as the return; its resources'
    blocking views (``memory.goals``), one class per resource; and the coroutine methods
    ``derive_delegates`` gave ``core`` itself (its resources' methods by their flat names), as
    ``Async{name}Methods``."""
    from memvault._compose import DELEGATE, resources

    modules: set[str] = {"builtins"}
    held = sorted(resources(core).items())
    views = [f"    {a}: Blocking{kind.__name__}" for a, kind in held]
    blocking_views = [line for _, kind in held for line in _blocking_view(kind, modules)]
    methods = [_stub_method(n, m, modules) for n, m in coroutine_methods(core)]
    delegated = [
        _stub_method(n, m, modules, keyword="async def")
        for n, m in coroutine_methods(core)
        if hasattr(m, DELEGATE)
    ]
    ours = sorted(m for m in modules if m.split(".")[0] == "memvault")
    imports = (
        [f"import {m}" for m in sorted(modules - set(ours))] + [""] + [f"import {m}" for m in ours]
    )
    return "\n".join(
        [
            f'"""The blocking methods of ``{name}``, the blocking views of its resources and the',
            "derived methods of its core, for type checkers: generated from",
            f"``{core.__module__}.{core.__qualname__}`` by ``python -m memvault._stubs``; do not",
            "edit. At run time ``derive_blocking``, ``derive_resources`` and ``derive_delegates``",
            'make the same methods."""',
            "",
            *imports,
            "",
            f"class {name}Methods:",
            *views,
            *methods,
            "",
            f"class Async{name}Methods:",
            *delegated,
            *blocking_views,
            "",
        ]
    )


STUB = Path(__file__).with_name("_memory_methods.pyi")
