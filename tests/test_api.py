"""The REST API: every route, and every error case answered in one envelope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from tests.conftest import app_client

USER = {"user_id": "alice"}


def add(client: TestClient, content: str = "likes tea", **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/memories", json={"content": content, "user_id": "alice", **extra})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert set(error) == {"code", "message", "details"}
    return error


@pytest.fixture(scope="module")
def refusing(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """One app for the tests that store nothing (each request refused, or a read of what is
    not stored): they share a store, which test_invalid_bodies_are_422 checks stays empty."""
    with app_client(module_database_url, tmp_path_factory.mktemp("api") / "data") as client:
        yield client


def test_health(refusing: TestClient) -> None:
    assert refusing.get("/health").json() == {"status": "ok"}


def test_openapi_docs_are_served(refusing: TestClient) -> None:
    assert refusing.get("/docs").status_code == 200
    paths = refusing.get("/openapi.json").json()["paths"]
    assert {"/v1/memories", "/v1/memories/{memory_id}", "/v1/memories/{memory_id}/history"} <= set(
        paths
    )


def test_crud_round_trip(client: TestClient) -> None:
    created = add(client, tags=["drink"], metadata={"source": "chat"})
    mid = created["id"]
    got = client.get(f"/v1/memories/{mid}", params=USER).json()
    assert got == {k: v for k, v in created.items() if k in got}
    assert created["dedup"]["action"] == "stored_new" and created["pii"]["found"] == {}

    patched = client.patch(f"/v1/memories/{mid}", params=USER, json={"content": "likes coffee"})
    assert patched.status_code == 200 and patched.json()["content"] == "likes coffee"

    history = client.get(f"/v1/memories/{mid}/history", params=USER).json()["results"]
    assert [h["action"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_content"] == "likes tea"

    assert client.delete(f"/v1/memories/{mid}", params=USER).status_code == 204
    assert_error(client.get(f"/v1/memories/{mid}", params=USER), 404, "not_found")


def test_list_filters_and_pages(client: TestClient) -> None:
    for i in range(5):
        add(
            client, f"note {i}", tags=["even"] if i % 2 == 0 else [], metadata={"i": i}, infer=False
        )
    page = client.get("/v1/memories", params={**USER, "limit": 2}).json()
    assert [m["content"] for m in page["results"]] == ["note 4", "note 3"]
    second = client.get(
        "/v1/memories", params={**USER, "limit": 2, "cursor": page["next_cursor"]}
    ).json()
    assert [m["content"] for m in second["results"]] == ["note 2", "note 1"]
    tagged = client.get("/v1/memories", params={**USER, "tags": "even"}).json()["results"]
    assert len(tagged) == 3
    by_meta = client.get("/v1/memories", params={**USER, "metadata": json.dumps({"i": 3})}).json()[
        "results"
    ]
    assert [m["content"] for m in by_meta] == ["note 3"]


def test_delete_all(client: TestClient) -> None:
    add(client, "one", app_id="x")
    add(client, "two", app_id="y")
    response = client.delete("/v1/memories", params={**USER, "app_id": "x"})
    assert response.json() == {"deleted": 1}
    assert client.delete("/v1/memories", params=USER).json() == {"deleted": 1}


def test_another_users_memory_is_not_found(client: TestClient) -> None:
    mid = add(client)["id"]
    other = {"user_id": "mallory"}
    assert_error(client.get(f"/v1/memories/{mid}", params=other), 404, "not_found")
    assert_error(
        client.patch(f"/v1/memories/{mid}", params=other, json={"content": "x"}), 404, "not_found"
    )
    assert_error(client.delete(f"/v1/memories/{mid}", params=other), 404, "not_found")
    assert_error(client.get(f"/v1/memories/{mid}/history", params=other), 404, "not_found")
    assert client.get(f"/v1/memories/{mid}", params=USER).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"content": "", "user_id": "alice"},
        {"content": "   \n", "user_id": "alice"},
        {"content": "x" * 32_001, "user_id": "alice"},
        {"content": "ok", "user_id": ""},
        {"content": "ok"},
        {"content": "ok", "user_id": "alice", "colour": "blue"},
        {"content": 42, "user_id": "alice"},
    ],
)
def test_invalid_bodies_are_422_and_store_nothing(
    refusing: TestClient, module_database_url: str, body: dict[str, Any]
) -> None:
    response = refusing.post("/v1/memories", json=body)
    assert response.status_code == 422
    assert response.json()["error"]["code"] in {"invalid_input", "content_too_long"}
    with psycopg.connect(module_database_url) as raw:
        assert raw.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_too_long_content_says_so(refusing: TestClient) -> None:
    error = assert_error(
        refusing.post("/v1/memories", json={"content": "y" * 32_001, **USER}),
        422,
        "content_too_long",
    )
    assert error["details"]["limit"] == 32_000
    assert "yyyy" not in json.dumps(error)


@pytest.mark.parametrize("path", ["/v1/memories/not-a-uuid", "/v1/memories/123/history"])
def test_bad_ids_are_422(refusing: TestClient, path: str) -> None:
    assert_error(refusing.get(path, params=USER), 422, "invalid_input")


def test_unknown_query_fields_are_422(refusing: TestClient) -> None:
    assert_error(
        refusing.get("/v1/memories", params={**USER, "colour": "blue"}), 422, "invalid_input"
    )


def test_missing_user_is_422(client: TestClient) -> None:
    mid = add(client)["id"]
    assert_error(client.get(f"/v1/memories/{mid}"), 422, "invalid_input")


def test_bad_metadata_filter_is_422(refusing: TestClient) -> None:
    assert_error(
        refusing.get("/v1/memories", params={**USER, "metadata": "{nope"}), 422, "invalid_input"
    )


def test_oversized_body_is_413(refusing: TestClient) -> None:
    body = json.dumps({"content": "z" * 2_000_000, "user_id": "alice"})
    response = refusing.post(
        "/v1/memories", content=body, headers={"content-type": "application/json"}
    )
    assert_error(response, 413, "payload_too_large")


def test_unknown_route_uses_the_envelope(refusing: TestClient) -> None:
    assert_error(refusing.get("/v1/nothing-here"), 404, "not_found")


def test_internal_errors_reveal_nothing(client: TestClient, raw: psycopg.Connection[Any]) -> None:
    raw.execute("ALTER TABLE memories RENAME TO memories_gone")
    response = client.post("/v1/memories", json={"content": "secret sauce", **USER})
    error = assert_error(response, 500, "internal_error")
    text = json.dumps(error).lower()
    for leak in ("secret sauce", "traceback", "select", "insert", "memories", "psycopg"):
        assert leak not in text


def test_streamed_oversized_body_is_413(refusing: TestClient) -> None:
    def chunks() -> Any:
        for _ in range(300):
            yield b"x" * 8192

    response = refusing.post(
        "/v1/memories", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_error(response, 413, "payload_too_large")


def test_add_reports_dedup_and_pii_without_values(client: TestClient) -> None:
    first = add(client, "Rita's phone is +44 20 7946 0958, she prefers texts")
    assert first["pii"]["found"] == {"phone": 1} and first["pii"]["redacted"] is True
    assert "7946" not in json.dumps(first)
    again = add(client, "Rita's phone is +44 20 7946 0958, she prefers texts")
    assert again["dedup"] == {
        "action": "duplicate_exact",
        "existing_id": first["id"],
        "similarity": 1.0,
        "decided_by": "hash",
    }


def test_pii_rejection_is_422_and_names_no_value(
    client: TestClient, raw: psycopg.Connection[Any]
) -> None:
    response = client.post(
        "/v1/memories",
        json={
            "content": "my password is Hunter2-Correct-Horse",
            "user_id": "alice",
            "pii_policy": "reject",
        },
    )
    error = assert_error(response, 422, "pii_rejected")
    assert error["details"]["found"] == {"password": 1}
    assert "Hunter2" not in response.text
    assert raw.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_batch_add_and_its_cap(client: TestClient, raw: psycopg.Connection[Any]) -> None:
    items = [
        {"content": f"Sam visited museum number {i}", "user_id": "sam", "infer": False}
        for i in range(5)
    ]
    response = client.post("/v1/memories/batch", json={"memories": items})
    assert response.status_code == 201
    results = response.json()["results"]
    assert [r["content"] for r in results] == [i["content"] for i in items]
    assert all(r["embedded"] and r["importance"] for r in results)
    too_many = client.post("/v1/memories/batch", json={"memories": [items[0]] * 1001})
    assert_error(too_many, 422, "invalid_input")
    bad = client.post("/v1/memories/batch", json={"memories": [items[0], {"content": ""}]})
    assert_error(bad, 422, "invalid_input")
    assert raw.execute("SELECT count(*) FROM memories").fetchone() == (5,)


def test_background_adds_answer_at_once(client: TestClient) -> None:
    response = client.post(
        "/v1/memories?async=true", json={"content": "Tom's train leaves at 6", "user_id": "tom"}
    )
    assert response.status_code == 201
    body = response.json()
    assert body["dedup"]["action"] == "pending" and body["embedded"] is False


def test_list_and_search_take_the_new_filters(client: TestClient) -> None:
    add(client, "Yara booked a flight to Lima", tags=["trip"], infer=False)
    add(client, "Yara likes jazz", tags=["music"], infer=False)
    listed = client.get("/v1/memories", params={**USER, "tags_any": ["trip", "x"]}).json()
    assert [m["content"] for m in listed["results"]] == ["Yara booked a flight to Lima"]
    found = client.post(
        "/v1/memories/search",
        json={"query": "Yara", **USER, "tags_any": ["music"], "min_importance": 1},
    ).json()
    assert [h["content"] for h in found["results"]] == ["Yara likes jazz"]
    bad = client.get("/v1/memories", params={**USER, "tier": "lukewarm"})
    assert_error(bad, 422, "invalid_input")


def test_messages_route_stores_turns(client: TestClient) -> None:
    response = client.post(
        "/v1/messages",
        json={
            "user_id": "alice",
            "session_id": "chat-7",
            "messages": [
                {"role": "user", "content": "My sister lives in Porto"},
                {"role": "assistant", "content": "Porto is lovely in spring"},
            ],
        },
    )
    assert response.status_code == 201
    turns = response.json()["results"]
    assert [t["metadata"]["turn"] for t in turns] == [0, 1]
    assert turns[0]["metadata"]["session_id"] == "chat-7"
    assert_error(
        client.post("/v1/messages", json={"user_id": "alice", "messages": []}), 422, "invalid_input"
    )
