"""The README's agent loop runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import KEY

README = Path(__file__).parents[1] / "README.md"


def _agent_loop() -> str:
    section = README.read_text().split("## Cognitive memory", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_readme_agent_loop_runs(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
    }.items():
        monkeypatch.setenv(name, value)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_agent_loop(), "README.md", "exec"), {})
    block = printed.getvalue()
    assert "## Profile" in block and "style: short answers, code first" in block
    assert "Run `make deploy`" in block
    assert "deploy the landing page: 1. shell (no outcomes recorded yet)" in block
    # Completed: no longer an active goal, but what happened, with its result.
    assert "## Active goals" not in block
    assert "ship the new landing page -> live since Friday" in block
    assert "[tool shell succeeded " in block
