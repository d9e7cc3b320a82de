"""Hostile input on the graph, cognitive and lifecycle routes: text PostgreSQL would refuse (NUL,
lone surrogates) never reaches it, numbers stay within what their columns and aggregates hold,
free text has a length limit, and a refusal never echoes the caller's keys or values."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory, InvalidInput
from memvault.api import create_app
from memvault.config import Settings
from tests.conftest import app_client, backend_of

HUGE = "x" * 600_000


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    settings = make_settings(embedding_provider="hash", audit_flush_ms=60_000)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def refusing(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """One app for the tests that only read or are refused: they share a store."""
    data = tmp_path_factory.mktemp("hostile") / "data"
    with app_client(
        module_database_url, data, embedding_provider="hash", audit_flush_ms=60_000
    ) as client:
        yield client


def _project_fact(api: TestClient, user_id: str) -> str:
    made = api.post(
        "/v1/facts",
        json={
            "subject": "@user",
            "predicate": "favourite_colour",
            "value": "teal",
            "user_id": user_id,
            "channel": "proj",
        },
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def _refused(response: Any, field: str) -> None:
    assert response.status_code == 422, response.text
    fields = [e["field"] for e in response.json()["error"]["details"]["errors"]]
    assert any(field in f for f in fields), fields


@pytest.mark.parametrize("reason", ["why\u0000not", "why\ud800not", "why\nnot"])
def test_a_promote_reason_postgresql_would_refuse_is_refused(api: TestClient, reason: str) -> None:
    fact_id = _project_fact(api, "nulpromo")
    body = json.dumps({"user_id": "nulpromo", "reason": reason})
    answer = api.post(
        f"/v1/facts/{fact_id}/promote",
        content=body,
        headers={"content-type": "application/json"},
    )
    _refused(answer, "reason")
    # Nothing promoted, and the audit log goes on for everyone.
    listed = api.get("/v1/facts", params={"user_id": "nulpromo"}).json()["results"]
    assert [f["channel"] for f in listed] == ["proj"]
    assert api.post("/v1/memories", json={"content": "kept", "user_id": "other"}).status_code == 201


async def test_the_library_refuses_such_a_reason_too(memory: AsyncMemory) -> None:
    fact = await memory.add_fact(
        "@user", "favourite_colour", value="teal", user_id="ann", channel="proj"
    )
    for reason in ("why\x00not", "why\ud800not"):
        with pytest.raises(InvalidInput):
            await memory.promote(fact.id, user_id="ann", reason=reason)


async def test_the_audit_writer_sets_aside_a_row_it_cannot_write_and_writes_the_rest(
    make_settings: Callable[..., Settings],
) -> None:
    """A row PostgreSQL refuses (whatever let it through) is repaired or set aside alone:
    another tenant's rows in the same batch are written."""
    from memvault.lifecycle.audit import AuditEvent
    from memvault.metrics import AUDIT_ROWS

    settings = make_settings(embedding_provider="hash", audit_flush_ms=60_000)
    async with await AsyncMemory.open(settings) as store:
        audit = backend_of(store).audit
        failed = AUDIT_ROWS.labels("failed")._value.get()
        audit.record(
            AuditEvent(
                tenant_id="mallory",
                operation="promote",
                actor="library",
                user_id="m\x00",
                promotion_rule="why\x00not \ud800",
                promotion_score=float("nan"),
                latency_ms=float("inf"),
                details={"note": "a\x00b", "bad": "\udfff", "n": float("inf")},
            )
        )
        set_aside = AUDIT_ROWS.labels("set_aside")._value.get()
        # Beyond repair: a count past its INTEGER column.
        audit.record(
            AuditEvent(tenant_id="mallory", operation="tier", actor="x", result_count=2**40)
        )
        victim = store.for_tenant("victim")
        for n in range(3):
            await victim.add(f"victim note {n}", user_id="v", infer=False)
        await store.flush_audit()
        stored = (await victim.audit_log(operation="store")).results
        assert len(stored) == 3
        (promoted,) = (await store.for_tenant("mallory").audit_log()).results
        assert promoted.promotion_rule is not None and "\x00" not in promoted.promotion_rule
        assert AUDIT_ROWS.labels("failed")._value.get() == failed
        assert AUDIT_ROWS.labels("set_aside")._value.get() == set_aside + 1
        # And the writer goes on: later rows are written too.
        await victim.add("victim note later", user_id="v", infer=False)
        await store.flush_audit()
        assert len((await victim.audit_log(operation="store")).results) == 4


