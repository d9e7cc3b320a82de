"""Every ``python`` block of docs/integrations.md runs, unchanged, against a real store."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings

PAGE = Path(__file__).parents[1] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)


def test_the_page_has_an_example_per_framework() -> None:
    joined = "\n".join(BLOCKS)
    for name in (
        "MemvaultStore",
        "create_manage_memory_tool",
        "MemvaultSession",
        "MemvaultRetriever",
        "memvault.compat.mem0",
    ):
        assert name in joined


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:.*create_react_agent.*")
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(
    index: int, make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langgraph.store.base")
    pytest.importorskip("agents")
    settings = make_settings(embedding_provider="hash")
    for name in ("database_url", "encryption_key", "data_dir", "embedding_provider"):
        value = getattr(settings, name)
        value = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        monkeypatch.setenv(f"MEMVAULT_{name.upper()}", str(value))
    scope: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(BLOCKS[index], f"integrations.md#{index}", "exec"), scope)
