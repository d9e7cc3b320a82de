"""LangChain's standard retriever tests (the ``langchain-tests`` package, pinned in the dev
extras) run against ``MemvaultRetriever``: ``RetrieversIntegrationTests`` as the package ships
it, with only the retriever to build given here: the framework's own suite as the bar."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_tests")

from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from memvault import Memory
from memvault.integrations.langchain import MemvaultRetriever
from tests.conftest import settings_for

USER = "langchain-standard"
_opened: list[Memory] = []


@pytest.fixture(scope="module", autouse=True)
def _memory(module_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One store for the module: the standard tests only read, and ask for at most three
    documents of a query that five memories match."""
    settings = settings_for(
        module_database_url, tmp_path_factory.mktemp("data"), embedding_provider="hash"
    )
    with Memory(settings) as memory:
        for text in (
            "Bees make honey in the hive",
            "The beekeeper checks the bees every week",
            "Honey bees dance to show where flowers are",
            "A bee sting hurts for a day",
            "Wild bees nest in the ground",
        ):
            memory.add(text, user_id=USER, infer=False)
        _opened.append(memory)
        yield
        _opened.clear()


class TestMemvaultRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return MemvaultRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": _opened[0], "user_id": USER}

    @property
    def retriever_query_example(self) -> str:
        return "bees and honey"
