"""``python -m memvault._stubs`` writes what is generated from ``AsyncMemory``; run it after
changing one of its coroutines or the operation table. ``tests/test_structure.py`` fails while
either file is out of date:

- ``_memory_methods.pyi``: the type checker's view of ``Memory`` (the blocking twins
  ``derive_blocking`` makes of ``AsyncMemory``'s coroutine methods);
- ``_client_surface.py``: the headers (signature, annotations, documentation) of the library
  methods the HTTP client stands in for, so ``memvault.client`` copies them without loading the
  service, and with it the store's drivers.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memvault._sync import DECLARED, STUB, TAKES, _join, surface_stub
from memvault.operations import client_operations
from memvault.service import AsyncMemory

CLIENT_SURFACE = Path(__file__).with_name("_client_surface.py")
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


def _header(name: str, method: Callable[..., Any], names: dict[str, Any]) -> list[str]:
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
    callers see it, with a body that does nothing."""
    names: dict[str, Any] = {"takes": None}
    methods: list[str] = []
    for op in client_operations():
        assert op.service is not None
        methods += ["", *_header(op.service, getattr(core, op.service), names)]
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
        ]
    )


def _import_lines(lines: list[str], imports: dict[str, list[str]]) -> list[str]:
    found = []
    for line in lines:
        names = sorted(imports[line])
        one = f"{line} {', '.join(names)}".rstrip()
        found += [one] if len(one) <= 100 else [f"{line} (", *(f"    {n}," for n in names), ")"]
    return found


def main() -> None:
    STUB.write_text(surface_stub(AsyncMemory, "Memory"))
    CLIENT_SURFACE.write_text(client_surface(AsyncMemory))


if __name__ == "__main__":
    main()
