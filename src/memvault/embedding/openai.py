"""Any OpenAI-compatible ``/embeddings`` endpoint: OpenAI, Azure, Ollama, vLLM, LM Studio."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from memvault.embedding.base import Embedder, ProviderRejected, ProviderUnavailable
from memvault.tls import verified_context

_KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder(Embedder):
    provider = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        dimensions: int | None,
        timeout_s: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.model_id = f"openai/{model}" + (f"@{dimensions}" if dimensions else "")
        self.requested_dimensions = dimensions
        self.dimensions = dimensions or _KNOWN_DIMENSIONS.get(model)
        self.max_tokens = 8191
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout_s,
            transport=transport,
            verify=verified_context(),
        )

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.requested_dimensions:
            body["dimensions"] = self.requested_dimensions
        try:
            response = await self._client.post("embeddings", json=body)
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"The embedding service did not answer ({type(exc).__name__})."
            ) from exc
        if response.status_code in (401, 403):
            raise ProviderRejected(
                "The embedding service refused the API key (MEMVAULT_EMBEDDING_API_KEY)."
            )
        if response.status_code == 429 or response.status_code >= 500:
            raise ProviderUnavailable(f"The embedding service answered {response.status_code}.")
        if response.status_code >= 400:
            raise ProviderRejected(
                f"The embedding service answered {response.status_code}; "
                "check MEMVAULT_EMBEDDING_MODEL and the base URL."
            )
        return self._parse(response, len(texts))

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderUnavailable("The embedding service sent a malformed answer.") from exc
        if len(vectors) != expected or len({len(v) for v in vectors}) > 1:
            raise ProviderUnavailable("The embedding service sent the wrong number of vectors.")
        if self.dimensions is None:
            self.dimensions = len(vectors[0])
        elif len(vectors[0]) != self.dimensions:
            raise ProviderRejected(
                f"The embedding service sent {len(vectors[0])}-dimensional "
                f"vectors, expected {self.dimensions}."
            )
        return vectors

    async def aclose(self) -> None:
        await self._client.aclose()
