"""Recall beyond one query: time-aware questions, reinforcement, conversational context, and
the LLM techniques (expansion, HyDE, self-query) against a scripted local LLM server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault import Settings
from memvault.api import create_app
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.llm_fakes import LLMServer, Reply, anthropic_tool_reply, llm_server, openai_reply

ASKED_AT = datetime(2023, 6, 14, 15, 0, tzinfo=UTC)  # a Wednesday
MEALS = [
    ("Dinner was a mushroom risotto at Luca's", datetime(2023, 5, 2, 19, tzinfo=UTC)),
    ("Dinner was ramen with Ana at the station", datetime(2023, 6, 7, 20, tzinfo=UTC)),
    ("Dinner was tacos from the food truck", datetime(2023, 4, 18, 19, tzinfo=UTC)),
]


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="local"))
    yield opened
    await opened.close()


async def store_meals(memory: AsyncMemory) -> dict[str, Any]:
    stored = await memory.add_many(
        [{"content": text, "user_id": "u", "occurred_at": at, "infer": False} for text, at in MEALS]
    )
    return {r.content: r.id for r in stored}


# --- time-aware queries -----------------------------------------------------------------------


async def test_a_named_time_boosts_memories_from_then(memory: AsyncMemory) -> None:
    ids = await store_meals(memory)
    question = "what did I have for dinner last week?"
    result = await memory.search(question, user_id="u", reference_time=ASKED_AT)
    assert result.results[0].id == ids[MEALS[1][0]]
    assert result.results[0].scores["time"] == 1.0
    assert {h.scores["time"] for h in result.results[1:]} == {0.0}
    time = result.diagnostics and result.diagnostics.time
    assert time and time.expression == "last week" and time.mode == "boost"
    assert (time.after, time.before) == (
        datetime(2023, 6, 5, tzinfo=UTC),
        datetime(2023, 6, 12, tzinfo=UTC),
    )
    # Boosting never hides the rest: the other dinners are still there, below.
    assert len(result.results) == 3

    # A month ago is May: the risotto wins instead.
    may = await memory.search("dinner in May", user_id="u", reference_time=ASKED_AT)
    assert may.results[0].id == ids[MEALS[0][0]]


async def test_filter_mode_keeps_only_that_time_and_off_ignores_it(memory: AsyncMemory) -> None:
    ids = await store_meals(memory)
    question = "what did I have for dinner last week?"
    only = await memory.search(question, user_id="u", reference_time=ASKED_AT, time_mode="filter")
    assert [h.id for h in only.results] == [ids[MEALS[1][0]]]
    assert only.diagnostics and only.diagnostics.time and only.diagnostics.time.mode == "filter"

    # An explicit range narrows further: nothing is both last week and in April.
    none = await memory.search(
        question,
        user_id="u",
        reference_time=ASKED_AT,
        time_mode="filter",
        occurred_before=datetime(2023, 5, 1, tzinfo=UTC),
    )
    assert none.results == []

    ignored = await memory.search(question, user_id="u", reference_time=ASKED_AT, time_mode="off")
    assert ignored.diagnostics and ignored.diagnostics.time is None
    assert {h.scores["time"] for h in ignored.results} == {0.0}


async def test_without_a_reference_time_now_is_used(memory: AsyncMemory) -> None:
    await store_meals(memory)
    result = await memory.search("dinner yesterday", user_id="u")
    time = result.diagnostics and result.diagnostics.time
    assert time and time.after and time.after.date() < datetime.now(UTC).date()
    # None of the 2023 dinners was yesterday: relevance alone orders them.
    assert {h.scores["time"] for h in result.results} == {0.0}


async def test_recency_counts_from_when_the_question_is_asked(memory: AsyncMemory) -> None:
    """Asked at a date, a memory from two weeks before is newer than one from four months
    before, however long ago both are by the wall clock (as a tie-breaker, not more)."""
    old, new = await memory.add_many(
        [
            {
                "content": "I keep my old sneakers in a shoe box under my bed",
                "user_id": "u",
                "occurred_at": datetime(2023, 2, 10, tzinfo=UTC),
                "infer": False,
            },
            {
                "content": "I moved the old sneakers to the shoe rack in my closet",
                "user_id": "u",
                "occurred_at": datetime(2023, 6, 1, tzinfo=UTC),
                "infer": False,
            },
        ]
    )
    found = await memory.search("my old sneakers", user_id="u", reference_time=ASKED_AT)
    recency = {h.id: h.scores["recency"] for h in found.results}
    assert recency[new.id] > 0.95 > 0.85 > recency[old.id] > 0.7
    gap = {h.id: h.score - h.scores["relevance"] for h in found.results}
    assert 0.002 < gap[new.id] - gap[old.id] < 0.01


async def test_the_memory_of_a_replaced_fact_ranks_below_the_one_that_replaced_it(
    memory: AsyncMemory,
) -> None:
    """Both said on one day, so recency cannot tell them apart: the graph's supersession does.
    The older statement matches the question's words better, and still comes second."""
    said = datetime(2023, 6, 1, tzinfo=UTC)
    old = await memory.add("Caroline lives in Paris.", user_id="u", occurred_at=said, wait=True)
    new = await memory.add("Caroline moved to Berlin.", user_id="u", occurred_at=said, wait=True)
    (fact,) = await memory.facts(user_id="u", entity="Caroline")
    assert fact.object == "Berlin"  # the Paris fact is superseded, not gone

    question = "where does Caroline live now?"
    asked = await memory.search(question, user_id="u", reference_time=ASKED_AT)
    assert [h.id for h in asked.results] == [new.id, old.id]
    # Asked about no time in particular, what she said first still ranks on its words.
    timeless = await memory.search("where does Caroline live?", user_id="u")
    assert timeless.results[0].id == old.id


