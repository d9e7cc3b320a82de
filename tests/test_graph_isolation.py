"""Tenant and user isolation of the knowledge graph: every new table behind row-level security,
every graph method and route blind to another owner's facts and entities."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import DBAPIError

from memvault import AsyncMemory, NotFound, Settings, auth
from memvault.api import create_app
from memvault.db.tables import GRAPH_TABLES
from memvault.db.tenancy import all_tenants, tenant_scope
from memvault.graph.claims import EntityMention, Extraction, FactClaim, RelationClaim
from tests.conftest import backend_of

tenants = st.sampled_from(["acme", "globex"])
users = st.sampled_from(["alice", "bob"])
names = st.sampled_from(["Ada", "Bo", "Cy"])
writes = st.lists(st.tuples(tenants, users, names, names), min_size=1, max_size=6)


@pytest.fixture
async def hashed(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    """A store with hash embeddings: who sees a graph row does not depend on what it means,
    and the bundled model would embed every entity and fact."""
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(writes=writes)
async def test_graph_rows_are_visible_only_to_their_owner(
    hashed: AsyncMemory, writes: list[tuple[str, str, str, str]]
) -> None:
    memory = hashed
    run = uuid.uuid4().hex[:8]
    owned: dict[tuple[str, str], set[str]] = {}
    for tenant, user, subject, obj in writes:
        owner = (f"{tenant}-{run}", f"{user}-{run}")
        view = memory.for_tenant(owner[0])
        fact = await view.add_fact(subject, "knows", object=f"{obj}-x", user_id=owner[1])
        owned.setdefault(owner, set()).add(fact.claim)
    everything = {
        (owner, e.id)
        for owner in owned
        for e in await memory.for_tenant(owner[0]).entities(user_id=owner[1], limit=1000)
    }
    for tenant in ("acme", "globex"):
        for user in ("alice", "bob"):
            me = (f"{tenant}-{run}", f"{user}-{run}")
            view = memory.for_tenant(me[0])
            claims = {f.claim for f in await view.facts(user_id=me[1], include_superseded=True)}
            assert claims == owned.get(me, set())
            for owner, entity_id in everything:
                if owner == me:
                    continue
                with pytest.raises(NotFound):
                    await view.entity(entity_id, user_id=me[1])
                with pytest.raises(NotFound):
                    await view.entity_graph(entity_id, user_id=me[1])
                with pytest.raises(NotFound):
                    await view.split_entity(entity_id, user_id=me[1])
                assert await view.facts(user_id=me[1], entity=str(entity_id)) == []
            mine = [i for o, i in everything if o == me]
            theirs = [i for o, i in everything if o != me]
            for entity_id in mine[:1]:
                for other in theirs[:3]:
                    with pytest.raises(NotFound):
                        await view.merge_entities(entity_id, into=other, user_id=me[1])


@pytest.fixture
async def two_tenants(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[AsyncMemory]:
    """A row in every graph table for acme and for globex."""
    from memvault.graph import derive

    async def scripted(text: str, **_: object) -> Extraction:
        return Extraction(
            entities=(EntityMention("Ada", "person"),),
            facts=(FactClaim("Ada", "works_for", "Ada works for Hooli", object="Hooli"),),
            relations=(RelationClaim("Ada", "KNOWS", "Bo", properties={"since": "2020"}),),
        )

    monkeypatch.setattr(derive, "extract", scripted)
    memory = await AsyncMemory.open(make_settings(graph_contradiction_policy="flag_review"))
    for tenant in ("acme", "globex"):
        view = memory.for_tenant(tenant)
        await view.add(f"{tenant}: Ada works for Hooli", user_id="u")
        await view.add_fact("Ada", "works_for", object="Initech", user_id="u")  # a review
        (ada,) = await view.entities(user_id="u", q="Ada")
        (bo,) = await view.entities(user_id="u", q="Bo")
        await view.merge_entities(bo.id, into=ada.id, user_id="u")
    yield memory
    await memory.close()


async def _tenants_in(memory: AsyncMemory, table: str) -> set[str]:
    async with backend_of(memory).engine.connect() as conn:
        rows = await conn.execute(sa.text(f"SELECT DISTINCT tenant_id FROM {table}"))
        return set(rows.scalars().all())


async def test_every_graph_table_is_behind_row_level_security(two_tenants: AsyncMemory) -> None:
    memory = two_tenants
    with all_tenants():
        for table in GRAPH_TABLES:
            assert await _tenants_in(memory, table) == {"acme", "globex"}, table
    for tenant in ("acme", "globex"):
        with tenant_scope(tenant):
            for table in GRAPH_TABLES:
                assert await _tenants_in(memory, table) == {tenant}, table
    for table in GRAPH_TABLES:
        assert await _tenants_in(memory, table) == set(), table


async def test_another_tenant_can_neither_change_nor_delete_graph_rows(
    two_tenants: AsyncMemory,
) -> None:
    memory = two_tenants
    with tenant_scope("acme"):
        async with backend_of(memory).engine.begin() as conn:
            for table in GRAPH_TABLES:
                changed = await conn.execute(
                    sa.text(f"UPDATE {table} SET user_id = 'x' WHERE tenant_id = 'globex'")
                )
                assert changed.rowcount == 0, table
                moved = await conn.execute(
                    sa.text(f"UPDATE {table} SET tenant_id = 'acme' WHERE tenant_id = 'globex'")
                )
                assert moved.rowcount == 0, table
                deleted = await conn.execute(
                    sa.text(f"DELETE FROM {table} WHERE tenant_id = 'globex'")
                )
                assert deleted.rowcount == 0, table
        with pytest.raises(DBAPIError, match="row-level security"):
            async with backend_of(memory).engine.begin() as conn:
                await conn.execute(
                    sa.text(
                        "INSERT INTO fact_reviews (tenant_id, id, user_id, fact_id, "
                        "conflicts_with, reason) SELECT 'globex', gen_random_uuid(), 'u', id, id, "
                        "'x' FROM facts LIMIT 1"
                    )
                )
    with all_tenants():
        for table in GRAPH_TABLES:
            assert "globex" in await _tenants_in(memory, table), table


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(auth="required", embedding_provider="hash"))) as c:
        yield c


def _key(client: TestClient, tenant: str) -> dict[str, str]:
    engine = backend_of(client.app.state.memory).engine  # type: ignore[attr-defined]
    created = client.portal.call(auth.create_key, engine, tenant, "read,write", None)  # type: ignore[union-attr]
    return {"Authorization": f"Bearer {created.key}"}


def test_every_graph_route_answers_404_for_another_tenants_ids(api: TestClient) -> None:
    acme, globex = _key(api, "acme"), _key(api, "globex")
    fact = {"subject": "Ada", "predicate": "works_for", "object": "Hooli", "user_id": "u"}
    assert api.post("/v1/facts", json=fact, headers=acme).status_code == 201
    assert (
        api.post("/v1/facts", json={**fact, "object": "Initech"}, headers=globex).status_code == 201
    )
    listed = api.get("/v1/entities", params={"user_id": "u"}, headers=acme).json()["results"]
    ada = next(e["id"] for e in listed if e["name"] == "Ada")
    hooli = next(e["id"] for e in listed if e["name"] == "Hooli")
    theirs = api.get("/v1/entities", params={"user_id": "u"}, headers=globex).json()["results"]
    assert {e["name"] for e in theirs} == {"Ada", "Initech"}
    owner = {"user_id": "u"}
    for method, path, kw in (
        ("GET", f"/v1/entities/{ada}", {"params": owner}),
        ("GET", f"/v1/entities/{ada}/graph", {"params": owner}),
        ("POST", f"/v1/entities/{hooli}/merge", {"json": {"into": ada, "user_id": "u"}}),
        ("POST", f"/v1/entities/{ada}/split", {"params": owner}),
    ):
        response = api.request(method, path, headers=globex, **kw)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == "not_found"
    facts = api.get("/v1/facts", params={"user_id": "u", "entity": ada}, headers=globex)
    assert facts.json() == {"results": []}
    mine = api.get("/v1/facts", params={"user_id": "u", "entity": "Ada"}, headers=acme).json()
    assert [f["object"] for f in mine["results"]] == ["Hooli"]
    graph = api.get(f"/v1/entities/{ada}/graph", params={"user_id": "u"}, headers=acme).json()
    assert {n["name"] for n in graph["nodes"]} == {"Ada", "Hooli"}
    assert (
        api.get(
            f"/v1/entities/{ada}/graph", params={"user_id": "u", "depth": 4}, headers=acme
        ).status_code
        == 422
    )
