"""``python -m memvault._stubs`` writes what is generated from ``AsyncMemory``; run it after
changing one of its coroutines or the operation table. ``tests/test_structure.py`` fails while
either file is out of date:

- ``_memory_methods.pyi``: the type checker's view of ``Memory`` (the blocking twins
  ``derive_blocking`` makes of ``AsyncMemory``'s coroutine methods);
- ``_client_surface.py``: the headers (signature, annotations, documentation) of the library
  methods the HTTP client stands in for, so ``memvault.client`` copies them without loading the
  service, and with it the store's drivers; and the blocking twins of those headers, the type
  checker's view of ``MemoryClient``;
- ``_keywords.py``: for each model whose fields a method takes as keywords (``takes``), the
  TypedDict its ``**fields`` is annotated with (``Unpack[...Keywords]``), so the source itself
  is typed.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memvault._compose import resources
from memvault._sync import (
    DECLARED,
    STUB,
    TAKES,
    _join,
    coroutine_methods,
    field_annotation,
    surface_stub,
)
from memvault.operations import client_operations
from memvault.service import AsyncMemory

CLIENT_SURFACE = Path(__file__).with_name("_client_surface.py")
KEYWORDS = Path(__file__).with_name("_keywords.py")
# Where a name an annotation uses is looked for when its object does not say where it lives
# (a ``Literal`` alias): the model modules, which load no store code.
MODEL_MODULES = (
    "memvault.models",
    "memvault.cognitive.kinds",
    "memvault.graph.views",
    "memvault.lifecycle.reports",
    "memvault.cognitive.bundle",
)


def _home(name: str, value: Any) -> str:
    """The module to import ``value`` from by ``name``."""
    for module in (getattr(value, "__module__", None), *MODEL_MODULES):
        if module in sys.modules and vars(sys.modules[module]).get(name) is value:
            return module
    raise TypeError(f"cannot tell where {name} = {value!r} is defined")


def _names(method: Callable[..., Any], texts: Iterable[str]) -> dict[str, Any]:
    """The globals the annotation texts name, as the method's module binds them."""
    scope = inspect.unwrap(method).__globals__
    found: dict[str, Any] = {}
    for text in texts:
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Name) and node.id in scope:
                found[node.id] = scope[node.id]
            elif isinstance(node, ast.Name) and not hasattr(builtins, node.id):
                raise TypeError(f"{method.__qualname__} names {node.id}, which is not bound")
    return found


def _header(
    name: str, method: Callable[..., Any], names: dict[str, Any], *, documented: bool = True
) -> list[str]:
    signature: inspect.Signature = getattr(method, DECLARED, None) or inspect.signature(method)
    texts = [a for p in signature.parameters.values() if isinstance(a := p.annotation, str)]
    if isinstance(signature.return_annotation, str):
        texts.append(signature.return_annotation)
    for key, value in _names(method, texts).items():
        if names.setdefault(key, value) is not value:
            raise TypeError(f"{key} names two things in the methods the client stands in for")
    parameters = []
    for p in signature.parameters.values():
        text = p.name
        if p.annotation is not inspect.Parameter.empty:
            text += f": {p.annotation!r}"
        if p.default is not inspect.Parameter.empty:
            text += f" = {p.default!r}"
        parameters.append((p.kind, text))
    result = f" -> {signature.return_annotation!r}" if texts else ""
    if not documented:  # the blocking twin: its header, for the type checker alone
        return [f"    def {name}({_join(parameters)}){result}: ..."]
    lines = []
    if (taken := getattr(method, TAKES, None)) is not None:
        model, positional = taken
        names.setdefault(model.__name__, model)
        lines.append(f"    @takes({model.__name__}, positional={positional!r})")
    lines.append(f"    async def {name}({_join(parameters)}){result}:")
    doc = method.__doc__
    if doc is None:
        lines.append("        ...")
    elif '"""' in doc or "\\" in doc or doc.endswith('"'):
        lines.append(f"        {doc!r}")
    else:
        lines.append(f'        """{doc}"""')
    return lines


