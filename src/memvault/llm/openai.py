"""Any OpenAI-compatible ``/chat/completions`` endpoint: OpenAI, Azure, Ollama, vLLM, llama.cpp,
LM Studio, OpenRouter.

JSON comes from structured outputs (``response_format: json_schema``, strict). Servers that do
not know it answer 400; then this client falls back to JSON mode (``json_object``, the schema
described in the system message) and keeps using JSON mode for the rest of its life.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

import httpx

from memvault.llm.base import LLM, LLMInvalidAnswer, status_error, strict_schema
from memvault.tls import verified_context

log = logging.getLogger(__name__)

# Words in a 400 that mean "this server cannot do json_schema", not "your request is wrong".
_UNSUPPORTED_MARKERS = ("response_format", "json_schema", "not supported", "unsupported")

JSON_MODE_INSTRUCTION = (
    "\n\nAnswer with only a JSON object, no other text, that matches this JSON schema:\n"
)


def auth_headers(base_url: str, api_key: str | None) -> dict[str, str]:
    """Bearer auth everywhere; Azure's own hosts read the key from ``api-key``."""
    if not api_key:
        return {}  # local servers (Ollama, llama.cpp…) need none
    headers = {"Authorization": f"Bearer {api_key}"}
    if (urlsplit(base_url).hostname or "").endswith(".azure.com"):
        headers["api-key"] = api_key
    return headers


def rejects_json_schema(response: httpx.Response) -> bool:
    """Whether a refusal says the server does not support ``response_format: json_schema``."""
    if response.status_code not in (400, 422):
        return False
    text = response.text.lower()
    return any(marker in text for marker in _UNSUPPORTED_MARKERS)


class OpenAIChat(LLM):
    provider = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout_s: float,
        attempts: int = 3,
        retry_base_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.attempts = attempts
        self.retry_base_s = retry_base_s
        # Flipped once a server refuses json_schema, so later calls skip the doomed request.
        self.json_schema_supported = True
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/",
            headers=auth_headers(base_url, api_key),
            timeout=timeout_s,
            transport=transport,
            verify=verified_context(),
        )

    async def complete_json(self, system: str, user: str, schema: dict[str, Any], name: str) -> str:
        if self.json_schema_supported:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": strict_schema(schema), "strict": True},
            }
            response = await self._post(
                self._client, "chat/completions", self._body(system, user, response_format)
            )
            if not rejects_json_schema(response):
                return self._answer(response)
            self.json_schema_supported = False
            log.info(
                "llm openai/%s refused json_schema (%d); using json_object from now on",
                self.model,
                response.status_code,
            )
        system = system + JSON_MODE_INSTRUCTION + json.dumps(schema, separators=(",", ":"))
        response = await self._post(
            self._client, "chat/completions", self._body(system, user, {"type": "json_object"})
        )
        return self._answer(response)

    def _body(self, system: str, user: str, response_format: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "response_format": response_format,
        }

    def _answer(self, response: httpx.Response) -> str:
        if error := status_error(self.provider, self.model, response):
            raise error
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMInvalidAnswer(
                "The language model service (openai) sent a malformed response.",
                details={"provider": self.provider, "model": self.model},
            ) from exc
        if not isinstance(content, str):  # null content: a refusal, or a tool call
            raise LLMInvalidAnswer(
                "The language model (openai) returned no content.",
                details={"provider": self.provider, "model": self.model},
            )
        return content

    async def aclose(self) -> None:
        await self._client.aclose()
