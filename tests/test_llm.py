"""The LLM providers against real local HTTP servers speaking the OpenAI chat and Anthropic
Messages APIs, scripted per test: answers, retries, errors, and the requests actually sent."""

from __future__ import annotations

import json
import logging
import string
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from memvault.config import Settings
from memvault.errors import ConfigurationError
from memvault.llm import (
    DEDUP_DECISION,
    ENRICH,
    LLM,
    AnthropicMessages,
    LLMError,
    LLMInvalidAnswer,
    LLMRejected,
    LLMUnavailable,
    OpenAIChat,
    Prompt,
    build_llm,
    strict_schema,
)
from memvault.llm.anthropic import api_root
from memvault.llm.base import RETRY_NOTE, strip_code_fence
from memvault.llm.openai import auth_headers
from memvault.pipeline.decisions import DedupDecision, Enrichment
from tests.fakes import closed_port_url
from tests.llm_fakes import (
    LLMServer,
    Reply,
    anthropic_text_reply,
    anthropic_tool_reply,
    error_reply,
    llm_server,
    openai_reply,
)

KEY = "sk-test-key-0123456789"
SECRET_MEMORY = "Dana's door code is 4711"  # must never reach a log or an error
DEDUP_VARS: dict[str, Any] = {
    "existing": "Dana likes tea",
    "new": SECRET_MEMORY,
    "similarity": 0.8312,
}
ENRICH_VARS: dict[str, Any] = {
    "text": "Dentist tomorrow at 3pm",
    "reference_time": "2025-06-02T09:00:00+00:00",
}
GOOD_DEDUP = {"action": "merge", "merged_text": "Dana likes tea and ...", "reason": "same topic"}
GOOD_ENRICH = {
    "importance": 6,
    "memory_type": "temporal",
    "valid_until": "2025-06-03T15:00:00+00:00",
    "categories": ["health", "appointment"],
}
BAD_ENRICH = {**GOOD_ENRICH, "importance": 42}


@dataclass(frozen=True)
class Flavour:
    """One provider's API, as the scripted server must speak it."""

    name: str
    path: str

    def build(self, server: LLMServer, **overrides: Any) -> LLM:
        options: dict[str, Any] = {
            "model": "test-model",
            "api_key": KEY,
            "timeout_s": 5.0,
            "retry_base_s": 0.01,
            **overrides,
        }
        if self.name == "openai":
            return OpenAIChat(base_url=server.url + "/v1", **options)
        return AnthropicMessages(base_url=server.url, **options)

    def answer(self, payload: dict[str, Any]) -> Reply:
        """The model's structured answer, delivered the provider's way."""
        if self.name == "openai":
            return openai_reply(json.dumps(payload))
        return anthropic_tool_reply(payload)

    def text(self, text: str) -> Reply:
        """Free text where JSON was wanted (Anthropic: a text block instead of the tool)."""
        return openai_reply(text) if self.name == "openai" else anthropic_text_reply(text)

    def user_message(self, body: dict[str, Any]) -> str:
        return str(body["messages"][-1]["content"])


OPENAI = Flavour("openai", "/v1/chat/completions")
ANTHROPIC = Flavour("anthropic", "/v1/messages")


@pytest.fixture(params=[OPENAI, ANTHROPIC], ids=lambda f: f.name)
def flavour(request: pytest.FixtureRequest) -> Flavour:
    flavour: Flavour = request.param
    return flavour


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as running:
        yield running


@pytest.fixture
async def make_llm(flavour: Flavour, server: LLMServer) -> AsyncIterator[Callable[..., LLM]]:
    built: list[LLM] = []

    def build(**overrides: Any) -> LLM:
        llm = flavour.build(server, **overrides)
        built.append(llm)
        return llm

    yield build
    for llm in built:
        await llm.aclose()


@pytest.fixture
async def openai_llm(server: LLMServer) -> AsyncIterator[OpenAIChat]:
    llm = OPENAI.build(server)
    assert isinstance(llm, OpenAIChat)
    yield llm
    await llm.aclose()


# --- answers ---------------------------------------------------------------------------------


