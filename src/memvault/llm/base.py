"""The LLM provider interface: one abstract call (``complete_json``) and, on top of it,
``structured``, which renders a versioned prompt and returns a validated pydantic object.

Failures fall in three kinds, each its own error so callers can choose what to do:
``LLMUnavailable`` (the service did not answer; retried with backoff before it is raised),
``LLMRejected`` (the service refused the request: key or model; retrying cannot help) and
``LLMInvalidAnswer`` (it answered, twice, with something that is not the JSON we asked for).

Prompts and answers hold memory content, so nothing here logs or raises them: logs and errors
name only the provider, model, prompt, status code and attempt.
"""

from __future__ import annotations

import copy
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from memvault.errors import MemvaultError

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

API_KEY_SETTING = "MEMVAULT_LLM_API_KEY"

# Said to the model before the second try, so a deterministic (temperature 0) model does not
# simply repeat the answer that failed.
RETRY_NOTE = (
    "\n\nYour previous answer was not a JSON object matching the required schema. "
    "Answer again with only that JSON object."
)


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt. ``user`` is a ``str.format`` template with named fields."""

    name: str
    version: int
    system: str
    user: str

    def render(self, **variables: Any) -> str:
        try:
            return self.user.format(**variables)
        except KeyError as exc:
            # A programming error in the caller; say which prompt and which field.
            raise ValueError(f"Prompt {self.name!r} needs the variable {exc.args[0]!r}.") from exc


class LLMError(MemvaultError):
    """Root of the LLM errors: the judgement call could not be made by the model."""

    status_code = 502
    code = "llm_error"


class LLMUnavailable(LLMError):
    """Timeout, connection error, 429 or 5xx — after every retry."""

    code = "llm_unavailable"


class LLMRejected(LLMError):
    """The service refused the request itself (key, model, URL): retrying will not help."""

    code = "llm_rejected"


class LLMInvalidAnswer(LLMError):
    """The model answered, twice, with text that is not JSON or does not fit the schema."""

    code = "llm_invalid_answer"


class LLM(ABC):
    """A chat model that can be made to answer with JSON matching a schema."""

    provider: str
    model: str
    attempts: int = 3
    retry_base_s: float = 0.5

    @abstractmethod
    async def complete_json(self, system: str, user: str, schema: dict[str, Any], name: str) -> str:
        """One call; returns the raw text the model produced (expected to be JSON)."""

    async def structured(self, prompt: Prompt, output: type[T], **variables: Any) -> T:
        """Render ``prompt``, call the model, parse and validate the answer into ``output``.

        A malformed or invalid answer is retried once; if the second fails too this raises
        :class:`LLMInvalidAnswer`. Transport failures are retried inside ``complete_json``.
        """
        user = prompt.render(**variables)
        schema = output.model_json_schema()
        problems: list[dict[str, str]] = []
        for attempt in (1, 2):
            text = user if attempt == 1 else user + RETRY_NOTE
            try:
                raw = await self.complete_json(prompt.system, text, schema, prompt.name)
                return output.model_validate_json(strip_code_fence(raw))
            except ValidationError as exc:
                problems = _summarise(exc)
            except LLMInvalidAnswer as exc:  # an envelope without an answer (e.g. a refusal)
                problems = [{"loc": "", "type": exc.code}]
            log.warning(
                "llm %s/%s gave an invalid answer to %s v%d (attempt %d of 2)",
                self.provider,
                self.model,
                prompt.name,
                prompt.version,
                attempt,
            )
        raise LLMInvalidAnswer(
            f"The language model ({self.provider}/{self.model}) did not answer "
            f"{prompt.name!r} with valid JSON, twice.",
            details={
                "provider": self.provider,
                "model": self.model,
                "prompt": prompt.name,
                "prompt_version": prompt.version,
                "problems": problems,
            },
        )

    async def aclose(self) -> None:
        return None

    async def _post(
        self, client: httpx.AsyncClient, path: str, body: dict[str, Any]
    ) -> httpx.Response:
        """POST ``body``, retrying transport failures, 429 and 5xx; any other answer (a
        success or a refusal) is returned for the provider to read."""

        async def once() -> httpx.Response:
            try:
                response = await client.post(path, json=body)
            except httpx.HTTPError as exc:
                raise send_error(self.provider, self.model, exc) from exc
            error = status_error(self.provider, self.model, response)
            if isinstance(error, LLMUnavailable):
                raise error
            return response

        return await self._with_retries(once)

    async def _with_retries(self, call: Callable[[], Awaitable[R]]) -> R:
        """Run ``call`` up to ``attempts`` times while it raises :class:`LLMUnavailable`,
        waiting ``retry_base_s * 2**n`` between tries."""
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.retry_base_s, max=30),
            retry=retry_if_exception_type(LLMUnavailable),
            reraise=True,
        ):
            with attempt:
                try:
                    return await call()
                except LLMUnavailable as exc:
                    log.warning(
                        "llm %s/%s unavailable (%s) on attempt %d of %d",
                        self.provider,
                        self.model,
                        exc.details.get("status", exc.details.get("error", "?")),
                        attempt.retry_state.attempt_number,
                        self.attempts,
                    )
                    raise
        raise AssertionError("unreachable: tenacity re-raises the last error")


def _summarise(exc: ValidationError) -> list[dict[str, str]]:
    """Where and how the answer failed, without the values (they may hold memory content)."""
    return [
        {"loc": ".".join(str(part) for part in error["loc"]), "type": error["type"]}
        for error in exc.errors(include_input=False, include_url=False)[:5]
    ]


_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)


def strip_code_fence(text: str) -> str:
    """Models in plain-JSON or text mode sometimes wrap the object in a markdown fence."""
    text = text.strip()
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


# --- HTTP status → error, shared by the providers -------------------------------------------


def send_error(provider: str, model: str, exc: httpx.HTTPError) -> LLMUnavailable:
    """A transport failure: nothing (or nothing complete) came back."""
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "could not be reached"
    return LLMUnavailable(
        f"The language model service ({provider}) {kind} ({type(exc).__name__}).",
        details={"provider": provider, "model": model, "error": type(exc).__name__},
    )


def status_error(provider: str, model: str, response: httpx.Response) -> LLMError | None:
    """The error a non-2xx answer stands for, or None for a success."""
    status = response.status_code
    if status < 400:
        return None
    details: dict[str, Any] = {"provider": provider, "model": model, "status": status}
    if code := provider_error_code(response):
        details["provider_code"] = code
    if status in (401, 403):
        return LLMRejected(
            f"The language model service ({provider}) refused the API key ({status}); "
            f"check {API_KEY_SETTING}.",
            details=details,
        )
    if status in (408, 429) or status >= 500:
        return LLMUnavailable(
            f"The language model service ({provider}) answered {status}.", details=details
        )
    return LLMRejected(
        f"The language model service ({provider}) refused the request ({status}); "
        "check MEMVAULT_LLM_MODEL and MEMVAULT_LLM_BASE_URL.",
        details=details,
    )


_IDENTIFIER = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def provider_error_code(response: httpx.Response) -> str | None:
    """The provider's machine code for an error (``model_not_found``…), never its message,
    which may quote the request."""
    try:
        error = response.json().get("error")
    except ValueError:
        return None
    if not isinstance(error, dict):
        return None
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and _IDENTIFIER.match(value):
            return value
    return None


# --- JSON schema for OpenAI strict mode ------------------------------------------------------

# What OpenAI's strict structured outputs accept everywhere (older snapshots and compatible
# servers reject ``default``, length limits, ``format`` and more). Dropped constraints are
# folded into the description so the model still sees them; pydantic enforces them anyway.
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "title",
    }
)
_SILENTLY_DROPPED = frozenset({"default", "examples", "discriminator"})


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` that OpenAI's ``strict: true`` accepts: every object lists all its
    properties as required and forbids others; unsupported keywords are removed.

    Optional fields stay optional in meaning only when pydantic already made them nullable
    (``X | None`` gives ``anyOf: [X, null]``): the model must then send ``null`` explicitly.
    """
    return _strict_node(copy.deepcopy(schema))


def _strict_node(node: dict[str, Any]) -> dict[str, Any]:
    dropped = {k: v for k, v in node.items() if k not in _STRICT_KEYWORDS}
    out = {k: v for k, v in node.items() if k in _STRICT_KEYWORDS}
    notes = [f"{k} {v}" for k, v in dropped.items() if k not in _SILENTLY_DROPPED]
    if notes:
        prefix = f"{out['description']} " if "description" in out else ""
        out["description"] = f"{prefix}({', '.join(notes)})"
    if "properties" in out:
        out["properties"] = {k: _strict_node(v) for k, v in out["properties"].items()}
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    elif out.get("type") == "object":
        # A free-form object cannot be strict; an empty closed object is the honest subset.
        out.update(properties={}, required=[], additionalProperties=False)
    if isinstance(out.get("items"), dict):
        out["items"] = _strict_node(out["items"])
    if "anyOf" in out:
        out["anyOf"] = [_strict_node(option) for option in out["anyOf"]]
    if "$defs" in out:
        out["$defs"] = {k: _strict_node(v) for k, v in out["$defs"].items()}
    return out
