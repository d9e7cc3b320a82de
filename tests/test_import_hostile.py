"""Imports that cannot poison: a format-2 import whose counters and indices sit anywhere in
their columns' range (up to 2,147,483,647), for a conversation the user already has or a new
one, is accepted or refused as a whole, and afterwards every write and read route of that user
answers without a 5xx, and no turn is lost or overwritten."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import Settings
from memvault.api import create_app

TOP = 2**31 - 1
AT = "2025-01-02T03:04:05Z"
_users = itertools.count()

counts = st.sampled_from([0, 1, 2, 3, TOP - 1, TOP]) | st.integers(0, TOP)
indices = st.lists(st.sampled_from([0, 1, 2, 3, 4, TOP - 1]) | st.integers(0, TOP), max_size=3)


def _memory(user: str, ident: str, n: int, access: int) -> dict[str, Any]:
    return {"memvault_export": 2, "user_id": user, "kind": "memory", "id": ident,
            "content": f"imported turn {n}", "access_count": access,
            "occurred_at": AT, "created_at": AT, "updated_at": AT}  # fmt: skip


def _conversation(
    user: str, ident: str, turn_count: int, consolidated: int, turns: list[tuple[int, str]]
) -> dict[str, Any]:
    return {"memvault_export": 2, "user_id": user, "kind": "conversation", "id": ident,
            "turn_count": turn_count, "consolidated_turns": consolidated, "started_at": AT,
            "turns": [{"index": i, "memory_id": m, "role": "user", "occurred_at": AT}
                      for i, m in turns]}  # fmt: skip


def _strategy(user: str, ident: str, success: int, failure: int) -> dict[str, Any]:
    return {"memvault_export": 2, "user_id": user, "kind": "strategy", "id": ident,
            "description": "book a hotel", "tool_sequence": ["search", "book"],
            "success_count": success, "failure_count": failure, "created_at": AT}  # fmt: skip


@st.composite
def hostile_files(draw: st.DrawFn) -> dict[str, Any]:
    """What a file says about a held conversation, a new one and a strategy."""
    return {
        "held": (draw(counts), draw(counts), draw(indices)),
        "new": (draw(counts), draw(counts), draw(indices)),
        "strategy": (draw(counts), draw(counts)),
        "access": draw(counts),
    }


def _lines(user: str, drawn: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    memory_ids = [str(uuid.uuid4()) for _ in range(6)]
    lines = [_memory(user, m, n, drawn["access"]) for n, m in enumerate(memory_ids)]
    for name, ids in (("held", memory_ids[:3]), ("new", memory_ids[3:])):
        turn_count, consolidated, at = drawn[name]
        turns = list(zip(dict.fromkeys(at), ids, strict=False))
        lines.append(_conversation(user, name, turn_count, consolidated, turns))
    strategy = str(uuid.uuid4())
    lines.append(_strategy(user, strategy, *drawn["strategy"]))
    return lines, strategy


def _ok(answer: Any) -> Any:
    assert answer.status_code < 500, (answer.request.url, answer.text)
    return answer


def _append(client: TestClient, user: str, conversation: str, words: str) -> dict[int, str]:
    """Two turns appended; the indices the answer gave them (none when refused)."""
    texts = [f"{words} one", f"{words} two"]
    body = {"user_id": user, "conversation_id": conversation, "infer": False,
            "messages": [{"role": "user", "content": t} for t in texts]}  # fmt: skip
    answer = _ok(client.post("/v1/messages", json=body))
    if answer.status_code != 201:
        return {}
    return {r["turn_index"]: t for r, t in zip(answer.json()["results"], texts, strict=True)}


def _turns(client: TestClient, user: str, conversation: str) -> dict[int, str]:
    answer = _ok(client.get(f"/v1/conversations/{conversation}", params={"user_id": user}))
    if answer.status_code == 404:
        return {}
    return {t["index"]: t["content"] for t in answer.json()["turns"]}


def _reads(client: TestClient, user: str) -> None:
    assert _ok(client.get("/v1/export", params={"user_id": user})).status_code == 200
    assert _ok(client.get("/v1/conversations", params={"user_id": user})).status_code == 200
    assert _ok(client.get("/v1/memories", params={"user_id": user})).status_code == 200
    search = {"user_id": user, "query": "imported turn"}
    assert _ok(client.post("/v1/memories/search", json=search)).status_code == 200
    assert _ok(client.post("/v1/remember", json=search)).status_code == 200


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    """Hash embeddings: turn numbering does not depend on meaning, and the bundled model would
    embed every turn, search and recall of every example."""
    app = create_app(make_settings(embedding_provider="hash"))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=hostile_files())
def test_a_hostile_import_never_breaks_its_user(client: TestClient, drawn: dict[str, Any]) -> None:
    user = f"victim-{next(_users)}"
    before = _append(client, user, "held", "said before")
    assert sorted(before) == [0, 1]
    lines, strategy = _lines(user, drawn)
    _ok(client.post("/v1/import", json={"memories": lines}))
    _reads(client, user)
    expected = {"held": {**before}, "new": _turns(client, user, "new")}
    assert _turns(client, user, "held") == before  # the import wrote no turn into it
    for round_ in range(2):
        for conversation, kept in expected.items():
            added = _append(client, user, conversation, f"{conversation} {round_}")
            assert not set(added) & set(kept), "an index was handed out twice"
            kept.update(added)
            assert _turns(client, user, conversation) == kept  # nothing lost, nothing replaced
        for success in (True, False):
            body = {"user_id": user, "success": success}
            _ok(client.post(f"/v1/strategies/{strategy}/reinforce", json=body))
        _reads(client, user)
