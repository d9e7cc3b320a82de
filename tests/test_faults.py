"""Hostile input never poisons a user: every malformed request answers 4xx with the field named,
changes nothing, and the user's memories still list and search afterwards."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault.api import create_app
from memvault.config import Settings
from memvault.jsonvalues import MAX_DEPTH, TRUNCATED
from tests.conftest import app_client
from tests.serving import serving

USER = "victim"
ZERO_ID = "00000000-0000-0000-0000-000000000000"


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        value = {"a": value}
    return value


def _raw(client: TestClient, method: str, url: str, body: str) -> Any:
    return client.request(method, url, content=body, headers={"content-type": "application/json"})


def _memory(metadata_json: str = "{}", **fields: str) -> str:
    extra = "".join(f', "{k}": {v}' for k, v in fields.items())
    return f'{{"content": "hostile", "user_id": "{USER}", "metadata": {metadata_json}{extra}}}'


DEEP = json.dumps(_deep(300))
BAD_METADATA = {
    "deep": DEEP,
    "nan literal": '{"x": NaN}',
    "infinity": '{"x": Infinity}',
    "negative infinity": '{"x": [1, -Infinity]}',
    "nul value": '{"x": "a\\u0000b"}',
    "nul key": '{"a\\u0000": 1}',
    "surrogate value": '{"x": "\\ud800"}',
    "surrogate key": '{"\\udfff": 1}',
}
BAD_TIMES = {
    "before year 1 in UTC": '"0001-01-01T00:00:00+05:00"',
    "after year 9999 in UTC": '"9999-12-31T23:30:00-05:00"',
}


def _assert_refused(response: Any, field: str, status: int = 422) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input"
    assert any(field in problem["field"] for problem in error["details"]["errors"]), error


def _assert_user_intact(client: TestClient, expected: int) -> None:
    listed = client.get("/v1/memories", params={"user_id": USER})
    assert listed.status_code == 200 and len(listed.json()["results"]) == expected
    found = client.post("/v1/memories/search", json={"query": "hostile", "user_id": USER})
    assert found.status_code == 200


def _with_a_memory(client: TestClient) -> TestClient:
    ok = client.post("/v1/memories", json={"content": "a normal memory", "user_id": USER})
    assert ok.status_code == 201
    return client


@pytest.fixture(scope="module")
def api(module_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the tests whose every request is refused: each checks that the user still
    holds the one memory it had, so a write let through shows in the test that let it."""
    with app_client(module_database_url, tmp_path_factory.mktemp("faults") / "data") as client:
        yield _with_a_memory(client)


@pytest.fixture
def own_api(client: TestClient) -> TestClient:
    """An app of the test's own, for tests that write or change rows."""
    return _with_a_memory(client)


@pytest.fixture
def hashed_api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    """``own_api`` with hash embeddings, for the fuzz: what it checks does not depend on
    meaning, and the bundled model would embed every search it makes."""
    app = create_app(make_settings(embedding_provider="hash"))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield _with_a_memory(client)


@pytest.mark.parametrize("case", BAD_METADATA)
def test_bad_metadata_is_refused_everywhere_and_stores_nothing(api: TestClient, case: str) -> None:
    bad = BAD_METADATA[case]
    _assert_refused(_raw(api, "POST", "/v1/memories", _memory(bad)), "metadata")
    batch = f'{{"memories": [{_memory()}, {_memory(bad)}]}}'
    _assert_refused(_raw(api, "POST", "/v1/memories/batch", batch), "metadata")
    existing = api.get("/v1/memories", params={"user_id": USER}).json()["results"][0]["id"]
    patch = _raw(api, "PATCH", f"/v1/memories/{existing}?user_id={USER}", f'{{"metadata": {bad}}}')
    _assert_refused(patch, "metadata")
    search = f'{{"query": "hostile", "user_id": "{USER}", "metadata": {bad}}}'
    _assert_refused(_raw(api, "POST", "/v1/memories/search", search), "metadata")
    _assert_refused(api.get("/v1/memories", params={"user_id": USER, "metadata": bad}), "metadata")
    _assert_user_intact(api, expected=1)
    assert (
        api.get(f"/v1/memories/{existing}/history", params={"user_id": USER}).json()["results"][-1][
            "action"
        ]
        == "ADD"
    )


