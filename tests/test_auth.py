"""The production API: API keys and scopes, tenant isolation through every route, rate limits,
error hygiene, request ids, CORS, metrics and readiness."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Settings, auth
from memvault.api import create_app
from memvault.service import AsyncMemory
from tests.conftest import REDIS_URL, backend_of
from tests.routes import v1_routes
from tests.waiting import wait_until

MEMORY_ID = str(uuid.uuid4())
# Every /v1 route with its documented example: a request that is valid given a good key.
ROUTES = v1_routes()


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(auth="required", embedding_provider="hash"))) as c:
        yield c


def new_key(client: TestClient, tenant: str, scopes: str = "read,write") -> str:
    engine = backend_of(client.app.state.memory).engine  # type: ignore[attr-defined]
    created = client.portal.call(auth.create_key, engine, tenant, scopes, None)  # type: ignore[union-attr]
    return created.key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def call(client: TestClient, method: str, path: str, key: str | None, **kw: Any) -> Any:
    headers = bearer(key) if key else {}
    return client.request(method, path, headers=headers, **kw)


def test_the_route_table_is_complete(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    served = {
        (method.upper(), path)
        for path, methods in paths.items()
        if path.startswith("/v1")
        for method in methods
    }
    assert served == {route.template for route in ROUTES}


def test_every_route_refuses_a_missing_malformed_unknown_or_revoked_key(api: TestClient) -> None:
    good = new_key(api, "acme", "read,write,admin")
    revoked = new_key(api, "acme", "read,write,admin")
    engine = backend_of(api.app.state.memory).engine  # type: ignore[attr-defined]
    api.portal.call(auth.revoke_key, engine, revoked)  # type: ignore[union-attr]
    prefix = good.split("_")[1]
    wrong_secret = f"mv_{prefix}_{'A' * 43}"
    bad_headers: list[dict[str, str]] = [
        {},
        {"Authorization": good},  # no scheme
        {"Authorization": f"Basic {good}"},
        {"Authorization": "Bearer not-a-key"},
        bearer(wrong_secret),
        bearer(revoked),
        bearer(f"mv_{'0' * 12}_{'A' * 43}"),
    ]

    async def ask_each() -> None:
        # The same app, its lifespan begun by the TestClient, asked from inside its own event
        # loop: a TestClient request hops between threads eight times, half the time of each
        # of these 576 requests (the test took 3.4 s before, 2.0 s after).
        transport = httpx.ASGITransport(api.app)  # raises what the app raises, as `api` does
        async with httpx.AsyncClient(transport=transport, base_url=str(api.base_url)) as client:
            for route in ROUTES:
                method, path, kw = route.method, route.path, route.request
                for headers in bad_headers:
                    response = await client.request(method, path, headers=headers, **kw)
                    assert response.status_code == 401, (method, path, headers)
                    assert response.headers["www-authenticate"] == "Bearer"
                    body = response.json()["error"]
                    assert body["code"] == "unauthorized"
                    assert prefix not in json.dumps(body) and "revoked" not in body["message"]
                answer = await client.request(method, path, headers=bearer(good), **kw)
                assert answer.status_code not in (401, 403)

    assert api.portal is not None
    api.portal.call(ask_each)


def test_scopes_gate_writes_and_admin_routes(api: TestClient) -> None:
    reader = new_key(api, "acme", "read")
    writer = new_key(api, "acme", "read,write")
    for route in ROUTES:
        method, path, kw = route.method, route.path, route.request
        status = call(api, method, path, reader, **kw).status_code
        if route.writes or route.admin:
            assert status == 403, (method, path)
        else:
            assert status in (200, 404), (method, path, status)
        status = call(api, method, path, writer, **kw).status_code
        assert (status == 403) == route.admin, (method, path, status)
    refused = call(api, "POST", "/v1/memories", reader, json={"content": "x", "user_id": "u"})
    assert refused.json()["error"] == {
        "code": "forbidden",
        "message": "This API key lacks the 'write' scope.",
        "details": {"required_scope": "write"},
    }


def test_revocation_takes_effect_at_once(api: TestClient) -> None:
    key = new_key(api, "acme")
    assert call(api, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code == 200
    engine = backend_of(api.app.state.memory).engine  # type: ignore[attr-defined]
    api.portal.call(auth.revoke_key, engine, key.split("_")[1])  # type: ignore[union-attr]
    assert call(api, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code == 401


def test_the_key_decides_the_tenant(api: TestClient) -> None:
    acme, globex = new_key(api, "acme"), new_key(api, "globex")
    body = {"content": "acme's launch is on Friday", "user_id": "u", "infer": False}
    created = call(api, "POST", "/v1/memories", acme, json=body).json()
    path = f"/v1/memories/{created['id']}"
    for method, kw in (
        ("GET", {}),
        ("PATCH", {"json": {"content": "globex was here"}}),
        ("DELETE", {}),
    ):
        theirs = call(api, method, path, globex, params={"user_id": "u"}, **kw)
        assert theirs.status_code == 404  # not 403: existence is not confirmed
    assert call(api, "GET", f"{path}/history", globex, params={"user_id": "u"}).status_code == 404
    found = call(
        api, "POST", "/v1/memories/search", globex, json={"query": "launch", "user_id": "u"}
    )
    assert found.json()["results"] == []
    assert call(api, "GET", "/v1/memories", globex, params={"user_id": "u"}).json()["results"] == []
    wiped = call(api, "DELETE", "/v1/memories", globex, params={"user_id": "u"})
    assert wiped.json() == {"deleted": 0}
    mine = call(api, "GET", path, acme, params={"user_id": "u"})
    assert mine.json()["content"] == body["content"]


def test_a_count_sees_only_the_keys_tenant_and_refuses_what_it_does_not_take(
    api: TestClient,
) -> None:
    acme, globex = new_key(api, "acme"), new_key(api, "globex")
    for text in ("acme plans a launch", "acme hires"):
        body = {"content": text, "user_id": "u", "metadata": {"team": "a"}, "infer": False}
        assert call(api, "POST", "/v1/memories", acme, json=body).status_code == 201
    count = "/v1/memories/count"
    assert call(api, "GET", count, acme, params={"user_id": "u"}).json() == {"count": 2}
    assert call(api, "GET", count, globex, params={"user_id": "u"}).json() == {"count": 0}
    by_meta = call(api, "GET", count, acme, params={"user_id": "u", "metadata": '{"team":"a"}'})
    assert by_meta.json() == {"count": 2}
    for params in ({"user_id": "u", "limit": 5}, {"user_id": "u", "metadata": "[1]"}, {}):
        refused = call(api, "GET", count, acme, params=params)
        assert refused.status_code == 422, params
        assert refused.json()["error"]["code"] == "invalid_input"


operations = st.lists(
    st.tuples(
        st.sampled_from(["acme", "globex"]),
        st.sampled_from(["add", "get", "update", "delete", "search", "list", "history", "wipe"]),
        st.sampled_from(["alice", "bob"]),
        st.integers(min_value=0, max_value=5),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=operations)
def test_random_operations_never_cross_tenants(
    api: TestClient, ops: list[tuple[str, str, str, int]]
) -> None:
    run = uuid.uuid4().hex[:8]
    keys = {t: new_key(api, f"{t}-{run}") for t in ("acme", "globex")}
    # What each tenant should hold: (user, id) -> content.
    model: dict[str, dict[str, str]] = {"acme": {}, "globex": {}}
    owners: dict[str, tuple[str, str]] = {}  # id -> (tenant, user)
    for n, (tenant, op, user, pick) in enumerate(ops):
        key, ids = keys[tenant], sorted(owners)
        target = ids[pick % len(ids)] if ids else MEMORY_ID
        mine = owners.get(target) == (tenant, user)
        params = {"user_id": user}
        if op == "add":
            text = f"{tenant} {user} note {n} {run}"
            r = call(
                api, "POST", "/v1/memories", key, json={"content": text, **params, "infer": False}
            )
            assert r.status_code == 201
            owners[r.json()["id"]] = (tenant, user)
            model[tenant][r.json()["id"]] = text
        elif op in ("get", "history"):
            path = f"/v1/memories/{target}" + ("/history" if op == "history" else "")
            assert call(api, "GET", path, key, params=params).status_code == (200 if mine else 404)
        elif op == "update":
            text = f"{tenant} {user} edited {n} {run}"
            r = call(
                api, "PATCH", f"/v1/memories/{target}", key, params=params, json={"content": text}
            )
            assert r.status_code == (200 if mine else 404)
            if mine:
                model[tenant][target] = text
        elif op == "delete":
            r = call(api, "DELETE", f"/v1/memories/{target}", key, params=params)
            assert r.status_code == (204 if mine else 404)
            if mine:
                del owners[target], model[tenant][target]
        elif op == "wipe":
            r = call(api, "DELETE", "/v1/memories", key, params=params)
            gone = [i for i, o in owners.items() if o == (tenant, user)]
            assert r.json() == {"deleted": len(gone)}
            for i in gone:
                del owners[i], model[tenant][i]
        else:
            if op == "search":
                r = call(
                    api,
                    "POST",
                    "/v1/memories/search",
                    key,
                    json={"query": f"note {run}", **params, "limit": 100},
                )
            else:
                r = call(api, "GET", "/v1/memories", key, params={**params, "limit": 100})
            seen = {h["id"] for h in r.json()["results"]}
            assert all(owners.get(i) == (tenant, user) for i in seen)
    for tenant, key in keys.items():
        for user in ("alice", "bob"):
            listed = call(api, "GET", "/v1/memories", key, params={"user_id": user, "limit": 100})
            got = {h["id"]: h["content"] for h in listed.json()["results"]}
            want = {i: c for i, c in model[tenant].items() if owners[i][1] == user}
            assert got == want


def test_rate_limit_answers_429_with_retry_after_then_recovers(
    make_settings: Callable[..., Settings],
) -> None:
    limited = make_settings(
        auth="required", embedding_provider="hash", rate_limit_per_s=0.5, rate_limit_burst=3
    )
    with TestClient(create_app(limited)) as api:
        key, other = new_key(api, "acme"), new_key(api, "acme")
        statuses = [
            call(api, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code
            for _ in range(6)
        ]
        assert statuses[:3] == [200, 200, 200] and 429 in statuses[3:]
        refused = call(api, "GET", "/v1/memories", key, params={"user_id": "u"})
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["code"] == "rate_limited"
        # Buckets are per key.
        assert call(api, "GET", "/v1/memories", other, params={"user_id": "u"}).status_code == 200
        wait_until(  # a token every 2 s: one is soon back
            lambda: (
                call(api, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code == 200
            ),
            10,
            "no rate-limit token came back",
        )


def test_rate_limits_are_shared_through_redis(make_settings: Callable[..., Settings]) -> None:
    shared = make_settings(
        auth="required",
        embedding_provider="hash",
        rate_limit_per_s=0.01,
        rate_limit_burst=2,
        redis_url=REDIS_URL,
    )
    with TestClient(create_app(shared)) as one, TestClient(create_app(shared)) as two:
        key = new_key(one, f"acme-{uuid.uuid4().hex[:6]}")
        first = call(one, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code
        second = call(two, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code
        third = call(one, "GET", "/v1/memories", key, params={"user_id": "u"})
        assert (first, second, third.status_code) == (200, 200, 429)
        assert int(third.headers["retry-after"]) >= 1


def test_rate_limits_are_shared_through_postgres(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    shared = make_settings(
        auth="required", embedding_provider="hash", rate_limit_per_s=0.01, rate_limit_burst=2
    )
    with TestClient(create_app(shared)) as one, TestClient(create_app(shared)) as two:
        key = new_key(one, "acme")
        first = call(one, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code
        second = call(two, "GET", "/v1/memories", key, params={"user_id": "u"}).status_code
        third = call(two, "GET", "/v1/memories", key, params={"user_id": "u"})
        assert (first, second, third.status_code) == (200, 200, 429)
        assert int(third.headers["retry-after"]) >= 1
    (bucket,) = raw.execute("SELECT key FROM rate_limit_buckets").fetchone() or ("",)
    assert bucket == f"key:{key.split('_')[1]}"  # the key's public prefix, never its secret
    assert key not in bucket


async def test_concurrent_takes_across_pools_never_share_a_token(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(embedding_provider="hash")
    one, two = await AsyncMemory.open(settings), await AsyncMemory.open(settings)
    try:
        takes = [backend_of(m).take_rate_token("key:race", 0.001, 5) for m in (one, two) * 10]
        waits = await asyncio.gather(*takes)
    finally:
        await one.close()
        await two.close()
    assert sorted(w == 0 for w in waits) == [False] * 15 + [True] * 5


def test_oversized_bodies_and_queries_are_refused(make_settings: Callable[..., Settings]) -> None:
    small = make_settings(auth="required", embedding_provider="hash", max_body_bytes=2048)
    with TestClient(create_app(small)) as api:
        key = new_key(api, "acme")
        big = call(api, "POST", "/v1/memories", key, json={"content": "x" * 5000, "user_id": "u"})
        assert big.status_code == 413 and big.json()["error"]["code"] == "payload_too_large"
        long_query = call(
            api, "POST", "/v1/memories/search", key, json={"query": "q" * 2001, "user_id": "u"}
        )
        assert long_query.status_code == 422
        page = call(api, "GET", "/v1/memories", key, params={"user_id": "u", "limit": 10_000})
        assert page.status_code == 422


def test_internal_errors_leak_nothing(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(make_settings(auth="required", embedding_provider="hash"))
    with TestClient(app, raise_server_exceptions=False) as api:
        _leak_nothing(api, monkeypatch, caplog)


def _leak_nothing(
    api: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = new_key(api, "acme")
    secret = "sk-live-0123456789abcdef the user's diary entry"

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(secret)

    monkeypatch.setattr("memvault.service.AsyncMemory.search", broken)
    caplog.set_level(logging.DEBUG)
    response = call(
        api, "POST", "/v1/memories/search", key, json={"query": "diary", "user_id": "u"}
    )
    assert response.status_code == 500
    text = response.text
    assert secret not in text and "Traceback" not in text and "RuntimeError" not in text
    assert response.json()["error"]["code"] == "internal_error"
    assert response.headers["x-request-id"]
    logged = "\n".join(r.getMessage() + json.dumps(r.__dict__, default=str) for r in caplog.records)
    assert "sk-live" not in logged and key not in logged and "diary" not in logged


def test_request_ids_are_echoed_and_logged_as_json(
    api: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    from memvault.logs import JsonFormatter

    key = new_key(api, "acme")
    caplog.set_level(logging.INFO, logger="memvault.access")
    generated = call(api, "GET", "/v1/memories", key, params={"user_id": "u"})
    assert len(generated.headers["x-request-id"]) == 32
    mine = api.get(
        "/v1/memories",
        params={"user_id": "u"},
        headers={**bearer(key), "X-Request-ID": "trace-42"},
    )
    assert mine.headers["x-request-id"] == "trace-42"
    junk = api.get("/health", headers={"X-Request-ID": "bad id;" * 20})
    assert len(junk.headers["x-request-id"]) == 32  # replaced, not echoed
    lines = [
        json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "memvault.access"
    ]
    line = next(entry for entry in lines if entry.get("request_id") == "trace-42")
    assert line["route"] == "/v1/memories" and line["status"] == 200 and line["method"] == "GET"
    assert key not in json.dumps(lines)


def test_cors_is_off_by_default_and_configurable(make_settings: Callable[..., Settings]) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    with TestClient(create_app(make_settings(embedding_provider="hash"))) as api:
        r = api.options("/v1/memories", headers=preflight)
        assert "access-control-allow-origin" not in r.headers
    allowed = make_settings(embedding_provider="hash", cors_origins=["https://app.example"])
    with TestClient(create_app(allowed)) as api:
        r = api.options("/v1/memories", headers=preflight)
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        other = api.options("/v1/memories", headers={**preflight, "Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_metrics_expose_latency_queue_and_stores(api: TestClient) -> None:
    key = new_key(api, "acme")
    call(api, "POST", "/v1/memories", key, json={"content": "metrics", "user_id": "u"})
    text = api.get("/metrics").text
    assert 'memvault_http_request_duration_seconds_count{method="POST",route="/v1/memories"' in text
    assert 'memvault_queue_jobs{status="queued"}' in text
    assert "memvault_memories_stored_total" in text
    assert "memvault_embedding_cache_requests_total" in text
    assert "memvault_worker_heartbeat_age_seconds" in text


def test_ready_needs_a_live_worker(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(embedding_provider="hash"))) as api:
        r = api.get("/ready")
        assert r.status_code == 503
        checks = r.json()["checks"]
        assert checks["database"]["ok"] and checks["migrations"]["ok"]
        assert checks["worker"] == {"ok": False, "detail": "no worker is running"}
    with TestClient(create_app(make_settings(embedding_provider="hash", run_worker=True))) as api:
        r = wait_until(
            lambda: (answer := api.get("/ready")).status_code == 200 and answer,
            10,
            "never ready with a worker",
        )
        assert r.json()["status"] == "ready"
    assert api.get("/health").json() == {"status": "ok"}


def test_admin_job_routes_see_only_their_tenant(api: TestClient) -> None:
    acme, globex = new_key(api, "acme", "read,write,admin"), new_key(api, "globex", "admin")
    long_text = "a long note " * 400  # past the model's window: embedded by a queued job
    call(api, "POST", "/v1/memories", acme, json={"content": long_text, "user_id": "u"})
    mine = call(api, "GET", "/v1/admin/jobs", acme).json()["results"]
    assert len(mine) == 1 and mine[0]["tenant_id"] == "acme"
    assert call(api, "GET", "/v1/admin/jobs", globex).json() == {"results": []}
    assert call(api, "POST", "/v1/admin/jobs/retry", globex).json() == {"retried": 0}


def test_a_slow_request_answers_503_at_the_deadline(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    finished: list[bool] = []

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(5)  # a search that takes too long is what is under test
        finished.append(True)

    monkeypatch.setattr("memvault.service.AsyncMemory.search", slow)
    quick = make_settings(embedding_provider="hash", request_timeout_s=0.3)
    with TestClient(create_app(quick)) as api:
        r = api.post("/v1/memories/search", json={"query": "x", "user_id": "u"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "request_timeout"
        assert finished == []  # answered at the deadline, not after the slow search
        assert api.get("/health").status_code == 200  # the server is fine afterwards
