"""The graph routes over HTTP: shapes, time queries in the query string, merge and split,
reviews, facts and entities in search, and clear 4xx errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from memvault import Settings
from memvault.api import create_app
from tests.conftest import app_client


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    settings = make_settings(graph_contradiction_policy="flag_review")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def refusing(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """One app for the tests whose requests are all refused."""
    data = tmp_path_factory.mktemp("graph") / "data"
    with app_client(module_database_url, data, graph_contradiction_policy="flag_review") as client:
        yield client


def _fact(api: TestClient, **body: object) -> dict[str, object]:
    response = api.post("/v1/facts", json={"user_id": "u", **body})
    assert response.status_code == 201, response.text
    result: dict[str, object] = response.json()
    return result


def test_facts_and_entities_over_http(api: TestClient) -> None:
    first = _fact(api, subject="Ada", predicate="lives_in", object="Oslo", valid_from="2020-01-01")
    _fact(api, subject="Ada", predicate="lives_in", object="Rome", valid_from="2023-01-01")
    _fact(api, subject="Oslo", predicate="located_in", object="Norway", confidence=0.7)
    assert first["claim"] == "Ada lives in Oslo" and first["source"] == "api"
    both = api.get("/v1/facts", params={"user_id": "u", "entity": "Ada"}).json()["results"]
    assert sorted(f["object"] for f in both) == ["Oslo", "Rome"]  # flag_review keeps both
    (review,) = api.get("/v1/facts/reviews", params={"user_id": "u"}).json()["results"]
    assert {review["fact"]["object"], review["conflicts_with"]["object"]} == {"Oslo", "Rome"}
    then = api.get(
        "/v1/facts", params={"user_id": "u", "entity": "ada", "valid_at": "2021-06-01T00:00:00Z"}
    ).json()["results"]
    assert [f["object"] for f in then] == ["Oslo"]
    before = api.get(
        "/v1/facts", params={"user_id": "u", "known_at": "2000-01-01T00:00:00Z"}
    ).json()["results"]
    assert before == []

    found = api.get("/v1/entities", params={"user_id": "u", "q": "oslo"}).json()["results"]
    (oslo,) = found
    detail = api.get(f"/v1/entities/{oslo['id']}", params={"user_id": "u"}).json()
    assert {f["predicate"] for f in detail["facts"]} == {"lives_in", "located_in"}
    graph = api.get(f"/v1/entities/{oslo['id']}/graph", params={"user_id": "u", "depth": 1})
    assert graph.status_code == 200, graph.text
    assert {n["name"] for n in graph.json()["nodes"]} == {"Oslo", "Ada", "Norway"}

    (norway,) = api.get("/v1/entities", params={"user_id": "u", "q": "Norway"}).json()["results"]
    merged = api.post(
        f"/v1/entities/{norway['id']}/merge", json={"into": oslo["id"], "user_id": "u"}
    )
    assert merged.status_code == 200 and merged.json()["merged"] == [norway["id"]]
    split = api.post(f"/v1/entities/{norway['id']}/split", params={"user_id": "u"})
    assert split.status_code == 200 and split.json()["facts"][0]["object"] == "Norway"

    searched = api.post(
        "/v1/memories/search",
        json={"query": "where does Ada live", "user_id": "u", "include": ["facts", "entities"]},
    ).json()
    assert searched["entities"][0]["name"] == "Ada"
    assert {f["object"] for f in searched["facts"][:2]} == {"Oslo", "Rome"}
    plain = api.post("/v1/memories/search", json={"query": "Ada", "user_id": "u"}).json()
    assert plain["facts"] is None and plain["entities"] is None


def test_valid_at_and_known_at_together_over_http(
    make_settings: Callable[..., Settings],
) -> None:
    """The issue's question: lives in Berlin in June 2024, as known after it was recorded
    (and after it was replaced)."""
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as api:
        _fact(api, subject="@user", predicate="lives_in", object="Berlin", valid_from="2024-01-01")
        recorded = api.get("/v1/facts", params={"user_id": "u"}).json()["results"][0]
        _fact(api, subject="@user", predicate="lives_in", object="Munich", valid_from="2025-01-01")
        later = datetime.now(UTC) + timedelta(seconds=1)
        for known_at in (recorded["recorded_at"], later.isoformat()):
            params = {"user_id": "u", "valid_at": "2024-06-01", "known_at": known_at}
            found = api.get("/v1/facts", params=params)
            assert found.status_code == 200, found.text
            assert [f["object"] for f in found.json()["results"]] == ["Berlin"], known_at
        now = {"user_id": "u", "valid_at": later.isoformat(), "known_at": later.isoformat()}
        assert [f["object"] for f in api.get("/v1/facts", params=now).json()["results"]] == [
            "Munich"
        ]


def test_entity_graph_as_of_both_axes(make_settings: Callable[..., Settings]) -> None:
    """The graph view answers as-of like GET /v1/facts: a job changed in 2025 (the old fact
    superseded) is drawn as the store knew it then, at the valid time asked."""
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as api:
        _fact(api, subject="Bob", predicate="works_for", object="Acme", valid_from="2021-01-01")
        (acme,) = api.get("/v1/facts", params={"user_id": "u", "entity": "Bob"}).json()["results"]
        _fact(api, subject="Bob", predicate="works_for", object="Globex", valid_from="2025-01-01")
        later = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
        bob = api.get("/v1/entities", params={"user_id": "u", "q": "Bob"}).json()["results"][0]

        def drawn(**moments: str) -> set[str]:
            params = {"user_id": "u", "depth": 1, **moments}
            view = api.get(f"/v1/entities/{bob['id']}/graph", params=params)
            assert view.status_code == 200, view.text
            names = {n["id"]: n["name"] for n in view.json()["nodes"]}
            edges = view.json()["edges"]
            assert all(e["kind"] == "fact" and e["type"] == "works_for" for e in edges)
            return {names[e["target_id"]] for e in edges}

        before = acme["recorded_at"]
        # As known before the supersession, Acme held on (its end was not known yet).
        assert drawn(known_at=before) == {"Acme"}
        assert drawn(known_at=before, valid_at=later) == {"Acme"}
        # As known after it: at a valid time after the change Globex, before it Acme.
        assert drawn(known_at=later, valid_at=later) == {"Globex"}
        assert drawn(known_at=later, valid_at="2022-06-01T00:00:00Z") == {"Acme"}
        assert drawn(valid_at="2022-06-01T00:00:00Z") == {"Acme"}
        assert drawn() == {"Globex"}  # the default: the current graph, unchanged
        assert drawn(valid_at="2020-06-01T00:00:00Z") == set()


@pytest.mark.parametrize(
    ("method", "path", "kw"),
    [
        ("POST", "/v1/facts", {"json": {"subject": "A", "predicate": "p", "user_id": "u"}}),
        ("POST", "/v1/facts", {"json": {"subject": "A", "predicate": "p!", "value": "v", "user_id": "u"}}),  # noqa: E501
        ("GET", "/v1/facts", {"params": {"user_id": "u", "valid_at": "not a time"}}),
        ("GET", "/v1/facts", {"params": {"user_id": "u", "surprise": "1"}}),
        ("GET", "/v1/entities/not-a-uuid", {"params": {"user_id": "u"}}),
        ("GET", "/v1/entities", {"params": {"user_id": "u", "type": "spaceship"}}),
        ("POST", "/v1/memories/search", {"json": {"query": "x", "user_id": "u", "include": ["memes"]}}),  # noqa: E501
    ],
)  # fmt: skip
def test_bad_graph_requests_answer_422_in_the_envelope(
    refusing: TestClient, method: str, path: str, kw: dict[str, object]
) -> None:
    response = refusing.request(method, path, **kw)  # type: ignore[arg-type]
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"
