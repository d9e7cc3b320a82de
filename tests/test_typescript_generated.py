"""The TypeScript client's generated source is what ``python -m memvault._typescript`` writes
from today's operation table: a changed operation or model fails here until it is regenerated
(as ``_client_surface.py`` is checked in ``test_structure.py``)."""

from __future__ import annotations

import re

import pytest

from memvault import _typescript
from memvault.operations import client_operations


@pytest.mark.parametrize("path", sorted(_typescript.generate()), ids=lambda p: p.name)
def test_the_generated_file_is_current(path: _typescript.Path) -> None:
    expected = _typescript.generate()[path]
    assert path.read_text(encoding="utf-8") == expected, (
        f"{path.name} is out of date: run python -m memvault._typescript"
    )


def test_every_operation_with_a_library_method_has_a_typed_twin() -> None:
    client = (_typescript.GENERATED / "client.ts").read_text(encoding="utf-8")
    for op in client_operations():
        assert op.service is not None
        method = _typescript.camel(op.service)
        assert re.search(
            rf"^  {method}\(params\??: \w+Params, options\?: RequestOptions\)", client, re.M
        ), method


def test_the_public_types_hold_no_any() -> None:
    """``unknown`` and ``JsonValue`` where a type is open; ``any`` nowhere in the code."""
    as_type = re.compile(r"(:|<|\||&|\bas)\s*any\b|\bany\s*(\[\]|>|\||;|,|\))")
    for path in (_typescript.PACKAGE / "src").rglob("*.ts"):
        code = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if not line.lstrip().startswith(("*", "/*", "//"))
        ]
        assert not [line for line in code if as_type.search(line)], path