def test_tool_latency_is_bounded_so_stats_always_answer(api: TestClient) -> None:
    use = {"tool_name": "search", "user_id": "lat", "success": True}
    for latency in (1e308, 1e20, -1):
        _refused(api.post("/v1/tools/invocations", json={**use, "latency_ms": latency}), "latency")
    for _ in range(2):
        made = api.post("/v1/tools/invocations", json={**use, "latency_ms": 2_592_000_000})
        assert made.status_code == 201, made.text
    stats = api.get("/v1/tools/stats", params={"user_id": "lat"})
    assert stats.status_code == 200, stats.text
    assert stats.json()["results"][0]["avg_latency_ms"] == 2_592_000_000


def test_titles_and_descriptions_have_a_limit(api: TestClient) -> None:
    owner = {"user_id": "big"}
    _refused(api.post("/v1/conversations", json={**owner, "title": HUGE}), "title")
    _refused(api.post("/v1/goals", json={**owner, "description": HUGE}), "description")
    strategy = {**owner, "description": HUGE, "tool_sequence": ["a"]}
    _refused(api.post("/v1/strategies", json=strategy), "description")
    _refused(
        api.post(
            "/v1/tools/invocations",
            json={**owner, "tool_name": "t", "success": True, "error": HUGE},
        ),
        "error",
    )
    # At the limit, accepted.
    assert api.post("/v1/conversations", json={**owner, "title": "t" * 500}).status_code == 201
    goal = api.post("/v1/goals", json={**owner, "description": "d" * 2_000})
    assert goal.status_code == 201, goal.text


@pytest.mark.parametrize(
    "body",
    [
        {"query": "q", "user_id": "u", "weights": {"SecretKeyText": 1}},
        {"query": "q", "user_id": "u", "weights": {"\u0000SecretKeyText": 1}},
        {"query": "q", "user_id": "u", "weights": {"facts": "SecretValueText"}},
        {"query": "q", "user_id": "u", "SecretKeyText": 1},
        {"query": "q", "user_id": "u", "time_window": {"SecretKeyText": "x"}},
    ],
)
def test_errors_name_the_schema_never_the_callers_keys_or_values(
    refusing: TestClient, body: dict[str, Any]
) -> None:
    answer = refusing.post("/v1/remember", json=body)
    assert answer.status_code == 422, answer.text
    assert "Secret" not in answer.text
    assert "\\u0000" not in answer.text
    fields = [e["field"] for e in answer.json()["error"]["details"]["errors"]]
    assert all(f.startswith("body") for f in fields), fields


def test_query_parameters_and_paths_are_not_echoed_either(refusing: TestClient) -> None:
    answer = refusing.get(
        "/v1/memories", params={"user_id": "u", "SecretKeyText": "1", "limit": "x"}
    )
    assert "Secret" not in answer.text
    for path in ("/v1/goals/SecretPathText", "/v1/entities/SecretPathText"):
        answered = refusing.get(path, params={"user_id": "u"})
        assert answered.status_code in (404, 422), answered.text
        assert "Secret" not in answered.text


def test_a_query_has_a_limit(refusing: TestClient) -> None:
    _refused(refusing.post("/v1/memories/search", json={"query": HUGE, "user_id": "q"}), "query")
    _refused(refusing.post("/v1/remember", json={"query": HUGE, "user_id": "q"}), "query")
    # MEMVAULT_MAX_QUERY_CHARS (2,000) holds; no setting lets one pass 32,000 characters.
    at_limit = {"query": "word " * 400, "user_id": "q"}
    for path in ("/v1/memories/search", "/v1/remember"):
        answer = refusing.post(path, json=at_limit)
        assert answer.status_code == 200, answer.text[:300]


async def test_the_audit_writer_keeps_rows_while_the_store_is_away(
    make_settings: Callable[..., Settings],
) -> None:
    """Set aside is for a row the store refuses; while it cannot be reached, rows wait."""
    from memvault.db.engine import create_engine
    from memvault.lifecycle.audit import AuditEvent
    from memvault.metrics import AUDIT_ROWS

    settings = make_settings(embedding_provider="hash", audit_flush_ms=60_000)
    async with await AsyncMemory.open(settings) as store:
        audit = backend_of(store).audit
        reachable = audit._engine
        audit._engine = create_engine("postgresql://nobody@127.0.0.1:1/none", pool_size=1)
        set_aside = AUDIT_ROWS.labels("set_aside")._value.get()
        try:
            audit.record(AuditEvent(tenant_id="t", operation="tier", actor="x", user_id="u"))
            assert await store.flush_audit() == 0
        finally:
            await audit._engine.dispose()
            audit._engine = reachable
        assert AUDIT_ROWS.labels("set_aside")._value.get() == set_aside
        assert await store.flush_audit() == 1
        assert len((await store.for_tenant("t").audit_log()).results) == 1
