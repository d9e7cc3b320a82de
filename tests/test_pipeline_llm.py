"""Dedup and enrichment decided by an LLM — OpenAI and Anthropic APIs, served for real by a
local scripted server — and the offline fallback when it misbehaves."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from memvault import Settings
from memvault.service import AsyncMemory
from tests.llm_fakes import LLMServer, Reply, anthropic_tool_reply, llm_server, openai_reply

ENRICHED = {
    "importance": 8,
    "memory_type": "persistent",
    "valid_until": None,
    "categories": ["Food Preferences"],
}
MERGED = {
    "action": "merge",
    "merged_text": "Mia likes green tea, especially in the morning",
    "reason": "same preference, more detail",
}


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as running:
        yield running


def answer(provider: str, payload: dict[str, Any]) -> Reply:
    if provider == "openai":
        return openai_reply(json.dumps(payload))
    return anthropic_tool_reply(payload)


def malformed(provider: str) -> Reply:
    return (
        openai_reply("{not json")
        if provider == "openai"
        else anthropic_tool_reply({"importance": "very"})
    )


@pytest.fixture
def llm_settings(
    make_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "embedding_provider": "local",
            "llm_provider": provider,
            "llm_model": "test-model",
            "llm_base_url": server.url + ("/v1" if provider == "openai" else ""),
            "llm_api_key": "sk-test-key",
            "llm_attempts": 1,
            "llm_retry_base_s": 0.01,
        }
        values.update(overrides)
        return make_settings(**values)

    return build


async def test_the_llm_merges_and_enriches(
    llm_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> None:
    memory = await AsyncMemory.open(llm_settings())
    server.script(answer(provider, ENRICHED))
    first = await memory.add("Mia likes green tea", user_id="mia")
    assert first.sources == dict.fromkeys(("importance", "memory_type", "categories"), "llm")
    assert first.occurred_at == first.created_at  # no date in the text, none read
    assert first.importance == 8 and first.categories == ["food_preference"]

    server.script(answer(provider, MERGED), answer(provider, ENRICHED))
    second = await memory.add("Mia likes green tea in the morning", user_id="mia")
    assert second.dedup.action == "merge" and second.dedup.decided_by == "llm"
    assert second.id == first.id and second.content == MERGED["merged_text"]
    history = await memory.history(first.id, user_id="mia")
    assert [h.action for h in history] == ["ADD", "UPDATE"]
    # enrich + graph extraction for each add, and the merge decision in between.
    assert server.calls == 5
    await memory.close()


async def test_the_llms_event_date_becomes_occurred_at_unless_one_was_given(
    llm_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> None:
    memory = await AsyncMemory.open(llm_settings())
    dated = {**ENRICHED, "event_at": "2023-06-13T09:00:00"}  # no offset: read as UTC
    server.script(answer(provider, dated))
    read = await memory.add("Yesterday Pia got her driving licence", user_id="pia")
    assert read.sources["occurred_at"] == "llm"
    assert read.occurred_at == datetime(2023, 6, 13, 9, tzinfo=UTC)
    server.script(answer(provider, dated))
    given = datetime(2024, 1, 5, tzinfo=UTC)
    kept = await memory.add("Yesterday Pia sold her bike", user_id="pia", occurred_at=given)
    assert kept.sources["occurred_at"] == "given" and kept.occurred_at == given
    await memory.close()


async def test_a_confused_llm_falls_back_to_the_rules(
    llm_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> None:
    memory = await AsyncMemory.open(llm_settings())
    server.script(malformed(provider), malformed(provider))
    first = await memory.add("Noah has 2 dogs", user_id="noah")
    assert first.sources["importance"] == "rules" and first.importance is not None
    server.script(*(malformed(provider) for _ in range(4)))
    second = await memory.add("Noah has 3 dogs", user_id="noah")
    assert second.dedup.action == "replace" and second.dedup.decided_by == "rules"
    assert second.content == "Noah has 3 dogs" and second.sources["categories"] == "rules"
    await memory.close()


async def test_a_silent_llm_times_out_and_nothing_is_lost(
    llm_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> None:
    memory = await AsyncMemory.open(llm_settings(llm_timeout_s=0.2))
    server.script(Reply(body={}, delay_s=1.0), Reply(body={}, delay_s=1.0))
    result = await memory.add("Olga speaks Finnish", user_id="olga")
    assert result.dedup.action == "stored_new" and result.sources["importance"] == "rules"
    assert (await memory.get(result.id, user_id="olga")).content == "Olga speaks Finnish"
    await memory.close()


async def test_no_pii_reaches_the_llm(
    llm_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> None:
    memory = await AsyncMemory.open(llm_settings())
    server.script(answer(provider, ENRICHED))
    await memory.add("Pavel's email is pavel.k@example.net and he likes chess", user_id="p")
    sent = json.dumps([r.body for r in server.requests])
    # Enrichment and graph extraction: neither sees the address.
    assert server.calls == 2 and "pavel.k@example.net" not in sent
    assert "[REDACTED:email]" in sent
    await memory.close()
