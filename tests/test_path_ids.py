"""Ids that round-trip: every identifier a write accepts (a conversation id from
``POST /v1/messages``, a working-memory key) is reachable on every route that takes it in its
path, whatever it holds — ``/``, ``%``, a literal ``%2F``, dots, ``?`` and ``#`` — sent
percent-encoded as the Python client sends it. The routes are read from the operation table."""

from __future__ import annotations

import html
import re
import typing
from typing import Any
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory, MemoryClient
from memvault.api import create_app
from memvault.api.routes import split_example
from memvault.config import Settings
from memvault.operations import OPERATIONS, Operation
from memvault.paths import path_segment
from tests.serving import serving

IDS = ["conv/with/slashes", "/leading/", "100% sure", "a%2Fb", "..", ".", "what?#x", "café/ü"]
USER = "alice"


def _string_path_names(op: Operation) -> set[str]:
    assert op.service is not None
    hints = typing.get_type_hints(getattr(AsyncMemory, op.service))
    return {name for name in op.path_names if hints.get(name) is str}


STRING_ID_ROUTES = [op for op in OPERATIONS if op.routed and op.service and _string_path_names(op)]
# The ids a caller writes: conversation ids and working-memory keys. A deletion's request id is
# the server's, so its route is checked apart (every id reaches it whole).
WRITTEN = {"conversation_id", "key"}
ROUTES = [op for op in STRING_ID_ROUTES if _string_path_names(op) <= WRITTEN]


def test_the_routes_with_string_ids_are_read_from_the_table() -> None:
    names = {op.name for op in ROUTES}
    assert {"get_conversation", "get_context_value", "add_turns"} <= names
    assert "get_memory" not in names  # a UUID is checked as one, not a free string


def _seed(client: TestClient, ident: str) -> None:
    """A conversation with ``ident`` for its id, and a working value under ``ident`` in it."""
    sent = client.post(
        "/v1/messages?wait=true",
        json={"user_id": USER, "conversation_id": ident,
              "messages": [{"role": "user", "content": "I moved to Lyon last month."}]},
    )  # fmt: skip
    assert sent.status_code == 201, sent.text
    put = client.put(
        f"/v1/working/{path_segment(ident)}/context/{path_segment(ident)}",
        json={"user_id": USER, "value": {"city": "Lyon"}},
    )
    assert put.status_code == 204, put.text


def _call(client: TestClient, op: Operation, ident: str) -> Any:
    path, params, body = split_example(op)
    url = op.path.format_map({name: path_segment(ident) for name in path})
    sent = {"json": body} if op.body is not None else {}
    return client.request(op.method, url, params=params, **sent)


def _names_it(answer: dict[str, Any], ident: str) -> None:
    """What the answer says it is about is the id asked for, not a part of it."""
    for field in ("id", "conversation_id", "key"):
        if field in answer:
            assert answer[field] == ident, (field, answer)


@pytest.mark.parametrize("op", ROUTES, ids=lambda op: op.name)
def test_an_id_accepted_at_write_is_reachable_on_every_route(
    client: TestClient, op: Operation
) -> None:
    for ident in IDS:
        _seed(client, ident)
        answer = _call(client, op, ident)
        assert answer.status_code == op.status, (ident, answer.text)
        if answer.content:
            _names_it(answer.json(), ident)


def test_every_string_id_route_is_either_seeded_or_checked_apart() -> None:
    apart = {op.name for op in STRING_ID_ROUTES} - {op.name for op in ROUTES}
    assert apart == {"deletion_receipt"}


def test_a_receipt_id_reaches_its_route_whole(client: TestClient) -> None:
    for ident in IDS:
        answer = client.get(f"/v1/deletions/{path_segment(ident)}")
        assert answer.status_code == 404, (ident, answer.text)
        assert answer.json()["error"]["details"] == {"id": ident}


def test_the_path_reaches_the_same_conversation_and_value_the_body_wrote(
    client: TestClient,
) -> None:
    for ident in IDS:
        _seed(client, ident)
        found = client.get(f"/v1/conversations/{path_segment(ident)}", params={"user_id": USER})
        assert found.json()["id"] == ident
        assert [t["content"] for t in found.json()["turns"]] == ["I moved to Lyon last month."]
        value = client.get(
            f"/v1/working/{path_segment(ident)}/context/{path_segment(ident)}",
            params={"user_id": USER},
        )
        assert value.json()["value"] == {"city": "Lyon"}
    listed = client.get("/v1/conversations", params={"user_id": USER}).json()["results"]
    assert sorted(c["id"] for c in listed) == sorted(IDS)  # one each, none split in parts


def test_a_part_of_an_id_is_not_the_id(client: TestClient) -> None:
    """``conv/with/slashes`` is one id: its first part names no conversation, and a path of
    real separators does not reach it."""
    _seed(client, "conv/with/slashes")
    for path in ("/v1/conversations/conv", "/v1/conversations/conv/with/slashes"):
        assert client.get(path, params={"user_id": USER}).status_code == 404, path


def test_the_python_client_round_trips_every_id_over_a_real_server(settings: Settings) -> None:
    messages = [{"role": "user", "content": "I moved to Lyon last month."}]
    with serving(create_app(settings)) as url, MemoryClient(url) as client:
        for ident in IDS:
            client.add_messages(messages, user_id=USER, conversation_id=ident, wait=True)
            assert client.get_conversation(ident, user_id=USER).id == ident
            client.set_context(ident, ident, {"n": 1}, user_id=USER)
            assert client.get_context_value(ident, ident, user_id=USER) == {"n": 1}
            client.erase_conversation(ident, user_id=USER)
        assert client.list_conversations(user_id=USER) == []


def test_the_dashboard_links_each_conversation_to_its_page(client: TestClient) -> None:
    """With auth off the dashboard shows user ``default``; each listed link opens its page."""
    for ident in ("conv/with/slashes", "100% sure", "a%2Fb"):
        body = {"user_id": "default", "conversation_id": ident,
                "messages": [{"role": "user", "content": f"Kept under {ident}"}]}  # fmt: skip
        assert client.post("/v1/messages", json=body).status_code == 201
    listing = client.get("/ui/conversations").text
    links = re.findall(r'href="/ui/conversations/([^"]+)"', listing)
    assert len(links) == 3, links
    for link in map(html.unescape, links):
        opened = client.get(f"/ui/conversations/{link}")
        assert opened.status_code == 200, (link, opened.text[-300:])
        assert html.escape(f"Kept under {unquote(link)}") in opened.text