@pytest.mark.parametrize("case", BAD_TIMES)
@pytest.mark.parametrize("field", ["occurred_at", "expires_at"])
def test_timestamps_outside_the_calendar_in_utc_are_refused(
    api: TestClient, case: str, field: str
) -> None:
    moment = BAD_TIMES[case]
    _assert_refused(_raw(api, "POST", "/v1/memories", _memory(**{field: moment})), field)
    batch = f'{{"memories": [{_memory(**{field: moment})}]}}'
    _assert_refused(_raw(api, "POST", "/v1/memories/batch", batch), field)
    if field == "occurred_at":
        turns = (
            f'{{"messages": [{{"role": "user", "content": "hi"}}], "user_id": "{USER}", '
            f'"occurred_at": {moment}}}'
        )
        _assert_refused(_raw(api, "POST", "/v1/messages", turns), field)
        search = f'{{"query": "x", "user_id": "{USER}", "reference_time": {moment}}}'
        _assert_refused(_raw(api, "POST", "/v1/memories/search", search), "reference_time")
    _assert_user_intact(api, expected=1)


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_a_nul_byte_in_the_owner_is_refused(api: TestClient, method: str) -> None:
    existing = api.get("/v1/memories", params={"user_id": USER}).json()["results"][0]["id"]
    body = {"json": {"content": "changed"}} if method == "PATCH" else {}
    for path in (f"/v1/memories/{existing}", f"/v1/memories/{ZERO_ID}"):
        response = api.request(method, f"{path}?user_id=vic%00tim", **body)
        _assert_refused(response, "user_id")
    _assert_refused(api.get(f"/v1/memories/{existing}/history?user_id=%00"), "user_id")
    _assert_user_intact(api, expected=1)
    assert api.get(f"/v1/memories/{existing}", params={"user_id": USER}).json()["content"] == (
        "a normal memory"
    )


def test_bodies_that_are_not_json_get_a_clear_answer(api: TestClient) -> None:
    for body in ("not json", '{"content": "x", ', "[" * 100_000 + "]" * 100_000):
        response = _raw(api, "POST", "/v1/memories", body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_json"
    form = api.post(
        "/v1/memories",
        content=b"content=x&user_id=u",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 415
    assert form.json()["error"]["code"] == "unsupported_media_type"
    _assert_user_intact(api, expected=1)


def test_message_roles_are_checked(api: TestClient) -> None:
    turns = {"messages": [{"role": "wizard", "content": "hi"}], "user_id": USER}
    _assert_refused(api.post("/v1/messages", json=turns), "role")


def test_an_over_large_limit_has_one_error_shape_on_list_and_search(api: TestClient) -> None:
    listed = api.get("/v1/memories", params={"user_id": USER, "limit": 1000})
    searched = api.post("/v1/memories/search", json={"query": "q", "user_id": USER, "limit": 1000})
    for response in (listed, searched):
        _assert_refused(response, "limit")
        (problem,) = response.json()["error"]["details"]["errors"]
        assert problem["problem"] == "Input should be less than or equal to 100"


def test_a_row_stored_before_the_checks_still_reads_back(
    own_api: TestClient, raw: psycopg.Connection[Any]
) -> None:
    api = own_api
    existing = api.get("/v1/memories", params={"user_id": USER}).json()["results"][0]["id"]
    raw.execute(
        "UPDATE memories SET metadata = %s::jsonb WHERE id = %s", (json.dumps(_deep(300)), existing)
    )
    listed = api.get("/v1/memories", params={"user_id": USER})
    assert listed.status_code == 200
    (record,) = listed.json()["results"]
    assert record["metadata"][TRUNCATED] is True
    depth, value = 0, record["metadata"]
    while isinstance(value, dict) and "a" in value:
        depth, value = depth + 1, value["a"]
    assert depth <= MAX_DEPTH  # nesting past the limit is cut to null
    assert api.get(f"/v1/memories/{existing}", params={"user_id": USER}).status_code == 200
    assert api.get(f"/v1/memories/{existing}/history", params={"user_id": USER}).status_code == 200
    found = api.post("/v1/memories/search", json={"query": "a normal memory", "user_id": USER})
    assert found.status_code == 200 and found.json()["results"][0]["id"] == existing


# --- fuzz: hostile values in every field of every body ------------------------------------------

SECRET = "zq-marker-7731"
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None), max_size=20).map(lambda t: SECRET + t),
    st.sampled_from(
        ["\x00", "\ud800", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "1e999"]
    ),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