async def test_good_dedup_answer_is_validated(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.answer(GOOD_DEDUP))
    decision = await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision == DedupDecision.model_validate(GOOD_DEDUP)
    assert server.calls == 1
    assert server.requests[0].path == flavour.path


async def test_good_enrichment_answer_is_validated(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.answer(GOOD_ENRICH))
    enrichment = await make_llm().structured(ENRICH, Enrichment, **ENRICH_VARS)
    assert enrichment.importance == 6
    assert enrichment.memory_type == "temporal"
    assert enrichment.valid_until == datetime(2025, 6, 3, 15, tzinfo=UTC)
    assert enrichment.categories == ["health", "appointment"]


async def test_malformed_then_good_succeeds_on_the_second_call(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.text('{"action": "merge", '), flavour.answer(GOOD_DEDUP))
    decision = await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision.action == "merge"
    assert server.calls == 2
    first, second = (flavour.user_message(r.body) for r in server.requests)
    assert RETRY_NOTE not in first
    assert second == first + RETRY_NOTE  # the retry tells the model what went wrong


async def test_malformed_twice_raises_invalid_answer_after_two_calls(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.text("Sure! " + SECRET_MEMORY), flavour.text("not json"))
    with pytest.raises(LLMInvalidAnswer) as caught:
        await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 2
    error = caught.value
    assert (error.status_code, error.code) == (502, "llm_invalid_answer")
    assert error.details["prompt"] == "dedup_decision"
    assert error.details["problems"] == [{"loc": "", "type": "json_invalid"}]
    assert SECRET_MEMORY not in json.dumps(error.to_dict())


async def test_schema_invalid_then_good_succeeds(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.answer(BAD_ENRICH), flavour.answer(GOOD_ENRICH))
    enrichment = await make_llm().structured(ENRICH, Enrichment, **ENRICH_VARS)
    assert enrichment.importance == 6
    assert server.calls == 2


async def test_schema_invalid_twice_raises_invalid_answer(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.answer(BAD_ENRICH), flavour.answer({"memory_type": "forever"}))
    with pytest.raises(LLMInvalidAnswer) as caught:
        await make_llm().structured(ENRICH, Enrichment, **ENRICH_VARS)
    assert server.calls == 2
    problems = {(p["loc"], p["type"]) for p in caught.value.details["problems"]}
    assert problems == {("importance", "missing"), ("memory_type", "literal_error")}


