"""docs/limits.md is the one table of limits: every text and number field of every request body
in the OpenAPI document is named there, with the bound the schema holds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.api import create_app
from memvault.config import Settings
from memvault.crypto.envelope import generate_key

PAGE = Path(__file__).parent.parent / "docs" / "limits.md"


def _document() -> dict[str, Any]:
    settings = Settings(
        database_url="postgresql://nobody@nowhere/none", encryption_key=generate_key()
    )
    return create_app(settings).openapi()


def _bounded_fields(document: dict[str, Any]) -> Iterator[tuple[str, str, float | None]]:
    """(model.field, field, upper bound) of every text and number field of the request bodies."""
    schemas = document["components"]["schemas"]

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        options = [o for o in schema.get("anyOf", []) if o.get("type") != "null"]
        return resolve(options[0]) if len(options) == 1 else schema

    pending = [
        op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        for ops in document["paths"].values()
        for op in ops.values()
        if "requestBody" in op
    ]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for field, raw in schemas[name].get("properties", {}).items():
            refs = re.findall(r"#/components/schemas/(\w+)", str(raw))
            pending.extend(refs)
            schema = resolve(raw)
            kind = schema.get("type")
            if kind == "array":
                schema = resolve(schema.get("items", {}))
                kind = schema.get("type")
            if kind == "string" and "enum" not in schema and "format" not in schema:
                yield f"{name}.{field}", field, schema.get("maxLength")
            elif kind in ("integer", "number"):
                yield f"{name}.{field}", field, schema.get("maximum")


def test_every_text_and_number_field_is_in_the_table_with_its_bound() -> None:
    page = PAGE.read_text()
    missing, wrong = [], []
    fields = list(_bounded_fields(_document()))
    for where, field, bound in fields:
        if f"`{field}`" not in page:
            missing.append(where)
        elif bound is not None and f"{int(bound):,}" not in page:
            wrong.append((where, bound))
    assert len(fields) > 50  # the walk found the bodies
    assert missing == [] and wrong == [], (missing, wrong)