# --- reinforcement ------------------------------------------------------------------------------


async def test_searches_count_accesses_in_the_background(memory: AsyncMemory) -> None:
    ids = await store_meals(memory)
    ramen = ids[MEALS[1][0]]
    first = await memory.search("ramen", user_id="u", limit=1, reference_time=ASKED_AT)
    assert first.results[0].id == ramen and first.results[0].scores["reinforcement"] == 0.0
    # The search returned before any count was written.
    assert (await memory.get(ramen, user_id="u")).access_count == 0
    await memory.search("ramen", user_id="u", limit=1)
    await memory.search("ramen", user_id="u", limit=1, track_access=False)
    await backend_of(memory).access.flush()
    stored = await memory.get(ramen, user_id="u")
    assert stored.access_count == 2 and stored.last_accessed is not None
    untouched = await memory.get(ids[MEALS[2][0]], user_id="u")
    assert untouched.access_count == 0 and untouched.last_accessed is None

    # Being returned is not being used: the counts move no later ranking.
    again = await memory.search("ramen", user_id="u", limit=1, reference_time=ASKED_AT)
    assert again.results[0].scores["reinforcement"] == 0.0
    assert again.results[0].score == first.results[0].score


async def test_reading_never_moves_what_a_later_unrelated_search_ranks(
    memory: AsyncMemory,
) -> None:
    await store_meals(memory)
    before = await memory.search(
        "what did I eat for dinner?", user_id="u", track_access=False, reference_time=ASKED_AT
    )
    for _ in range(5):
        await memory.search("tacos", user_id="u")
        await memory.remember("tacos from the food truck", user_id="u")
    await backend_of(memory).access.flush()
    after = await memory.search(
        "what did I eat for dinner?", user_id="u", track_access=False, reference_time=ASKED_AT
    )
    assert [(h.id, h.score) for h in after.results] == [(h.id, h.score) for h in before.results]


async def test_feedback_reinforces_what_helped_and_only_the_users_own(
    make_settings: Callable[..., Settings],
) -> None:
    # Updates first would place each earlier dinner under a later one, each hit's score then
    # that of its place: held out here, the score shows what reinforcement alone adds.
    memory = await AsyncMemory.open(
        make_settings(embedding_provider="local", search_updates_first=False)
    )
    try:
        await _feedback_reinforces(memory)
    finally:
        await memory.close()