def client_surface(core: type) -> str:
    """Source of ``_client_surface.py``: each client operation's method of ``core`` as its
    callers see it, with a body that does nothing; then the same methods blocking, the type
    checker's view of ``MemoryClient``."""
    names: dict[str, Any] = {"takes": None}
    methods: list[str] = []
    blocking: list[str] = []
    for op in client_operations():
        assert op.service is not None
        methods += ["", *_header(op.service, getattr(core, op.service), names)]
        blocking += _header(op.service, getattr(core, op.service), names, documented=False)
    names.pop("takes")
    imports: dict[str, list[str]] = {}
    for name, value in sorted(names.items()):
        if inspect.ismodule(value):
            imports.setdefault(f"import {value.__name__}", [])
        else:
            imports.setdefault(f"from {_home(name, value)} import", []).append(name)
    imports.setdefault("from memvault._sync import", []).append("takes")
    # As isort orders them: the standard library's, then ours; ``import`` before ``from``.
    order = sorted(imports, key=lambda line: (line.startswith("from"), line.split()[1]))
    ours = [line for line in order if line.split()[1].startswith("memvault")]
    theirs = [line for line in order if line not in ours]
    return "\n".join(
        [
            '"""The library methods the HTTP client stands in for, as their callers see them:',
            f"generated from ``{core.__module__}.{core.__qualname__}`` by ``python -m",
            "memvault._stubs``; do not edit. ``memvault.client`` copies each method's signature,",
            'annotations and documentation from here, so it loads none of the service."""',
            "",
            "# ruff: noqa: E501",
            # Headers only: the bodies are empty, and ``list`` in an annotation copied from a
            # resource without a ``list`` method means the builtin there, as it does at run time.
            '# mypy: disable-error-code="empty-body,valid-type"',
            "# fmt: off",
            "",
            *_import_lines(theirs, imports),
            "",
            *_import_lines(ours, imports),
            "",
            "",
            "class ClientSurface:",
            '    """The headers of ``AsyncMemory``\'s methods that the client offers."""',
            *methods,
            "",
            "",
            "class BlockingClientSurface:",
            '    """The same methods as ``MemoryClient`` offers them (``blocking``), for the type',
            '    checker."""',
            "",
            *blocking,
            "",
        ]
    )


def _import_lines(lines: list[str], imports: dict[str, list[str]]) -> list[str]:
    found = []
    for line in lines:
        names = sorted(imports[line])
        one = f"{line} {', '.join(names)}".rstrip()
        found += [one] if len(one) <= 100 else [f"{line} (", *(f"    {n}," for n in names), ")"]
    return found


# --- the keywords of the methods that take a model's fields --------------------------------------


def taken_models(core: type) -> dict[type[BaseModel], frozenset[str]]:
    """Each model whose fields a method of ``core`` or of its resources takes (``takes``), with
    the parameters those methods name themselves: the model's other fields are the keywords
    their ``**fields`` stands for."""
    found: dict[type[BaseModel], frozenset[str]] = {}
    for kind in (core, *resources(core).values()):
        for name, method in coroutine_methods(kind):
            if (taken := getattr(method, TAKES, None)) is None:
                continue
            declared: inspect.Signature = getattr(method, DECLARED)
            named = frozenset(
                p.name
                for p in declared.parameters.values()
                if p.kind is not inspect.Parameter.VAR_KEYWORD and p.name != "self"
            )
            if found.setdefault(taken[0], named) != named:
                raise TypeError(
                    f"{kind.__name__}.{name} names other parameters than another method taking "
                    f"{taken[0].__name__}'s fields: one TypedDict cannot stand for both"
                )
    return found


def keywords_name(model: type[BaseModel]) -> str:
    """The TypedDict a method taking ``model``'s fields annotates its ``**fields`` with."""
    return f"{model.__name__}Keywords"


def _typed_dict(model: type[BaseModel], named: frozenset[str], modules: set[str]) -> list[str]:
    lines = [
        "",
        "",
        f"class {keywords_name(model)}(typing.TypedDict, total=False):",
        f'    """``{model.__module__}.{model.__qualname__}``\'s fields taken as keywords."""',
        "",
    ]
    for name, info in model.model_fields.items():
        if name in named:
            continue
        rendered = field_annotation(info, modules)
        if info.is_required():
            rendered = f"typing.Required[{rendered}]"
        lines.append(f"    {name}: {rendered}")
    return lines


def keywords_source(core: type) -> str:
    """Source of ``_keywords.py``: a TypedDict per model ``taken_models`` finds."""
    modules: set[str] = {"builtins", "typing"}
    taken = sorted(taken_models(core).items(), key=lambda item: keywords_name(item[0]))
    classes = [line for model, named in taken for line in _typed_dict(model, named, modules)]
    ours = sorted(m for m in modules if m.split(".")[0] == "memvault")
    theirs = sorted(modules - set(ours))
    return "\n".join(
        [
            '"""The keywords of the methods that take a model\'s fields (``takes``), one TypedDict',
            "per model: its fields less the parameters those methods name, with the model's types.",
            "Generated from the models by ``python -m memvault._stubs``; do not edit. Such a",
            "method annotates its ``**fields`` with ``Unpack[<Model>Keywords]``, so the type",
            'checker refuses a misspelt keyword in its source and on every face."""',
            "",
            "# ruff: noqa: E501",
            "# fmt: off",
            "",
            "from __future__ import annotations",
            "",
            *(f"import {m}" for m in theirs),
            "",
            # Read by the type checker alone: at run time this module loads none of memvault, so
            # the models' own modules and the cognitive ones may all import it.
            "if typing.TYPE_CHECKING:",
            *(f"    import {m}" for m in ours),
            *classes,
            "",
        ]
    )


def main() -> None:
    KEYWORDS.write_text(keywords_source(AsyncMemory))
    STUB.write_text(surface_stub(AsyncMemory, "Memory"))
    CLIENT_SURFACE.write_text(client_surface(AsyncMemory))


if __name__ == "__main__":
    main()
