"""Language models behind one small interface, for the write pipeline's judgement calls
(deduplication, enrichment). No provider configured means no LLM: the offline rules decide.

Settings read (``MEMVAULT_`` prefix): ``llm_provider`` (``openai`` | ``anthropic`` | unset),
``llm_model``, ``llm_base_url``, ``llm_api_key``, ``llm_timeout_s``, ``llm_attempts`` and
``llm_retry_base_s``. They are read with ``getattr`` and defaults so this package does not
depend on when they are added to :class:`~memvault.config.Settings`.
"""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from memvault.errors import ConfigurationError
from memvault.llm.anthropic import DEFAULT_BASE_URL as ANTHROPIC_BASE_URL
from memvault.llm.anthropic import AnthropicMessages
from memvault.llm.base import (
    LLM,
    LLMError,
    LLMInvalidAnswer,
    LLMRejected,
    LLMUnavailable,
    Prompt,
    strict_schema,
)
from memvault.llm.openai import OpenAIChat
from memvault.llm.prompts import DEDUP_DECISION, ENRICH

__all__ = [
    "DEDUP_DECISION",
    "ENRICH",
    "LLM",
    "AnthropicMessages",
    "LLMError",
    "LLMInvalidAnswer",
    "LLMRejected",
    "LLMUnavailable",
    "OpenAIChat",
    "Prompt",
    "build_llm",
    "strict_schema",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"


def build_llm(settings: Any) -> LLM | None:
    """The configured LLM, or None when ``llm_provider`` is unset.

    Raises :class:`ConfigurationError` for an unknown provider, a missing model, or a missing
    key for the providers' own hosted APIs (local servers need no key).
    """
    provider = getattr(settings, "llm_provider", None)
    if provider is None:
        return None
    model = getattr(settings, "llm_model", None) or ""
    if not model:
        raise ConfigurationError(
            "MEMVAULT_LLM_MODEL is required when MEMVAULT_LLM_PROVIDER is set."
        )
    base_url = getattr(settings, "llm_base_url", None)
    api_key = _secret(getattr(settings, "llm_api_key", None))
    common: dict[str, Any] = {
        "model": model,
        "api_key": api_key,
        "timeout_s": float(getattr(settings, "llm_timeout_s", 20.0)),
        "attempts": int(getattr(settings, "llm_attempts", 3)),
        "retry_base_s": float(getattr(settings, "llm_retry_base_s", 0.5)),
    }
    if provider == "openai":
        url = base_url or OPENAI_BASE_URL
        _require_key_for(url, OPENAI_BASE_URL, api_key)
        return OpenAIChat(base_url=url, **common)
    if provider == "anthropic":
        url = base_url or ANTHROPIC_BASE_URL
        _require_key_for(url, ANTHROPIC_BASE_URL, api_key)
        return AnthropicMessages(base_url=url, **common)
    raise ConfigurationError(
        f"MEMVAULT_LLM_PROVIDER must be openai or anthropic, not {provider!r}.",
        details={"provider": str(provider)},
    )


def _secret(value: SecretStr | str | None) -> str | None:
    if isinstance(value, SecretStr):
        return value.get_secret_value() or None
    return value or None


def _require_key_for(url: str, hosted_url: str, api_key: str | None) -> None:
    """The hosted APIs always need a key: say so at start-up, not on the first memory."""
    if api_key is None and url.rstrip("/") == hosted_url:
        raise ConfigurationError(f"MEMVAULT_LLM_API_KEY is required to use {hosted_url}.")