async def _feedback_reinforces(memory: AsyncMemory) -> None:
    ids = await store_meals(memory)
    risotto, tacos = ids[MEALS[0][0]], ids[MEALS[2][0]]
    before = await memory.search("dinner", user_id="u", track_access=False, reference_time=ASKED_AT)
    scores = {h.id: h.score for h in before.results}

    assert await memory.feedback([tacos, tacos, str(tacos)], user_id="u") == 1
    assert await memory.memories.feedback([tacos], user_id="u") == 1
    assert await memory.feedback([risotto], user_id="someone-else") == 0
    assert await memory.for_tenant("other").feedback([risotto], user_id="u") == 0

    after = await memory.search("dinner", user_id="u", track_access=False, reference_time=ASKED_AT)
    lifted = {h.id: h for h in after.results}
    assert lifted[tacos].scores["reinforcement"] > 0
    assert lifted[tacos].score > scores[tacos]
    assert lifted[risotto].score == scores[risotto]
    assert lifted[tacos].access_count == 0  # feedback is not an access


async def test_feedback_moves_with_the_memory_through_export_and_import(
    memory: AsyncMemory,
) -> None:
    ids = await store_meals(memory)
    tacos = ids[MEALS[2][0]]
    await memory.feedback([tacos], user_id="u")
    lines = await memory.export_memories(user_id="u")
    await memory.erase_user(user_id="u")
    await memory.import_memories(lines)
    found = await memory.search("tacos", user_id="u", limit=1, track_access=False)
    assert found.results[0].id == tacos and found.results[0].scores["reinforcement"] > 0


async def test_feedback_over_http_and_its_input_checked(
    make_settings: Callable[..., Settings],
) -> None:
    with TestClient(create_app(make_settings(embedding_provider="hash"))) as client:
        made = client.post("/v1/memories", json={"user_id": "u", "content": "Likes figs"})
        memory_id = made.json()["id"]
        body = {"user_id": "u", "memory_ids": [memory_id]}
        assert client.post("/v1/memories/feedback", json=body).json() == {"reinforced": 1}
        for bad in ({"user_id": "u", "memory_ids": []}, {"user_id": "u", "memory_ids": ["x"]}):
            refused = client.post("/v1/memories/feedback", json=bad)
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_input"


