"""Cognitive memory over HTTP, and tenant isolation for every new table and route: the
database hides other tenants' rows from a query without a filter, refuses writes into them, and
every route answers 404 for another tenant's ids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.exc import DBAPIError

from memvault import AsyncMemory, Settings
from memvault.api import create_app
from memvault.db.tables import COGNITIVE_TABLES
from memvault.db.tenancy import all_tenants, tenant_scope
from tests.conftest import backend_of


async def _fill(memory: AsyncMemory, user: str = "u") -> dict[str, Any]:
    convo = await memory.start_conversation(user_id=user, title="t")
    await memory.add_turns(convo.id, [{"role": "user", "content": "hello there"}], user_id=user)
    await memory.set_context(str(convo.id), "k", "v", user_id=user)
    await memory.record_tool_use("search", user_id=user, conversation_id=convo.id, success=True)
    strategy = await memory.learn_strategy("look it up", user_id=user, conversation_id=convo.id)
    first = await memory.add_goal("first", user_id=user)
    goal = await memory.add_goal("second", user_id=user, blocked_by=[first.id])
    await memory.update_profile(user_id=user, communication_style="brief")
    return {"conversation": convo.id, "strategy": strategy.id, "goal": goal.id}


async def _tenants_seen(memory: AsyncMemory, table: str) -> set[str]:
    async with backend_of(memory).engine.connect() as conn:
        rows = await conn.execute(sa.text(f"SELECT DISTINCT tenant_id FROM {table}"))
        return set(rows.scalars().all())


async def test_every_cognitive_table_hides_other_tenants(memory: AsyncMemory) -> None:
    await _fill(memory.for_tenant("acme"))
    await _fill(memory.for_tenant("globex"))
    for tenant in ("acme", "globex"):
        with tenant_scope(tenant):
            for table in COGNITIVE_TABLES:
                assert await _tenants_seen(memory, table) == {tenant}, table
    for table in COGNITIVE_TABLES:
        assert await _tenants_seen(memory, table) == set(), table
    with all_tenants():
        for table in COGNITIVE_TABLES:
            assert await _tenants_seen(memory, table) == {"acme", "globex"}, table


@pytest.mark.parametrize("table", COGNITIVE_TABLES)
async def test_every_cognitive_table_refuses_writes_into_another_tenant(
    memory: AsyncMemory, table: str
) -> None:
    await _fill(memory.for_tenant("globex"))
    with tenant_scope("acme"):
        async with backend_of(memory).engine.begin() as conn:
            moved = await conn.execute(
                sa.text(f"UPDATE {table} SET tenant_id = 'acme' WHERE tenant_id = 'globex'")
            )
            deleted = await conn.execute(sa.text(f"DELETE FROM {table}"))
            assert (moved.rowcount, deleted.rowcount) == (0, 0)
    with all_tenants():
        async with backend_of(memory).engine.connect() as conn:
            row = (await conn.execute(sa.text(f"SELECT * FROM {table} LIMIT 1"))).mappings().one()
    columns = ", ".join(row)
    values = ", ".join(f":{c}" for c in row)
    with tenant_scope("acme"), pytest.raises(DBAPIError, match="row-level security"):
        async with backend_of(memory).engine.begin() as conn:
            await conn.execute(sa.text(f"INSERT INTO {table} ({columns}) VALUES ({values})"), row)
    with all_tenants():
        assert await _tenants_seen(memory, table) == {"globex"}


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def test_routes_round_trip(api: TestClient) -> None:
    user = {"user_id": "ann"}
    convo = api.post("/v1/conversations", json={**user, "channel": "proj", "title": "x"}).json()
    cid = convo["id"]
    turns = api.post(
        f"/v1/conversations/{cid}/turns?wait=true",
        json={**user, "turns": [{"role": "user", "content": "deploy the API on Friday"}]},
    )
    assert turns.status_code == 201 and turns.json()["results"][0]["index"] == 0
    listed = api.get("/v1/conversations", params={**user, "channel": "proj"}).json()["results"]
    assert [c["id"] for c in listed] == [cid]
    got = api.get(f"/v1/conversations/{cid}", params=user).json()
    assert got["turns"][0]["content"] == "deploy the API on Friday"

    at = {**user, "channel": "proj"}
    put = api.put(f"/v1/working/{cid}/context/env", json={**at, "value": {"stage": "prod"}})
    assert put.status_code == 204
    assert api.get(f"/v1/working/{cid}/context/env", params=at).json()["value"] == {"stage": "prod"}
    assert api.get(f"/v1/working/{cid}", params=at).json()["values"] == {"env": {"stage": "prod"}}
    assert api.delete(f"/v1/working/{cid}/context/env", params=at).status_code == 204
    assert api.get(f"/v1/working/{cid}/context/env", params=at).status_code == 404
    assert api.delete(f"/v1/working/{cid}", params=at).json()["deleted"] == 1  # the turns

    used = api.post(
        "/v1/tools/invocations",
        json={
            **user,
            "conversation_id": cid,
            "tool_name": "deploy",
            "tool_input": {"target": "api"},
            "tool_output": "ok",
            "success": True,
            "latency_ms": 12.5,
        },
    )
    assert used.status_code == 201
    assert api.get("/v1/tools/stats", params=user).json()["results"][0]["uses"] == 1
    strategy = api.post(
        "/v1/strategies", json={**user, "description": "deploy a service", "conversation_id": cid}
    ).json()
    found = api.get("/v1/strategies", params={**user, "task": "deploy"}).json()["results"]
    assert [s["id"] for s in found] == [strategy["id"]]
    again = api.post(f"/v1/strategies/{strategy['id']}/reinforce", json={**user, "success": True})
    assert again.json()["success_count"] == 1

    goal = api.post("/v1/goals", json={**user, "description": "ship v2", "priority": 7})
    assert goal.status_code == 201
    gid = goal.json()["id"]
    assert [
        g["id"] for g in api.get("/v1/goals", params={**user, "status": "active"}).json()["results"]
    ] == [gid]
    done = api.post(
        f"/v1/goals/{gid}/complete", json={**user, "status": "completed", "result": "done"}
    )
    assert done.json()["status"] == "completed" and done.json()["completed_at"]
    assert api.get(f"/v1/goals/{gid}", params=user).json()["result"] == "done"

    patched = api.patch("/v1/profile", json={**user, "expertise": ["ops"]})
    assert patched.json()["expertise"] == ["ops"]
    assert api.get("/v1/profile", params=user).json()["expertise"] == ["ops"]

    answer = api.post(
        "/v1/remember",
        json={**user, "query": "when do we deploy?", "channel": "proj", "budget_tokens": 200},
    )
    body = answer.json()
    assert answer.status_code == 200, body
    assert body["episodic"][0]["content"] == "deploy the API on Friday"
    assert body["episodic"][0]["channel"] == "proj"
    assert "deploy the API on Friday" in body["prompt"] and body["tokens"] <= 200


def test_bad_input_is_a_clear_error(api: TestClient) -> None:
    cases = [
        api.post("/v1/goals", json={"user_id": "ann", "description": "x", "priority": 99}),
        api.post("/v1/strategies", json={"user_id": "ann", "description": "no sequence"}),
        api.get("/v1/conversations/a%01b", params={"user_id": "ann"}),
        api.post("/v1/remember", json={"user_id": "ann", "query": "q", "include": ["x"]}),
        api.put("/v1/working/c/context/k", json={"user_id": "ann", "value": 1, "ttl_seconds": 0}),
    ]
    for response in cases:
        assert response.status_code == 422, response.text
        assert set(response.json()["error"]) == {"code", "message", "details"}


async def test_every_route_answers_404_for_another_tenants_ids(
    memory: AsyncMemory, settings: Settings
) -> None:
    ids = await _fill(memory.for_tenant("globex"))
    created = await memory.for_tenant("globex").set_context("sess", "k", "v", user_id="u")
    assert created is None
    # The default tenant (auth off) asks for globex's ids with globex's user name.
    app = create_app(settings, memory=memory)
    user = {"user_id": "u"}
    cid, sid, gid = ids["conversation"], ids["strategy"], ids["goal"]
    with TestClient(app, raise_server_exceptions=False) as api:
        responses = {
            "get conversation": api.get(f"/v1/conversations/{cid}", params=user),
            "get value": api.get("/v1/working/sess/context/k", params=user),
            "delete value": api.delete("/v1/working/sess/context/k", params=user),
            "tool use": api.post(
                "/v1/tools/invocations",
                json={**user, "conversation_id": str(cid), "tool_name": "t", "success": True},
            ),
            "learn": api.post(
                "/v1/strategies", json={**user, "description": "d", "conversation_id": str(cid)}
            ),
            "reinforce": api.post(
                f"/v1/strategies/{sid}/reinforce", json={**user, "success": True}
            ),
            "get goal": api.get(f"/v1/goals/{gid}", params=user),
            "complete": api.post(f"/v1/goals/{gid}/complete", json=user),
            "subgoal": api.post(
                "/v1/goals", json={**user, "description": "d", "parent_id": str(gid)}
            ),
        }
        for name, response in responses.items():
            assert response.status_code == 404, name
        empties = {
            "conversations": api.get("/v1/conversations", params=user).json()["results"],
            "context": api.get("/v1/working/sess", params=user).json()["values"],
            "clear": api.delete("/v1/working/sess", params=user).json()["deleted"],
            "strategies": api.get("/v1/strategies", params={**user, "task": "look"}).json()[
                "results"
            ],
            "stats": api.get("/v1/tools/stats", params=user).json()["results"],
            "goals": api.get("/v1/goals", params=user).json()["results"],
            "profile": api.get("/v1/profile", params=user).json()["communication_style"],
            "remember": api.post("/v1/remember", json={**user, "query": "hello"}).json()[
                "episodic"
            ],
        }
        assert all(not value for value in empties.values()), empties
    # globex still has everything.
    theirs = memory.for_tenant("globex")
    assert (await theirs.get_goal(gid, user_id="u")).status == "blocked"
    assert await theirs.get_context_value("sess", "k", user_id="u") == "v"


async def test_key_rotation_reseals_every_cognitive_row(make_settings: Any, raw: Any) -> None:
    from memvault.admin import AsyncAdmin
    from memvault.crypto.envelope import generate_key
    from memvault.db.sealed_columns import SEALED

    old_key, new_key = generate_key(), generate_key()
    before = await AsyncMemory.open(make_settings(encryption_key=old_key))
    ids = await _fill(before)
    await before.close()
    during = await AsyncMemory.open(
        make_settings(encryption_key=new_key, encryption_old_keys=old_key)
    )
    report = await AsyncAdmin.of(during).rotate_encryption_key()
    await during.close()
    assert report.retired_key_ids
    after = await AsyncMemory.open(make_settings(encryption_key=new_key))
    active = backend_of(after).keys.current().active.key_id
    cognitive = {"conversations", "working_memory", "tool_invocations", "strategies", "goals"}
    cognitive |= {"user_profiles"}
    for entry in SEALED:
        if entry.name in cognitive:
            keys = {r[0] for r in raw.execute(f"SELECT DISTINCT key_id FROM {entry.name}")}
            assert keys == {active}, entry.name
            cognitive.remove(entry.name)
    assert cognitive == set()  # every cognitive table is one rotation re-seals
    convo = await after.get_conversation(ids["conversation"], user_id="u")
    assert convo.title == "t" and convo.turns and convo.turns[0].content == "hello there"
    assert (await after.get_goal(ids["goal"], user_id="u")).description == "second"
    assert await after.get_context_value(str(convo.id), "k", user_id="u") == "v"
    assert (await after.get_profile(user_id="u")).communication_style == "brief"
    found = await after.find_strategies("look it up", user_id="u")
    assert [s.description for s in found] == ["look it up"]
    await after.close()
