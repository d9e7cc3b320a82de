"""A LangChain retriever over memvault's search: ``MemvaultRetriever(memory=..., user_id=...)``.

Each hit is a ``Document`` whose text is the memory's content, whose ``id`` is the memory's id,
and whose metadata is the memory's own metadata plus what memvault knows of it, under keys
that cannot collide with the caller's: ``memvault`` holds ``id``, ``relevance``, ``score``,
``similarity``, ``scores``, ``created_at``, ``occurred_at``, ``source``, ``tags``,
``categories``, ``channel``, ``app_id`` and ``importance``. ``relevance`` (0-1, comparable
across queries) is what LangChain's vector stores call the relevance score; ``score`` only
orders one result.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from memvault.integrations._faces import Bridge


def _document(hit: Any) -> Document:
    facts = {
        "id": str(hit.id),
        "relevance": hit.relevance,
        "score": hit.score,
        "similarity": hit.similarity,
        "scores": dict(hit.scores),
        "created_at": hit.created_at.isoformat(),
        "occurred_at": hit.occurred_at.isoformat(),
        "source": hit.source,
        "tags": list(hit.tags),
        "categories": list(hit.categories),
        "channel": hit.channel,
        "app_id": hit.app_id,
        "importance": hit.importance,
    }
    return Document(
        page_content=hit.content, id=str(hit.id), metadata={**hit.metadata, "memvault": facts}
    )


class MemvaultRetriever(BaseRetriever):
    """``memory`` is any of ``Memory``, ``AsyncMemory``, ``MemoryClient`` or
    ``AsyncMemoryClient``; ``k`` is how many documents; ``search_kwargs`` go to ``search`` as
    given (filters such as ``app_id``, ``tags``, ``metadata``; ``recipe``; ...). Keywords given
    to ``invoke`` / ``ainvoke`` (``k=1``, a filter) override both for that call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    user_id: str
    k: int = 10
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    _bridge: Bridge | None = PrivateAttr(default=None)

    def _link(self) -> Bridge:
        if self._bridge is None:
            self._bridge = Bridge(self.memory)
        return self._bridge

    async def _search(self, query: str, given: dict[str, Any]) -> list[Document]:
        # What the call gives (``invoke(q, k=1)``, a filter) overrides what the retriever holds,
        # as LangChain's retrievers do (langchain-tests: test_invoke_with_k_kwarg).
        options = {**self.search_kwargs, **given}
        limit = options.pop("k", self.k)
        found = await self._link().service.search(
            query, user_id=self.user_id, limit=limit, **options
        )
        return [_document(hit) for hit in found.results]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **given: Any
    ) -> list[Document]:
        return self._link().run(self._search(query, given))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **given: Any
    ) -> list[Document]:
        return await self._link().arun(self._search(query, given))


__all__ = ["MemvaultRetriever"]
