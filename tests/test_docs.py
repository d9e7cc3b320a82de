"""The documentation: the site builds strictly and offline, every page is in its nav, the
reference pages cover the code, and the README stays a short front door."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(entries: list[Any]) -> set[str]:
    pages: set[str] = set()
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            pages |= _nav_pages(value)
        else:
            pages.add(str(value))
    return pages


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return config


@pytest.mark.slow
def test_the_site_builds_strictly_and_fetches_nothing_from_outside(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NO_MKDOCS_2_WARNING": "1",
    }
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    pages = list(site.rglob("*.html"))
    assert len(pages) >= len(list(DOCS.glob("*.md")))
    fetched = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)
    for page in pages:
        assert not fetched.search(page.read_text()), f"{page} loads something from outside"
    generated = (site / "configuration" / "index.html").read_text()
    assert "MEMVAULT_DATABASE_URL" in generated and "<!-- reference:" not in generated


def test_every_page_under_docs_is_in_the_nav() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    missing = sorted(pages - nav)
    assert not missing, f"add these pages to the nav in mkdocs.yml: {missing}"


def test_every_setting_is_documented_with_what_it_does() -> None:
    from memvault.config import Settings

    rows = {variable: meaning for variable, _, _, meaning in _reference().settings_rows()}
    assert set(rows) == {f"MEMVAULT_{name.upper()}" for name in Settings.model_fields}
    undescribed = sorted(variable for variable, meaning in rows.items() if not meaning.strip())
    assert not undescribed, f"give these settings a Field(description=...): {undescribed}"


def test_every_client_method_is_an_operation_of_the_http_reference() -> None:
    from memvault.operations import client_operations

    reference = _reference()
    documented = {(method, path) for method, path, _ in reference.operations()}
    assert {(op.method, op.path) for op in client_operations()} <= documented
    page = reference.http_reference()
    for op in client_operations():
        assert f"`{op.service}`" in page and f"`{op.method} {op.path}`" in page


def test_every_mcp_tool_and_argument_tells_the_model_what_it_is_for() -> None:
    tools = _reference().mcp_tools()
    assert tools
    for tool in tools:
        assert (tool.description or "").strip(), tool.name
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}({name}) has no description"
    page = _reference().mcp_reference()
    assert all(f"### `{tool.name}`" in page for tool in tools)


def test_the_readme_is_a_short_front_door_with_links_that_resolve() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+://", target):
            assert target.startswith("http://127.0.0.1"), f"README links outside: {target}"
            continue
        resolved = (ROOT / target).resolve()
        assert resolved.is_relative_to(ROOT), f"README links outside the repository: {target}"
        assert resolved.exists(), f"README links to a missing file: {target}"


def test_the_agent_loop_in_the_docs_is_the_one_the_readme_runs() -> None:
    loop = re.compile(r"```python\n(.*?)```", re.DOTALL)
    readme = loop.search(README.read_text().split("## Cognitive memory", 1)[1])
    assert readme is not None
    assert readme.group(1) in (DOCS / "cognitive.md").read_text()


@pytest.mark.parametrize(
    "path",
    [README, ROOT / "bench" / "HISTORY.md", *sorted(DOCS.rglob("*.md")), *DOCS.rglob("*.py")],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_the_docs_name_no_issue_numbers(path: Path) -> None:
    found = re.findall(r"\bissues? #?\d+", path.read_text(), re.IGNORECASE)
    assert not found, f"{path.name} names {found}: say what the work was, not its number"
