"""The reference pages' tables, generated from the code at build time.

A page holds a marker such as ``<!-- reference:settings -->``; the build replaces it with the
table made from the code that defines it, so the published reference cannot drift from it:

- ``settings``: every field of ``memvault.config.Settings`` (variable, type, default, meaning);
- ``http``: every operation of the operation table (``memvault.operations``), with its docs,
  scope, client method and example from the table and its parameters from the served OpenAPI
  document;
- ``mcp``: the tools ``memvault mcp`` really serves (``memvault.mcp.build_server``);
- ``cli``: every ``memvault`` command with its arguments and options (the typer app);
- ``metrics``: every Prometheus metric ``memvault.metrics`` defines (name, type, labels, help).

``tests/test_docs.py`` checks each table against its source and builds the site strictly.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

# The reference needs no model and no network; importing the faces must not try either.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MARKER = re.compile(r"<!-- reference:(\w+) -->")


def _prose(text: object) -> str:
    """Text from the code as one markdown line: angle brackets outside code spans escaped, so
    a placeholder such as <data_dir> is shown rather than taken for an HTML tag."""
    parts = " ".join(str(text).split()).split("`")
    return "`".join(
        part if i % 2 else part.replace("<", "&lt;").replace(">", "&gt;")
        for i, part in enumerate(parts)
    )


def _cell(text: object) -> str:
    """One markdown table cell: one line, pipes escaped."""
    return _prose(text).replace("|", "\\|")


def _paragraphs(doc: str | None) -> str:
    return "\n\n".join(_prose(p) for p in inspect.cleandoc(doc or "").split("\n\n"))


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc or "").split("\n\n", 1)[0]


# --- settings ------------------------------------------------------------------------------------


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or repr(annotation)
    text = re.sub(r"typing\.|pydantic\.types\.|pathlib\.|<class '|'>", "", str(annotation))
    return text.replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        if field.default_factory.__name__ == "_default_data_dir":
            return "`~/.local/share/memvault`"
        return f"`{json.dumps(field.default_factory())}`"
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, (dict, list, bool)):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def settings_rows() -> list[tuple[str, str, str, str]]:
    """(variable, type, default, meaning) for every setting, in the order config.py has them."""
    from memvault.config import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    return [
        (
            f"{prefix}{name}".upper(),
            _type_name(field.annotation),
            _default(field),
            field.description or "",
        )
        for name, field in Settings.model_fields.items()
    ]


SECTION = re.compile(r"^\s+# --- (.+?)[\s-]*$")
FIELD = re.compile(r"^\s+(\w+): ")


def _sections() -> dict[str, str]:
    """Each setting's section, from the ``# --- name ---`` comments config.py groups them by."""
    from memvault.config import Settings

    section, found = "the store and the server", {}
    for line in inspect.getsource(Settings).splitlines():
        if heading := SECTION.match(line):
            section = heading.group(1)
        elif (field := FIELD.match(line)) and field.group(1) in Settings.model_fields:
            found[field.group(1)] = section
    return found


def settings_reference() -> str:
    sections = _sections()
    grouped: dict[str, list[str]] = {}
    for variable, kind, default, meaning in settings_rows():
        name = variable.removeprefix("MEMVAULT_").lower()
        grouped.setdefault(sections.get(name, "other"), []).append(
            f"| `{variable}` | `{_cell(kind)}` | {_cell(default)} | {_cell(meaning)} |"
        )
    out = []
    for section, rows in grouped.items():
        title = section[0].upper() + section[1:]
        out += [
            f"### {_prose(title)}\n",
            "| variable | type | default | meaning |",
            "|---|---|---|---|",
        ]
        out += [*rows, ""]
    return "\n".join(out)


# --- HTTP ----------------------------------------------------------------------------------------


@functools.cache
def _app() -> Any:
    """The app as ``memvault serve`` builds it (its routes only: nothing is started)."""
    from memvault.api.app import create_app
    from memvault.config import Settings

    return create_app(Settings())


def openapi() -> dict[str, Any]:
    spec: dict[str, Any] = _app().openapi()
    return spec


def _schema_name(ref: dict[str, Any] | None) -> str:
    if not ref:
        return ""
    if "$ref" in ref:
        return str(ref["$ref"]).rsplit("/", 1)[-1]
    if ref.get("type") == "array" and "items" in ref:
        return f"list of {_schema_name(ref['items'])}"
    return str(ref.get("type", ""))


def _body(operation: dict[str, Any]) -> str:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    return _schema_name(schema)


def _answer(operation: dict[str, Any]) -> str:
    for status, response in sorted(operation.get("responses", {}).items()):
        if status.startswith("2"):
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            return f"{status} {_schema_name(schema)}".strip()
    return ""


def _parameters(operation: dict[str, Any]) -> list[str]:
    shown = []
    for parameter in operation.get("parameters", []):
        text = f"`{parameter['name']}` ({parameter['in']})"
        if parameter.get("required"):
            text += ", required"
        if parameter.get("description"):
            text += f": {_prose(parameter['description'])}"
        shown.append(text)
    return shown


