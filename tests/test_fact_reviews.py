"""Resolving a contradiction awaiting review: keep the newer fact, keep the one it
contradicts, or keep both; nothing deleted, the history still answers what was believed before,
the decision in the audit log. Over HTTP: write scope, another tenant's key finds nothing, a
malformed id is the one answer for bad ids (422)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory, InvalidInput, NotFound, Settings
from memvault.api import create_app
from memvault.graph.views import FactReview


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(make_settings(graph_contradiction_policy="flag_review"))
    try:
        yield memory
    finally:
        await memory.close()


async def current(memory: AsyncMemory, **when: datetime) -> list[str]:
    found = await memory.facts(user_id="u", entity="Ann", predicate="works_for", **when)
    return sorted(f.object or "" for f in found)


async def contradiction(memory: AsyncMemory) -> FactReview:
    await memory.add_fact("Ann", "works_for", object="Initech", user_id="u")
    await memory.add_fact("Ann", "works_for", object="Hooli", user_id="u")
    (review,) = await memory.fact_reviews(user_id="u")
    return review


async def test_keeping_the_newer_fact_replaces_the_older_and_keeps_its_history(
    store: AsyncMemory,
) -> None:
    review = await contradiction(store)
    before = datetime.now(UTC)
    done = await store.resolve_fact_review(review.id, user_id="u", keep="fact")
    assert await current(store) == ["Hooli"]
    assert done.conflicts_with.superseded_by == review.fact.id
    assert done.closed == [review.id] and await store.fact_reviews(user_id="u") == []
    # What the store believed before the decision is still answerable.
    assert await current(store, known_at=before) == ["Hooli", "Initech"]
    audit = await store.audit_log(user_id="u", operation="update")
    (row,) = [r for r in audit.results if r.memory_kind == "fact"]
    assert row.details == {"via": "resolve_review", "review_id": str(review.id), "keep": "fact"}


async def test_keeping_the_older_fact_says_the_newer_never_held(store: AsyncMemory) -> None:
    review = await contradiction(store)
    done = await store.resolve_fact_review(str(review.id), user_id="u", keep="conflicts_with")
    assert await current(store) == ["Initech"]
    assert done.fact.superseded_by == review.conflicts_with.id
    assert done.fact.valid_from == done.fact.valid_until  # an empty interval: never true
    history = await store.facts(user_id="u", entity="Ann", include_superseded=True)
    assert sorted(f.object or "" for f in history) == ["Hooli", "Initech"]


async def test_keeping_both_closes_the_review_and_changes_no_fact(store: AsyncMemory) -> None:
    review = await contradiction(store)
    done = await store.resolve_fact_review(review.id, user_id="u", keep="both")
    assert await current(store) == ["Hooli", "Initech"]
    assert done.fact.superseded_at is None and done.conflicts_with.superseded_at is None
    assert await store.fact_reviews(user_id="u") == []


async def test_a_replaced_fact_closes_every_review_naming_it(store: AsyncMemory) -> None:
    await contradiction(store)
    await store.add_fact("Ann", "works_for", object="Globex", user_id="u")
    reviews = await store.fact_reviews(user_id="u")
    assert len(reviews) == 3  # Hooli vs Initech, Globex vs each
    (first,) = [r for r in reviews if r.fact.object == "Hooli"]
    done = await store.resolve_fact_review(first.id, user_id="u", keep="conflicts_with")
    assert len(done.closed) == 2  # this one, and Globex vs Hooli: Hooli is no longer current
    (left,) = await store.fact_reviews(user_id="u")
    assert {left.fact.object, left.conflicts_with.object} == {"Globex", "Initech"}


async def test_a_review_is_decided_once_and_only_by_its_owner(store: AsyncMemory) -> None:
    review = await contradiction(store)
    with pytest.raises(NotFound):
        await store.resolve_fact_review(review.id, user_id="someone-else", keep="fact")
    with pytest.raises(NotFound):
        await store.for_tenant("globex").resolve_fact_review(review.id, user_id="u", keep="fact")
    with pytest.raises(InvalidInput) as bad_id:
        await store.resolve_fact_review("not-a-uuid", user_id="u", keep="fact")
    assert bad_id.value.details == {"field": "review_id"}
    with pytest.raises(InvalidInput):
        await store.resolve_fact_review(review.id, user_id="u", keep="neither")
    await store.resolve_fact_review(review.id, user_id="u", keep="fact")
    with pytest.raises(NotFound):
        await store.resolve_fact_review(review.id, user_id="u", keep="both")
    assert await current(store) == ["Hooli"]


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    settings = make_settings(graph_contradiction_policy="flag_review", auth="required")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def key_for(api: TestClient, tenant: str, scopes: str) -> dict[str, str]:
    admin = api.app.state.admin  # type: ignore[attr-defined]
    call: Callable[..., Awaitable[Any]] = admin.create_api_key
    made = api.portal.call(functools.partial(call, tenant, scopes))  # type: ignore[union-attr]
    return {"Authorization": f"Bearer {made.key}"}


def test_over_http_with_scopes_tenants_and_bad_ids(api: TestClient) -> None:
    acme, globex = key_for(api, "acme", "read,write"), key_for(api, "globex", "read,write")
    reader = key_for(api, "acme", "read")
    for place in ("Oslo", "Rome"):
        body = {"user_id": "u", "subject": "Ada", "predicate": "lives_in", "object": place}
        assert api.post("/v1/facts", json=body, headers=acme).status_code == 201
    (review,) = api.get("/v1/facts/reviews", params={"user_id": "u"}, headers=acme).json()[
        "results"
    ]
    path = f"/v1/facts/reviews/{review['id']}/resolve"
    decision = {"user_id": "u", "keep": "conflicts_with"}
    assert api.post(path, json=decision, headers=reader).status_code == 403
    probe = api.post(path, json=decision, headers=globex)
    assert probe.status_code == 404 and "Oslo" not in probe.text
    bad = api.post("/v1/facts/reviews/not-a-uuid/resolve", json=decision, headers=acme)
    assert bad.status_code == 422 and bad.json()["error"]["details"] == {"field": "review_id"}
    wrong = api.post(path, json={"user_id": "u", "keep": "all"}, headers=acme)
    assert wrong.status_code == 422 and "Traceback" not in wrong.text
    done = api.post(path, json=decision, headers=acme)
    assert done.status_code == 200, done.text
    assert done.json()["conflicts_with"]["object"] == review["conflicts_with"]["object"]
    left = api.get("/v1/facts", params={"user_id": "u", "entity": "Ada"}, headers=acme).json()
    assert [f["object"] for f in left["results"]] == [review["conflicts_with"]["object"]]