async def test_access_counts_are_written_on_close(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(embedding_provider="local", reinforce_flush_s=3600)
    memory = await AsyncMemory.open(settings)
    stored = await memory.add("I water the ferns on Sundays", user_id="u", infer=False)
    await memory.search("ferns", user_id="u")
    await memory.close()
    reopened = await AsyncMemory.open(settings)
    try:
        assert (await reopened.get(stored.id, user_id="u")).access_count == 1
    finally:
        await reopened.close()


# --- conversational context -----------------------------------------------------------------


async def test_context_window_returns_neighbouring_turns_of_the_same_session(
    memory: AsyncMemory,
) -> None:
    talk = [
        {"role": "user", "content": "I'm planning the garden for spring"},
        {"role": "assistant", "content": "What would you like to grow?"},
        {"role": "user", "content": "Mostly heirloom tomatoes and some basil"},
        {"role": "assistant", "content": "Those pair well in a sunny bed"},
        {"role": "user", "content": "Let's talk about my tax return now"},
    ]
    await memory.add_messages(talk, user_id="u", session_id="s1")
    await memory.add_messages(talk[:3], user_id="u", session_id="s2")
    await memory.add_messages(talk, user_id="someone-else", session_id="s1")

    result = await memory.search(
        "heirloom tomatoes", user_id="u", limit=1, context_window=1, track_access=False
    )
    (hit,) = result.results
    assert hit.content == talk[2]["content"] and hit.context is not None
    session = hit.metadata["session_id"]
    assert [c.content for c in hit.context] == [talk[1]["content"]] + (
        [talk[3]["content"]] if session == "s1" else []
    )
    assert {(c.user_id, c.metadata["session_id"]) for c in hit.context} == {("u", session)}
    assert result.diagnostics and "context" in result.diagnostics.timings_ms

    wider = await memory.search("heirloom tomatoes", user_id="u", limit=1, context_window=2)
    assert len(wider.results[0].context or []) == (4 if session == "s1" else 2)
    plain = await memory.search("heirloom tomatoes", user_id="u", limit=1)
    assert plain.results[0].context is None


async def test_a_memory_outside_a_conversation_gets_an_empty_context(memory: AsyncMemory) -> None:
    await memory.add("The boiler is serviced every October", user_id="u", infer=False)
    result = await memory.search("boiler", user_id="u", context_window=3)
    assert result.results[0].context is None


async def test_messages_added_in_parts_continue_the_turn_numbers(memory: AsyncMemory) -> None:
    await memory.add_messages([{"role": "user", "content": "first"}], user_id="u", session_id="s")
    later = await memory.add_messages(
        [{"role": "assistant", "content": "second"}], user_id="u", session_id="s", first_turn=1
    )
    assert later[0].metadata["turn"] == 1


# --- LLM recall techniques ------------------------------------------------------------------


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as running:
        yield running


def answer(provider: str, prompt: str, payload: dict[str, Any]) -> Reply:
    reply = (
        openai_reply(json.dumps(payload))
        if provider == "openai"
        else anthropic_tool_reply(payload, name=prompt)
    )
    return reply.to(f'"{prompt}"')


@pytest.fixture
async def llm_memory(
    make_settings: Callable[..., Settings], server: LLMServer, provider: str
) -> AsyncIterator[AsyncMemory]:
    settings = make_settings(
        embedding_provider="local",
        llm_provider=provider,
        llm_model="test-model",
        llm_base_url=server.url + ("/v1" if provider == "openai" else ""),
        llm_api_key="sk-test-key",
        llm_attempts=1,
        llm_retry_base_s=0.01,
        recall_llm_timeout_s=1.0,
    )
    opened = await AsyncMemory.open(settings)
    yield opened
    await opened.close()


async def store_facts(memory: AsyncMemory) -> dict[str, Any]:
    facts = [
        {"content": "Ana works as a nurse at St Mary's hospital", "categories": []},
        {"content": "Ana's cat is called Miso", "categories": []},
        {"content": "Ana flew to Lisbon for a conference", "categories": []},
    ]
    stored = await memory.add_many(
        [
            {
                "content": f["content"],
                "user_id": "u",
                "infer": False,
                "occurred_at": datetime(2023, 3 + n, 10, tzinfo=UTC),
            }
            for n, f in enumerate(facts)
        ]
    )
    return {r.content: r.id for r in stored}


async def test_expansion_hyde_and_self_query_fuse_with_the_base_search(
    llm_memory: AsyncMemory, server: LLMServer, provider: str
) -> None:
    ids = await store_facts(llm_memory)
    server.script(
        answer(provider, "recall_expand", {"statements": ["Ana works at", "Ana's job is"]}),
        answer(provider, "recall_hyde", {"answer": "Ana is a nurse in a hospital."}),
        answer(
            provider,
            "recall_self_query",
            {
                "occurred_after": "2023-03-01T00:00:00Z",
                "occurred_before": "2023-04-01T00:00:00Z",
                "categories": [],
                "memory_type": None,
                "query": "Ana's occupation",
            },
        ),
    )
    question = "What does Ana do for a living?"
    result = await llm_memory.search(
        question, user_id="u", expand=True, hyde=True, self_query=True, reference_time=ASKED_AT
    )
    assert result.results[0].id == ids["Ana works as a nurse at St Mary's hospital"]
    diagnostics = result.diagnostics
    assert diagnostics is not None
    reports = diagnostics.techniques
    assert {n: r.status for n, r in reports.items()} == {
        "expansion": "ok",
        "hyde": "ok",
        "self_query": "ok",
    }
    assert reports["expansion"].added == 2 and reports["hyde"].added == 1
    assert reports["self_query"].added == 2  # occurred_after and occurred_before
    for name in ("expansion", "hyde", "self_query", "embed", "retrieve", "total"):
        assert diagnostics.timings_ms[name] >= 0
    # The self-query's span became the time boost, since the question named none.
    assert diagnostics.time and diagnostics.time.source == "llm"
    assert server.calls == 3
    sent = json.dumps([r.body for r in server.requests])
    assert question in sent


async def test_techniques_stay_off_unless_asked(llm_memory: AsyncMemory, server: LLMServer) -> None:
    await store_facts(llm_memory)
    result = await llm_memory.search("What does Ana do?", user_id="u")
    assert server.calls == 0
    assert result.diagnostics and result.diagnostics.techniques == {}


async def test_a_failing_llm_still_answers_and_says_why(
    llm_memory: AsyncMemory, server: LLMServer, provider: str
) -> None:
    ids = await store_facts(llm_memory)
    on_time = answer(provider, "recall_self_query", {"query": "x"})
    slow = Reply(on_time.status, on_time.body, delay_s=3.0, when=on_time.when)
    server.script(
        Reply(status=500, body={"error": {"message": "boom"}}).to('"recall_expand"'),
        (openai_reply("{not json") if provider == "openai" else anthropic_tool_reply({})).to(
            '"recall_hyde"'
        ),
        (openai_reply("{not json") if provider == "openai" else anthropic_tool_reply({})).to(
            '"recall_hyde"'
        ),
        slow,
    )
    result = await llm_memory.search(
        "Ana's cat", user_id="u", expand=True, hyde=True, self_query=True
    )
    assert result.results[0].id == ids["Ana's cat is called Miso"]
    reports = result.diagnostics.techniques if result.diagnostics else {}
    assert {n: (r.status, r.detail) for n, r in reports.items()} == {
        "expansion": ("failed", "llm_unavailable"),
        "hyde": ("failed", "llm_invalid_answer"),
        "self_query": ("failed", "timeout"),
    }
    assert reports["self_query"].ms < 2500


async def test_without_an_llm_the_techniques_report_unavailable(memory: AsyncMemory) -> None:
    await memory.add("Ana's cat is called Miso", user_id="u", infer=False)
    result = await memory.search("Ana's cat", user_id="u", expand=True, hyde=True)
    assert result.results[0].content == "Ana's cat is called Miso"
    reports = result.diagnostics.techniques if result.diagnostics else {}
    assert {n: r.status for n, r in reports.items()} == {
        "expansion": "unavailable",
        "hyde": "unavailable",
    }


async def test_pii_in_a_question_never_reaches_the_llm(
    llm_memory: AsyncMemory, server: LLMServer, provider: str
) -> None:
    await store_facts(llm_memory)
    server.script(answer(provider, "recall_hyde", {"answer": "Ana's email is on file."}))
    await llm_memory.search("what is ana.lopez@example.com's job", user_id="u", hyde=True)
    assert server.calls == 1
    assert "ana.lopez@example.com" not in json.dumps(server.requests[0].body)


# --- over HTTP ----------------------------------------------------------------------------------


def test_search_options_over_http(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        stored = client.post(
            "/v1/memories",
            json={
                "content": "Dinner was ramen with Ana",
                "user_id": "u",
                "occurred_at": "2023-06-07T20:00:00Z",
                "infer": False,
            },
        )
        assert stored.status_code == 201
        found = client.post(
            "/v1/memories/search",
            json={
                "query": "dinner last week",
                "user_id": "u",
                "reference_time": "2023-06-14T15:00:00Z",
                "time_mode": "filter",
                "context_window": 1,
            },
        )
        assert found.status_code == 200
        body = found.json()
        assert [h["content"] for h in body["results"]] == ["Dinner was ramen with Ana"]
        assert body["diagnostics"]["time"]["expression"] == "last week"
        assert body["results"][0]["context"] is None
        bad = client.post(
            "/v1/memories/search",
            json={"query": "x", "user_id": "u", "context_window": 99, "time_mode": "maybe"},
        )
        assert bad.status_code == 422
        fields = {e["field"] for e in bad.json()["error"]["details"]["errors"]}
        assert {"body.context_window", "body.time_mode"} <= fields


# --- filters, alone and combined --------------------------------------------------------------

T0 = datetime(2023, 1, 1, tzinfo=UTC)
NOTES = [
    ("work", "apollo", "prod", "slack", "chat", ["todo"], {"team": "a"}, 1,
     (["work"], 8, "persistent", "hot", 1)),
    ("work", "apollo", "dev", "email", "import", ["todo", "urgent"], {"team": "b"}, 2,
     (["work", "travel"], 3, "temporal", "warm", 2)),
    ("work", "zeus", "prod", "_global", None, [], {"team": "a", "x": 1}, 3,
     (["health"], 6, "persistent", "cold", 3)),
    ("home", None, None, "_global", "chat", ["urgent"], {}, 4,
     (["travel"], 9, "temporal", "hot", 4)),
    ("home", None, None, "slack", None, ["todo"], {"team": "a"}, 5,
     (["food"], 1, "persistent", "hot", 5)),
]  # fmt: skip


@pytest.fixture
async def notes(memory: AsyncMemory, raw: Any) -> list[Any]:
    stored = []
    for n, (app, project, env, channel, source, tags, meta, month, extra) in enumerate(NOTES):
        record = await memory.add(
            f"garden note number {n}",
            user_id="u",
            app_id=app,
            project_id=project,
            environment=env,
            channel=channel,
            source=source,
            tags=tags,
            metadata=meta,
            occurred_at=T0.replace(month=month),
            infer=False,
        )
        categories, importance, memory_type, tier, created = extra
        raw.execute(
            "UPDATE memories SET categories = %s, importance = %s, memory_type = %s, tier = %s, "
            "created_at = %s WHERE id = %s",
            (categories, importance, memory_type, tier, T0.replace(month=created), record.id),
        )
        stored.append(record.id)
    expired = await memory.add("garden note that expired", user_id="u", infer=False)
    raw.execute(
        "UPDATE memories SET expires_at = now() - interval '1 minute' WHERE id = %s",
        (expired.id,),
    )
    await memory.add("garden note of another user", user_id="someone-else", infer=False)
    return stored


FILTER_CASES: list[tuple[dict[str, Any], set[int]]] = [
    ({}, {0, 1, 2, 3, 4}),
    ({"app_id": "home"}, {3, 4}),
    ({"project_id": "apollo"}, {0, 1}),
    ({"environment": "prod"}, {0, 2}),
    ({"channel": "slack"}, {0, 4}),
    ({"source": "chat"}, {0, 3}),
    ({"tags": ["todo", "urgent"]}, {1}),
    ({"tags_any": ["urgent"]}, {1, 3}),
    ({"categories": ["travel"]}, {1, 3}),
    ({"memory_type": "temporal"}, {1, 3}),
    ({"tier": "hot"}, {0, 3, 4}),
    ({"min_importance": 6}, {0, 2, 3}),
    ({"occurred_after": T0.replace(month=2), "occurred_before": T0.replace(month=4)}, {1, 2}),
    ({"created_after": T0.replace(month=4)}, {3, 4}),
    ({"created_before": T0.replace(month=2)}, {0}),
    ({"metadata": {"team": "a"}}, {0, 2, 4}),
    # combined
    ({"app_id": "work", "tags_any": ["todo"], "min_importance": 5}, {0}),
    ({"metadata": {"team": "a"}, "tier": "hot", "channel": "slack"}, {0, 4}),
    ({"categories": ["travel", "food"], "memory_type": "persistent"}, {4}),
    ({"project_id": "zeus", "environment": "dev"}, set()),
]


@pytest.mark.parametrize("recipe", ["keyword", "hybrid"])
async def test_every_filter_alone_and_combined(
    memory: AsyncMemory, notes: list[Any], recipe: str
) -> None:
    for filters, expected in FILTER_CASES:
        found = await memory.search(
            "garden note", user_id="u", recipe=recipe, limit=50, track_access=False, **filters
        )
        assert {h.id for h in found.results} == {notes[i] for i in expected}, filters
        listed = await memory.list(user_id="u", limit=50, **filters)
        assert {r.id for r in listed.results} == {notes[i] for i in expected}, filters
