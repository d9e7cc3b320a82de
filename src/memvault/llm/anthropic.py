"""Anthropic's Messages API (``/v1/messages``) and servers that speak it.

JSON comes from a forced tool call: the schema is the tool's ``input_schema`` and
``tool_choice`` names the tool, so the model's answer is the tool's ``input`` object. A server
that ignores tools and answers in text is read from its first text block instead.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from memvault.llm.base import LLM, LLMInvalidAnswer, status_error
from memvault.tls import verified_context

ANTHROPIC_VERSION = "2023-06-01"
MAX_TOKENS = 1024
DEFAULT_BASE_URL = "https://api.anthropic.com"


def api_root(base_url: str) -> str:
    """The URL ``v1/messages`` is appended to; a base URL given with ``/v1`` works too."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1") + "/"


class AnthropicMessages(LLM):
    provider = "anthropic"

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
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
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._client = httpx.AsyncClient(
            base_url=api_root(base_url),
            headers=headers,
            timeout=timeout_s,
            transport=transport,
            verify=verified_context(),
        )

    async def complete_json(self, system: str, user: str, schema: dict[str, Any], name: str) -> str:
        body = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "temperature": 0,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "tools": [
                {
                    "name": name,
                    "description": "Record your answer; its input is the whole answer.",
                    "input_schema": schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": name},
        }
        response = await self._post(self._client, "v1/messages", body)
        if error := status_error(self.provider, self.model, response):
            raise error
        return self._answer(response)

    def _answer(self, response: httpx.Response) -> str:
        try:
            blocks = response.json()["content"]
            tool_inputs = [b["input"] for b in blocks if b.get("type") == "tool_use"]
            texts = [b["text"] for b in blocks if b.get("type") == "text"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self._invalid("sent a malformed response") from exc
        if tool_inputs:
            return json.dumps(tool_inputs[0])
        if texts and isinstance(texts[0], str):
            return texts[0]
        raise self._invalid("returned neither a tool call nor text")

    def _invalid(self, what: str) -> LLMInvalidAnswer:
        return LLMInvalidAnswer(
            f"The language model service (anthropic) {what}.",
            details={"provider": self.provider, "model": self.model},
        )

    async def aclose(self) -> None:
        await self._client.aclose()