TEMPLATES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/memories", {"content": "c", "user_id": USER, "metadata": {}, "tags": []}),
    ("POST", "/v1/memories/batch", {"memories": [{"content": "c", "user_id": USER}]}),
    ("POST", "/v1/memories/search", {"query": "q", "user_id": USER, "limit": 5}),
    ("POST", "/v1/messages", {"messages": [{"role": "user", "content": "c"}], "user_id": USER}),
    ("PATCH", "/v1/memories/{id}?user_id=" + USER, {"content": "c", "metadata": {}}),
]


def _mutations(template: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    keys = [*template, "occurred_at", "expires_at", "reference_time", "unknown"]
    return st.builds(
        lambda key, value: {**template, key: value}, st.sampled_from(keys), json_values
    )


# Each example is three HTTP round trips through the whole app: a sample of hostile bodies,
# beside the tests above that take the known hostile values one field at a time.
@pytest.mark.slow
@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_hostile_value_in_any_field_breaks_anything(
    hashed_api: TestClient, data: st.DataObject, caplog: pytest.LogCaptureFixture
) -> None:
    api = hashed_api
    method, path, template = data.draw(st.sampled_from(TEMPLATES))
    body = data.draw(_mutations(template))
    existing = api.get("/v1/memories", params={"user_id": USER}).json()["results"][0]["id"]
    text = json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass")
    with caplog.at_level(logging.INFO):
        response = api.request(
            method,
            path.replace("{id}", existing),
            content=text,
            headers={"content-type": "application/json"},
        )
    assert response.status_code < 500, response.text
    for shown in (response.text, caplog.text):
        assert "Traceback" not in shown and "SELECT" not in shown and "INSERT" not in shown
    if response.status_code >= 400:
        assert SECRET not in response.text
    assert SECRET not in caplog.text
    listed = api.get("/v1/memories", params={"user_id": USER, "limit": 100})
    assert listed.status_code == 200
    found = api.post("/v1/memories/search", json={"query": "memory", "user_id": USER})
    assert found.status_code == 200


# --- bodies whose declared length lies ---------------------------------------------------------


def _raw_http(base: str, head: str, body: bytes, *, hang_up: bool) -> bytes:
    """One request written by hand on a socket (no client would send these), and the answer;
    ``hang_up`` closes our side after the body, as a client that gave up would."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        if hang_up:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    ("length", "body", "expected"),
    [
        ("99999999", b"{}", 413),  # refused from the header, before any body is read
        ("abc", b"{}", 400),  # not a length: the HTTP layer refuses it
        ("-5", b"{}", 400),
        ("400", b'{"content": "cut short"', None),  # the client hangs up mid-body
    ],
)
def test_a_content_length_that_lies_is_refused_without_a_server_error(
    make_settings: Callable[..., Settings], length: str, body: bytes, expected: int | None
) -> None:
    # Hash embeddings: the HTTP framing is under test, and the bundled model's load would be
    # most of each case's time.
    with serving(create_app(make_settings(embedding_provider="hash"))) as base:
        head = (
            "POST /v1/memories HTTP/1.1\nHost: test\nContent-Type: application/json\n"
            f"Content-Length: {length}\n"
        )
        answer = _raw_http(base, head, body, hang_up=expected is None)
        status = int(answer.split(b" ", 2)[1]) if answer else None
        assert status == expected, answer[:300]
        if status == 413:
            framing, _, rest = answer.partition(b"\r\n\r\n")
            assert json.loads(rest)["error"]["code"] == "payload_too_large"
            # The body was never read: the server hangs up at once rather than leave the
            # client waiting on a connection that cannot carry another request.
            assert b"\r\nconnection: close" in framing.lower(), framing
        listed = httpx.get(f"{base}/v1/memories", params={"user_id": USER})
        assert listed.status_code == 200 and listed.json()["results"] == []