async def test_fenced_json_is_accepted(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(flavour.text("```json\n" + json.dumps(GOOD_DEDUP) + "\n```"))
    decision = await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision.action == "merge"
    assert server.calls == 1


# --- transport failures ----------------------------------------------------------------------


async def test_503_twice_then_good_succeeds_after_backoff(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(error_reply(503), error_reply(503), flavour.answer(GOOD_DEDUP))
    decision = await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision.action == "merge"
    assert server.calls == 3


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_persistent_overload_raises_unavailable_after_all_attempts(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM], status: int
) -> None:
    server.script(*[error_reply(status)] * 3)
    with pytest.raises(LLMUnavailable) as caught:
        await make_llm(attempts=3).structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 3  # retried by the provider, not again by the answer check
    assert caught.value.details["status"] == status


async def test_timeout_raises_unavailable_after_attempts_calls(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    slow = Reply(status=200, body=flavour.answer(GOOD_DEDUP).body, delay_s=0.6)
    server.script(slow, slow, slow)
    llm = make_llm(timeout_s=0.2, attempts=3)
    with pytest.raises(LLMUnavailable) as caught:
        await llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 3
    assert "timed out" in caught.value.message
    assert caught.value.code == "llm_unavailable"


async def test_connection_refused_raises_unavailable(flavour: Flavour) -> None:
    url = closed_port_url().removesuffix("/v1")
    llm = flavour.build(LLMServer(url=url), attempts=2)
    try:
        with pytest.raises(LLMUnavailable, match="could not be reached"):
            await llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    finally:
        await llm.aclose()


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_key_raises_rejected_at_once(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM], status: int
) -> None:
    server.script(error_reply(status, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(LLMRejected) as caught:
        await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 1
    error = caught.value
    assert "MEMVAULT_LLM_API_KEY" in error.message
    assert KEY not in json.dumps(error.to_dict())
    assert (error.status_code, error.code) == (502, "llm_rejected")


async def test_unknown_model_raises_rejected_at_once(
    flavour: Flavour, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(error_reply(404, "The model `nope` does not exist", code="model_not_found"))
    with pytest.raises(LLMRejected, match="MEMVAULT_LLM_MODEL") as caught:
        await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 1
    assert caught.value.details["provider_code"] == "model_not_found"
    assert "does not exist" not in caught.value.message  # the provider's text is not echoed


async def test_logs_name_provider_and_status_but_never_content(
    flavour: Flavour,
    server: LLMServer,
    make_llm: Callable[..., LLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(error_reply(503), flavour.text(SECRET_MEMORY), flavour.answer(GOOD_DEDUP))
    await make_llm().structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    text = caplog.text
    assert f"llm {flavour.name}/test-model unavailable (503) on attempt 1 of 3" in text
    assert "invalid answer to dedup_decision v1 (attempt 1 of 2)" in text
    for secret in (SECRET_MEMORY, "Dana likes tea", KEY):
        assert secret not in text


def test_errors_share_the_llm_error_root() -> None:
    for cls in (LLMUnavailable, LLMRejected, LLMInvalidAnswer):
        assert issubclass(cls, LLMError)
        assert cls.status_code == 502
    assert LLMError.code == "llm_error"


# --- requests sent ---------------------------------------------------------------------------


async def test_openai_request_is_structured_output_with_bearer_key(
    server: LLMServer, openai_llm: OpenAIChat
) -> None:
    server.script(OPENAI.answer(GOOD_DEDUP))
    await openai_llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["model"] == "test-model"
    assert body["temperature"] == 0
    assert body["messages"] == [
        {"role": "system", "content": DEDUP_DECISION.system},
        {"role": "user", "content": DEDUP_DECISION.render(**DEDUP_VARS)},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "dedup_decision",
            "schema": strict_schema(DedupDecision.model_json_schema()),
            "strict": True,
        },
    }


async def test_anthropic_request_forces_the_tool_and_sends_headers(
    server: LLMServer,
) -> None:
    server.script(ANTHROPIC.answer(GOOD_ENRICH))
    llm = ANTHROPIC.build(server)
    try:
        await llm.structured(ENRICH, Enrichment, **ENRICH_VARS)
    finally:
        await llm.aclose()
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = sent.body
    assert body["model"] == "test-model"
    assert body["max_tokens"] == 1024
    assert body["system"] == ENRICH.system
    assert body["messages"] == [{"role": "user", "content": ENRICH.render(**ENRICH_VARS)}]
    [tool] = body["tools"]
    assert tool["name"] == "enrich"
    assert tool["input_schema"] == Enrichment.model_json_schema()
    assert tool["description"]
    assert body["tool_choice"] == {"type": "tool", "name": "enrich"}


async def test_no_key_sends_no_auth_header(flavour: Flavour, server: LLMServer) -> None:
    server.script(flavour.answer(GOOD_DEDUP))
    llm = flavour.build(server, api_key=None)
    try:
        await llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    finally:
        await llm.aclose()
    headers = server.requests[0].headers
    assert "authorization" not in headers
    assert "x-api-key" not in headers


def test_azure_hosts_also_get_the_api_key_header() -> None:
    azure = auth_headers("https://acme.openai.azure.com/openai/v1", KEY)
    assert azure == {"Authorization": f"Bearer {KEY}", "api-key": KEY}
    assert auth_headers("https://openrouter.ai/api/v1", KEY) == {"Authorization": f"Bearer {KEY}"}


def test_anthropic_base_url_with_or_without_v1() -> None:
    assert api_root("https://api.anthropic.com") == "https://api.anthropic.com/"
    assert api_root("https://proxy.example/anthropic/v1/") == "https://proxy.example/anthropic/"


# --- OpenAI: json_schema → json_object fallback ----------------------------------------------


async def test_openai_falls_back_to_json_object_and_remembers(
    server: LLMServer, openai_llm: OpenAIChat
) -> None:
    server.script(
        error_reply(400, "response_format json_schema is not supported by this model"),
        OPENAI.answer(GOOD_DEDUP),
        OPENAI.answer(GOOD_ENRICH),
    )
    decision = await openai_llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision.action == "merge"
    assert server.calls == 2
    refused, fallback = (r.body for r in server.requests)
    assert refused["response_format"]["type"] == "json_schema"
    assert fallback["response_format"] == {"type": "json_object"}
    system = fallback["messages"][0]["content"]
    assert system.startswith(DEDUP_DECISION.system)
    assert "JSON" in system  # OpenAI's JSON mode requires the word in the messages
    assert json.dumps(DedupDecision.model_json_schema(), separators=(",", ":")) in system

    await openai_llm.structured(ENRICH, Enrichment, **ENRICH_VARS)
    assert server.calls == 3  # straight to json_object: the refusal is remembered
    assert server.requests[2].body["response_format"] == {"type": "json_object"}


async def test_openai_other_400_is_rejected_without_fallback(
    server: LLMServer, openai_llm: OpenAIChat
) -> None:
    server.script(error_reply(400, "messages: too long", code="invalid_request_error"))
    with pytest.raises(LLMRejected):
        await openai_llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 1
    assert openai_llm.json_schema_supported


async def test_openai_refusal_counts_as_an_invalid_answer(
    server: LLMServer, openai_llm: OpenAIChat
) -> None:
    server.script(openai_reply(None, refusal="I can't"), openai_reply(None, refusal="No"))
    with pytest.raises(LLMInvalidAnswer):
        await openai_llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert server.calls == 2


async def test_openai_malformed_envelope_is_retried_once(
    server: LLMServer, openai_llm: OpenAIChat
) -> None:
    server.script(Reply(body="<html>proxy</html>"), OPENAI.answer(GOOD_DEDUP))
    decision = await openai_llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    assert decision.action == "merge"
    assert server.calls == 2


async def test_anthropic_reads_a_plain_text_answer(server: LLMServer) -> None:
    server.script(anthropic_text_reply(json.dumps(GOOD_ENRICH)))
    llm = ANTHROPIC.build(server)
    try:
        enrichment = await llm.structured(ENRICH, Enrichment, **ENRICH_VARS)
    finally:
        await llm.aclose()
    assert enrichment.categories == ["health", "appointment"]


# --- the strict schema -----------------------------------------------------------------------

ALLOWED = {
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


def assert_strict(node: Any) -> None:
    """OpenAI's strict-mode rules: every object closed and listing all properties as
    required; only supported keywords anywhere."""
    if isinstance(node, list):
        for item in node:
            assert_strict(item)
        return
    if not isinstance(node, dict):
        return
    assert set(node) <= ALLOWED, set(node) - ALLOWED
    if node.get("type") == "object" or "properties" in node:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])
    for key in ("items", "anyOf"):
        if key in node:
            assert_strict(node[key])
    for child in (*node.get("properties", {}).values(), *node.get("$defs", {}).values()):
        assert_strict(child)


class Step(BaseModel):
    name: str
    minutes: int = 5


class Plan(BaseModel):
    steps: list[Step]
    backup: Step | None = None
    labels: dict[str, str] = {}
    note: str = ""


@pytest.mark.parametrize("model", [DedupDecision, Enrichment, Plan])
def test_strict_schema_follows_the_strict_rules(model: type[BaseModel]) -> None:
    original = model.model_json_schema()
    snapshot = json.dumps(original)
    strict = strict_schema(original)
    assert_strict(strict)
    assert json.dumps(original) == snapshot  # the input is not changed


def test_strict_schema_keeps_optional_fields_nullable_and_constraints_visible() -> None:
    strict = strict_schema(Enrichment.model_json_schema())
    props = strict["properties"]
    assert strict["required"] == [
        "importance",
        "memory_type",
        "valid_until",
        "categories",
        "event_at",
    ]
    assert {"type": "null"} in props["valid_until"]["anyOf"]
    assert {"type": "null"} in props["event_at"]["anyOf"]
    assert "minimum 1" in props["importance"]["description"]
    assert "maximum 10" in props["importance"]["description"]
    assert "maxItems 8" in props["categories"]["description"]
    assert props["memory_type"]["enum"] == ["persistent", "temporal"]


def test_strict_schema_closes_nested_definitions() -> None:
    strict = strict_schema(Plan.model_json_schema())
    step = strict["$defs"]["Step"]
    assert step["required"] == ["name", "minutes"]
    assert step["additionalProperties"] is False
    assert strict["properties"]["labels"]["properties"] == {}


# --- prompts ---------------------------------------------------------------------------------


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_prompts_use_exactly_their_documented_variables() -> None:
    assert _fields(DEDUP_DECISION.user) == {"existing", "new", "similarity"}
    assert _fields(ENRICH.user) == {"text", "reference_time"}
    for prompt in (DEDUP_DECISION, ENRICH):
        assert prompt.version >= 1
        assert len(prompt.system) < 1500  # short: these run on every write


def test_prompt_rendering_keeps_content_verbatim() -> None:
    rendered = DEDUP_DECISION.render(existing="a {b} c", new="{new}", similarity=0.8312)
    assert "<existing>\na {b} c\n</existing>" in rendered
    assert "<new>\n{new}\n</new>" in rendered
    assert "0.83" in rendered
    at = datetime(2025, 6, 2, 9, tzinfo=timezone(timedelta(hours=2))).isoformat()
    assert at in ENRICH.render(text="x", reference_time=at)


def test_missing_prompt_variable_names_it() -> None:
    prompt = Prompt(name="p", version=1, system="s", user="{a} {b}")
    with pytest.raises(ValueError, match="'b'"):
        prompt.render(a=1)


def test_strip_code_fence() -> None:
    assert strip_code_fence('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert strip_code_fence('  {"a": 1}  ') == '{"a": 1}'
    assert strip_code_fence('```\n{"a": 1}```') == '{"a": 1}'


# --- build_llm -------------------------------------------------------------------------------


def test_no_provider_means_no_llm() -> None:
    assert build_llm(SimpleNamespace(llm_provider=None)) is None
    assert build_llm(SimpleNamespace()) is None
    assert build_llm(Settings()) is None  # the real settings: no provider by default


async def test_build_llm_openai_sends_the_secret_key(server: LLMServer) -> None:
    settings = SimpleNamespace(
        llm_provider="openai",
        llm_model="gpt-test",
        llm_base_url=server.url + "/v1",
        llm_api_key=SecretStr(KEY),
        llm_timeout_s=3,
        llm_attempts=4,
    )
    llm = build_llm(settings)
    assert isinstance(llm, OpenAIChat)
    assert (llm.model, llm.attempts) == ("gpt-test", 4)
    server.script(OPENAI.answer(GOOD_DEDUP))
    try:
        await llm.structured(DEDUP_DECISION, DedupDecision, **DEDUP_VARS)
    finally:
        await llm.aclose()
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_build_llm_anthropic_defaults_to_the_hosted_api() -> None:
    llm = build_llm(
        SimpleNamespace(llm_provider="anthropic", llm_model="claude-test", llm_api_key=KEY)
    )
    assert isinstance(llm, AnthropicMessages)
    assert str(llm._client.base_url) == "https://api.anthropic.com/"
    assert llm.attempts == 3
    await llm.aclose()


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        (SimpleNamespace(llm_provider="openai", llm_model=""), "MEMVAULT_LLM_MODEL"),
        (SimpleNamespace(llm_provider="openai", llm_model="m"), "MEMVAULT_LLM_API_KEY"),
        (SimpleNamespace(llm_provider="anthropic", llm_model="m"), "MEMVAULT_LLM_API_KEY"),
        (SimpleNamespace(llm_provider="gemini", llm_model="m"), "openai or anthropic"),
    ],
)
def test_build_llm_refuses_incomplete_settings(settings: Any, needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        build_llm(settings)


async def test_local_servers_need_no_key() -> None:
    llm = build_llm(
        SimpleNamespace(
            llm_provider="openai", llm_model="llama3", llm_base_url="http://localhost:11434/v1"
        )
    )
    assert isinstance(llm, OpenAIChat)
    await llm.aclose()