def _body_fields(spec: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    """The body model's fields, as the OpenAPI document describes them."""
    name = _body(operation)
    schema = spec.get("components", {}).get("schemas", {}).get(name, {})
    required = set(schema.get("required", []))
    shown = []
    for field, about in schema.get("properties", {}).items():
        text = f"`{field}` (body)"
        if field in required:
            text += ", required"
        if about.get("description"):
            text += f": {_prose(about['description'])}"
        shown.append(text)
    return shown


def operations(spec: dict[str, Any] | None = None) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) for every operation of the OpenAPI document."""
    for path, item in (spec or openapi())["paths"].items():
        for method, operation in item.items():
            yield method.upper(), path, operation


def http_reference() -> str:
    """Every operation of the table, by tag: its docs, scope and example from the table, its
    parameters and answer as the served OpenAPI document has them."""
    from memvault.api.routes import curl
    from memvault.operations import OPERATIONS

    spec = openapi()
    by_tag: dict[str, list[Any]] = {}
    for op in OPERATIONS:
        by_tag.setdefault(op.tag, []).append(op)
    out = []
    for tag, ops in by_tag.items():
        out.append(f"### {tag.capitalize()}\n")
        for op in (op for op in ops if op.routed):
            operation = spec["paths"][op.path][op.method.lower()]
            services = [o.service for o in ops if (o.method, o.path) == (op.method, op.path)]
            out.append(f"#### `{op.method} {op.path}`\n")
            out.append(f"**{_prose(op.summary)}.** {_prose(op.description)}\n")
            facts = [f"scope: {op.scope or 'none'}"]
            if _body(operation):
                facts.append(f"body: `{_body(operation)}`")
            if _answer(operation):
                facts.append(f"answer: `{_answer(operation)}`")
            if any(services):
                names = ", ".join(f"`{name}`" for name in services if name)
                facts.append(f"client and library: {names}")
            if op.mcp is not None:
                facts.append(f"MCP tool: `{op.mcp.name}`")
            out.append("- " + " · ".join(facts))
            out.extend(f"- {p}" for p in _parameters(operation))
            out.extend(f"- {p}" for p in _body_fields(spec, operation))
            out.append(f"\n```bash\n{curl(op)}\n```\n")
    return "\n".join(out)


# --- MCP -----------------------------------------------------------------------------------------


def mcp_tools() -> list[Any]:
    from memvault import mcp

    @asynccontextmanager
    async def no_store(_: Any) -> AsyncIterator[None]:
        yield None

    server = mcp.build_server(no_store)  # type: ignore[arg-type]
    return list(asyncio.run(server.list_tools()))


def _hints(tool: Any) -> str:
    hints = tool.annotations
    if hints is None:
        return ""
    if hints.read_only_hint:
        return "reads only"
    return "changes memory" + (" (may overwrite or delete)" if hints.destructive_hint else "")


def mcp_reference() -> str:
    out = []
    for tool in mcp_tools():
        out.append(f"### `{tool.name}`\n")
        out.append(_paragraphs(tool.description) + "\n")
        if _hints(tool):
            out.append(f"*{_hints(tool)}*\n")
        properties = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        if properties:
            out.append("| argument | required | default | meaning |\n|---|---|---|---|")
            for name, schema in properties.items():
                default = "" if name in required else f"`{json.dumps(schema.get('default'))}`"
                out.append(
                    f"| `{name}` | {'yes' if name in required else 'no'} | {_cell(default)} "
                    f"| {_cell(schema.get('description', ''))} |"
                )
        out.append("")
    return "\n".join(out)


# --- CLI -----------------------------------------------------------------------------------------


def cli_commands() -> list[tuple[str, Any]]:
    """(``memvault …`` command line, click command) for every leaf command."""
    import typer

    from memvault.cli import app

    def walk(command: Any, words: list[str]) -> Iterator[tuple[str, Any]]:
        if getattr(command, "hidden", False):
            return
        if hasattr(command, "commands"):
            yield " ".join(words), command
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, [*words, name])
        else:
            yield " ".join(words), command

    return list(walk(typer.main.get_command(app), ["memvault"]))


def _option(parameter: Any) -> str:
    names = " / ".join(f"`{o}`" for o in parameter.opts)
    if type(parameter).__name__.endswith("Argument"):
        names = f"`{parameter.name.upper()}`"
    bits = [names]
    if parameter.required:
        bits.append("required")
    elif parameter.default not in (None, False, ()) and not callable(parameter.default):
        bits.append(f"default `{parameter.default}`")
    help_text = getattr(parameter, "help", None)
    return ", ".join(bits) + (f": {help_text}" if help_text else "")


def cli_reference() -> str:
    out = []
    for line, command in cli_commands():
        params = [
            p for p in command.params if p.name not in ("install_completion", "show_completion")
        ]
        is_group = hasattr(command, "commands")
        if is_group and line == "memvault":
            continue
        out.append(f"{'###' if is_group else '####'} `{line}`\n")
        out.append(_paragraphs((command.help or "").replace("\b\n", "")) + "\n")
        out.extend(f"- {_option(p)}" for p in params)
        out.append("")
    return "\n".join(out)


# --- metrics -------------------------------------------------------------------------------------


def metric_rows() -> list[tuple[str, str, str, str]]:
    """(name as scraped, type, labels, help) of each metric memvault.metrics defines."""
    from prometheus_client.metrics import MetricWrapperBase

    from memvault import metrics

    rows = []
    for metric in vars(metrics).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        (family,) = metric.describe()
        name = f"{family.name}_total" if family.type == "counter" else family.name
        labels = ", ".join(f"`{label}`" for label in metric._labelnames)
        rows.append((name, family.type, labels, family.documentation))
    return rows


def metrics_reference() -> str:
    lines = ["| metric | type | labels | what it counts |", "|---|---|---|---|"]
    for name, kind, labels, doc in metric_rows():
        lines.append(f"| `{name}` | {kind} | {labels} | {_cell(doc)} |")
    return "\n".join(lines)


# --- the hook ------------------------------------------------------------------------------------

GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_reference,
    "http": http_reference,
    "mcp": mcp_reference,
    "cli": cli_reference,
    "metrics": metrics_reference,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda match: GENERATORS[match.group(1)](), markdown)
