"""A user's whole memory moves as one: export every kind, erase, import, and every read route
answers as before; an import twice changes nothing the second time; and an import is as strict
as the routes it stands in for (each crafted line a 422 naming line and field, nothing written,
the user still working), never reaching another user's rows."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memvault import AsyncMemory, InvalidInput, Settings
from memvault.api.app import create_app
from memvault.cli import app as cli
from tests.conftest import KEY, app_client

USER = "erin"
CONVERSATION = "trip-42"
VOLATILE = {"access_count", "last_accessed", "embedded", "score", "scores", "similarity",
            "took_ms", "latency_ms", "timings", "timings_ms", "breakdown", "degraded"}  # fmt: skip


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    # Erasure purges history here: a tombstone trail of the erased rows would stay beside the
    # imported history (as it should), and the round trip compares the history route whole.
    settings = make_settings(embedding_provider="hash", deletion_history="purge")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def _ok(response: Any) -> Any:
    assert response.status_code < 300, (response.status_code, response.text[:2000])
    return response.json()


def _populate(api: TestClient, user: str = USER) -> None:
    """Every kind a user can have, through the routes an agent uses."""
    owner = {"user_id": user}
    first = _ok(
        api.post("/v1/memories?wait=true", json={**owner, "content": "Dave works at Acme."})
    )
    _ok(
        api.patch(
            f"/v1/memories/{first['id']}",
            json={"content": "Dave works at Acme in Berlin."},
            params=owner,
        )
    )
    _ok(
        api.post(
            "/v1/memories?wait=true",
            json={**owner, "content": "Erin keeps bees", "tags": ["bees"], "infer": False},
        )
    )
    _ok(
        api.post(
            "/v1/messages?wait=true",
            json={
                **owner,
                "conversation_id": CONVERSATION,
                "title": "Lisbon trip",
                "messages": [
                    {"role": "user", "content": "I moved to Munich last year."},
                    {"role": "assistant", "content": "Noted: you live in Munich."},
                ],
            },
        )
    )
    _ok(
        api.post(
            "/v1/tools/invocations",
            json={
                **owner,
                "tool_name": "hotel_search",
                "tool_input": {"city": "Lisbon"},
                "tool_output": ["Memmo Alfama"],
                "success": True,
                "latency_ms": 12.5,
                "conversation_id": CONVERSATION,
            },
        )
    )
    _ok(
        api.post(
            "/v1/strategies",
            json={
                **owner,
                "description": "book a hotel",
                "tool_sequence": ["hotel_search", "book_hotel"],
            },
        )
    )
    trip = _ok(api.post("/v1/goals", json={**owner, "description": "plan the Lisbon trip"}))
    visa = _ok(api.post("/v1/goals", json={**owner, "description": "get the visa"}))
    _ok(
        api.post(
            "/v1/goals",
            json={
                **owner,
                "description": "book the flight",
                "parent_id": trip["id"],
                "blocked_by": [visa["id"]],
            },
        )
    )
    _ok(api.post(f"/v1/goals/{visa['id']}/complete", json={**owner, "result": "visa approved"}))
    _ok(
        api.patch(
            "/v1/profile",
            json={**owner, "preferences": {"tea": True}, "expertise": ["python"]},
        )
    )
    _ok(api.post("/v1/facts", json={**owner, "subject": "Ada", "predicate": "works_for",
                                    "object": "Hooli"}))  # fmt: skip
    _ok(api.post("/v1/facts", json={**owner, "subject": "Ada", "predicate": "works_for",
                                    "object": "Initech"}))  # supersedes Hooli  # fmt: skip
    used = {"subject": "Ada", "predicate": "uses", "object": "Postgres", "channel": "work"}
    at_work = _ok(api.post("/v1/facts", json={**owner, **used}))
    _ok(api.post(f"/v1/facts/{at_work['id']}/promote", json={**owner, "reason": "she says so"}))
    _ok(api.post("/v1/facts", json={**owner, "subject": "Bob", "predicate": "knows",
                                    "object": "Ada"}))  # fmt: skip
    _ok(api.post("/v1/facts", json={**owner, "subject": "Robert", "predicate": "age",
                                    "value": "41"}))  # fmt: skip
    bob, robert = (
        _ok(api.get("/v1/entities", params={**owner, "q": name}))["results"][0]
        for name in ("Bob", "Robert")
    )
    _ok(api.post(f"/v1/entities/{bob['id']}/merge", json={**owner, "into": robert["id"]}))


def _steady(value: Any) -> Any:
    """A read's answer without what a read itself changes (access counts, scores, timings)."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _as_claimed(entry: dict[str, Any]) -> dict[str, Any]:
    """A history entry as the store it came from wrote it: an imported one's claims."""
    entry = dict(entry)
    entry.pop("id")
    if entry.get("claimed_actor") is not None:
        entry["actor"], entry["created_at"] = entry["claimed_actor"], entry["claimed_at"]
    entry["claimed_actor"] = entry["claimed_at"] = None
    return entry


def _reads(api: TestClient, user: str = USER) -> dict[str, Any]:
    """What every read route answers for the user."""
    owner = {"user_id": user}
    seen: dict[str, Any] = {}
    memories = _ok(api.get("/v1/memories", params={**owner, "limit": 100}))
    seen["memories"] = memories
    for m in memories["results"]:
        seen[f"memory {m['id']}"] = _ok(api.get(f"/v1/memories/{m['id']}", params=owner))
        history = _ok(api.get(f"/v1/memories/{m['id']}/history", params=owner))
        seen[f"history {m['id']}"] = [_as_claimed(h) for h in history["results"]]
    for recipe in ("vector", "keyword", "hybrid"):
        seen[f"search {recipe}"] = _ok(
            api.post(
                "/v1/memories/search",
                json={**owner, "query": "where does Dave work", "recipe": recipe},
            )
        )
    seen["conversations"] = _ok(api.get("/v1/conversations", params=owner))
    seen["conversation"] = _ok(api.get(f"/v1/conversations/{CONVERSATION}", params=owner))
    seen["tool stats"] = _ok(api.get("/v1/tools/stats", params=owner))
    seen["strategies"] = _ok(api.get("/v1/strategies", params={**owner, "task": "book a hotel"}))
    goals = _ok(api.get("/v1/goals", params=owner))
    seen["goals"] = goals
    for g in goals["results"]:
        seen[f"goal {g['id']}"] = _ok(api.get(f"/v1/goals/{g['id']}", params=owner))
    seen["profile"] = _ok(api.get("/v1/profile", params=owner))
    seen["facts"] = _ok(api.get("/v1/facts", params=owner))
    seen["fact history"] = _ok(api.get("/v1/facts", params={**owner, "include_superseded": True}))
    seen["reviews"] = _ok(api.get("/v1/facts/reviews", params=owner))
    entities = _ok(api.get("/v1/entities", params={**owner, "limit": 100}))
    seen["entities"] = entities
    for e in entities["results"]:
        seen[f"entity {e['id']}"] = _ok(api.get(f"/v1/entities/{e['id']}", params=owner))
        seen[f"graph {e['id']}"] = _ok(api.get(f"/v1/entities/{e['id']}/graph", params=owner))
    seen["remember"] = _ok(
        api.post("/v1/remember", json={**owner, "query": "What should I know about my trip?"})
    )
    return _steady(seen)


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _export(api: TestClient, user: str = USER) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = _ok(api.get("/v1/export", params={"user_id": user}))["results"]
    return lines


def _import(api: TestClient, lines: list[Any]) -> Any:
    return api.post("/v1/import", json={"memories": lines})


def test_every_kind_round_trips_export_erase_import(api: TestClient) -> None:
    _populate(api)
    lines = _export(api)
    kinds = {line["kind"] for line in lines}
    assert kinds == {"memory", "entity", "fact", "relation", "conversation", "tool_invocation",
                     "strategy", "goal", "profile", "entity_merge", "fact_promotion"}  # fmt: skip
    assert all(line["memvault_export"] == 2 and line["user_id"] == USER for line in lines)
    before = _reads(api)

    receipt = _ok(api.post("/v1/deletions", json={"user_id": USER}))
    assert receipt["memories"] == sum(line["kind"] == "memory" for line in lines)
    assert _export(api) == []
    assert api.get(f"/v1/conversations/{CONVERSATION}", params={"user_id": USER}).status_code == 404

    counts = _ok(_import(api, json.loads(json.dumps(lines))))
    assert counts["imported"] == len(lines) and counts["skipped"] == 0
    assert counts["queued_for_embedding"] == 0  # the vectors came with the file
    assert counts["turns"] == 2
    after = _reads(api)
    assert after.keys() == before.keys()
    for name in before:
        assert after[name] == before[name], name

    # History says it was imported, by whom and when; the file's actor and time are claims.
    history = _ok(api.get(f"/v1/memories/{lines[0]['id']}/history", params={"user_id": USER}))
    assert [h["action"] for h in history["results"]] == ["ADD", "UPDATE"]
    assert {h["actor"] for h in history["results"]} == {"api"}
    claimed = [(h["claimed_actor"], _when(h["claimed_at"])) for h in history["results"]]
    assert claimed == [("api", _when(v["created_at"])) for v in lines[0]["history"]]

    # A merge came with what it moved: the merged entity can still be split off again.
    bob = next(line for line in lines if line["kind"] == "entity" and line["name"] == "Bob")
    split = _ok(api.post(f"/v1/entities/{bob['id']}/split", params={"user_id": USER}))
    assert split["merged_into"] is None and [f["claim"] for f in split["facts"]] == [
        "Bob knows Ada"
    ]
    _ok(
        api.post(
            f"/v1/entities/{bob['id']}/merge", json={"user_id": USER, "into": bob["merged_into"]}
        )
    )

    # Twice changes nothing: every line is found there, and the user's memory is as it was.
    imported = _steady(_export(api))
    again = _ok(_import(api, lines))
    assert again["imported"] == 0 and again["skipped"] == len(lines)
    assert _steady(_export(api)) == imported


# --- strictness --------------------------------------------------------------------------------


def _line(
    lines: list[dict[str, Any]], kind: str, where: Callable[[dict[str, Any]], bool] = lambda _: True
) -> int:
    return next(n for n, line in enumerate(lines) if line["kind"] == kind and where(line))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(line: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = line
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value

    return change


def _with_vector(size: int, value: float = 0.1) -> Callable[[dict[str, Any]], None]:
    return _set("vectors.0.chunks.0", [value] * size)


# (name, kind of line changed, change, field named by the 422)
CRAFTED: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    ("invalid entity type", "entity", _set("type", "dragon"), "type"),
    ("invalid certainty", "fact", _set("certainty", "sure"), "certainty"),
    ("invalid temporal value", "fact", _set("temporal", "someday"), "temporal"),
    ("dangling subject", "fact", _set("subject_id", "00000000-0000-4000-8000-000000000001"),
     "subject_id"),
    ("tenant_id on a graph row", "fact", _set("tenant_id", "other"), "tenant_id"),
    ("NUL in properties", "entity", _set("properties", {"k": "a\x00b"}), "properties"),
    ("access_count 2**40", "memory", _set("access_count", 2**40), "access_count"),
    ("recorded_at in year 10000", "fact", _set("recorded_at", "10000-01-01T00:00:00Z"),
     "recorded_at"),
    ("NaN", "fact", _set("confidence", math.nan), "confidence"),
    ("Infinity", "memory", _with_vector(384, math.inf), "vectors.0.chunks.0.0"),
    ("1e39 vector", "memory", _with_vector(384, 1e39), "vectors.0.chunks.0.0"),
    ("20,000-dimension vector", "memory", _with_vector(20_000), "vectors.0.chunks.0"),
    ("3-dimension vector", "memory", _with_vector(3), "vectors.0.chunks.0"),
    ("3-dimension entity embedding", "entity", _set("embedding", [0.1, 0.2, 0.3]), "embedding"),
    ("3-dimension fact embedding", "fact", _set("embedding", [0.1, 0.2, 0.3]), "embedding"),
    ("20,000-dimension fact embedding", "fact", _set("embedding", [0.1] * 20_000), "embedding"),
    ("500k-character content", "memory", _set("content", "x" * 500_006), "content"),
    ("predicate with a space and a bang", "fact", _set("predicate", "x y!"), "predicate"),
    ("300k-character entity name with NUL", "entity", _set("name", "N" * 299_999 + "\x00"), "name"),
    ("600k-character title", "conversation", _set("title", "t" * 600_000), "title"),
    ("600k-character goal", "goal", _set("description", "g" * 600_000), "description"),
    ("600k-character strategy", "strategy", _set("description", "s" * 600_000), "description"),
    ("forged history actor", "memory", _set("history.0.actor", "root\x00"), "history.0.actor"),
    ("latency 1e308", "tool_invocation", _set("latency_ms", 1e308), "latency_ms"),
    ("a turn naming no memory", "conversation",
     _set("turns.0.memory_id", "00000000-0000-4000-8000-000000000002"), "turns.0.memory_id"),
    ("unknown kind", "profile", _set("kind", "secret"), "kind"),
    ("another user's line", "goal", _set("user_id", "mallory"), "user_id"),
]  # fmt: skip


def _rows(raw: psycopg.Connection[Any]) -> dict[str, int]:
    tables = ("memories", "memory_history", "memory_chunks", "entities", "facts", "relations",
              "conversations", "conversation_turns", "tool_invocations", "strategies", "goals",
              "user_profiles", "embedding_jobs")  # fmt: skip
    return {t: raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]


def _still_works(api: TestClient, user: str) -> None:
    owner = {"user_id": user}
    _ok(api.post("/v1/memories?wait=true", json={**owner, "content": "Still here in Munich."}))
    _ok(api.post("/v1/memories/search", json={**owner, "query": "where", "include": ["facts"]}))
    _ok(api.post("/v1/remember", json={**owner, "query": "where do I live?"}))
    _ok(api.get("/v1/facts", params=owner))


@pytest.fixture(scope="module")
def exported(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, list[dict[str, Any]], psycopg.Connection[Any]]]:
    """A store holding every kind, exported once for the crafted-line cases: each erases the
    user and imports into that, as after a fresh export (filling the store is most of a case)."""
    data = tmp_path_factory.mktemp("portable") / "data"
    with (
        app_client(
            module_database_url, data, embedding_provider="hash", deletion_history="purge"
        ) as api,
        psycopg.connect(module_database_url, autocommit=True) as raw,
    ):
        _populate(api)
        yield api, _export(api), raw


@pytest.mark.parametrize(("name", "kind", "change", "field"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_line_is_a_422_naming_it_and_changes_nothing(
    exported: tuple[TestClient, list[dict[str, Any]], psycopg.Connection[Any]],
    name: str,
    kind: str,
    change: Callable[[dict[str, Any]], None],
    field: str,
) -> None:
    api, lines, raw = exported
    _ok(api.post("/v1/deletions", json={"user_id": USER}))
    bad = copy.deepcopy(lines)
    number = _line(bad, kind, lambda line: kind != "memory" or bool(line["history"]))
    change(bad[number])
    before = _rows(raw)

    body = json.dumps({"memories": bad}, allow_nan=True)
    answer = api.post("/v1/import", content=body, headers={"Content-Type": "application/json"})

    assert answer.status_code == 422, (name, answer.status_code, answer.text[:500])
    errors = answer.json()["error"]["details"]["errors"]
    assert {"line": number + 1, "field": field} in [
        {"line": e["line"], "field": e["field"]} for e in errors
    ], errors
    assert "secret" not in answer.text.lower() and "\\u0000" not in answer.text
    assert _rows(raw) == before, "nothing was written"
    _still_works(api, USER)
    # The file, once corrected, still imports.
    assert _ok(_import(api, lines))["imported"] == len(lines)


def test_a_graph_part_that_is_not_an_object_is_a_422(api: TestClient) -> None:
    line = _v1_line()
    line["parts"] = {"graph": 5}
    answer = _import(api, [line])
    assert answer.status_code == 422
    assert answer.json()["error"]["details"]["errors"] == [
        {"line": 1, "field": "parts.graph", "problem": "Input should be a valid dictionary or "
         "instance of _V1Graph"},
    ]  # fmt: skip
    keyed = _v1_line()
    keyed["vectors"] = {"SecretKeyText\x00": [[0.1] * 384]}
    answer = _import(api, [keyed])
    assert answer.status_code == 422 and "SecretKeyText" not in answer.text
    _still_works(api, "ann")


def _v1_line() -> dict[str, Any]:
    """A line as format 1 wrote it (memories only, the graph inside)."""
    memory = "11111111-1111-4111-8111-111111111111"
    entity = "22222222-2222-4222-8222-222222222222"
    fact = "33333333-3333-4333-8333-333333333333"
    at = "2025-05-01T10:00:00Z"
    return {
        "memvault_export": 1, "id": memory, "content": "Ann lives in Porto", "user_id": "ann",
        "app_id": "default", "project_id": None, "environment": None, "channel": "_global",
        "source": None, "tags": [], "metadata": {}, "categories": [], "importance": None,
        "memory_type": "persistent", "valid_until": None, "tier": "hot",
        "embedding_model": None, "access_count": 0, "last_accessed": None, "occurred_at": at,
        "created_at": at, "updated_at": at, "expires_at": None,
        "history": [{"action": "ADD", "new_content": "Ann lives in Porto", "actor": "cli",
                     "created_at": at}],
        "vectors": {},
        "parts": {"graph": {
            "entities": [{"id": entity, "user_id": "ann", "app_id": "default",
                          "channel": "_global", "type": "place", "name": "Porto", "aliases": [],
                          "description": None, "salience": 0.5, "access_count": 0,
                          "last_accessed": None, "first_seen": at, "properties": {}}],
            "facts": [{"id": fact, "user_id": "ann", "app_id": "default", "channel": "_global",
                       "subject_id": entity, "predicate": "located_in", "object_id": None,
                       "claim": "Porto is a city", "value": "city", "confidence": 0.9,
                       "certainty": "explicit", "temporal": "current", "source": None,
                       "valid_from": None, "valid_until": None, "recorded_at": at,
                       "superseded_at": None, "superseded_by": None, "access_count": 0,
                       "last_accessed": None}],
        }},
    }  # fmt: skip


def test_a_format_1_file_still_imports(api: TestClient) -> None:
    line = _v1_line()
    # Format 1 repeats a fact and its entities in each memory it was read from.
    other = {**_v1_line(), "id": "44444444-4444-4444-8444-444444444444"}
    counts = _ok(_import(api, [line, other]))
    assert (counts["memories"], counts["entities"], counts["facts"]) == (2, 1, 1)
    assert counts["queued_for_embedding"] == 2  # they carried no vectors
    facts = _ok(api.get("/v1/facts", params={"user_id": "ann"}))["results"]
    assert [(f["claim"], sorted(f["memory_ids"])) for f in facts] == [
        ("Porto is a city", [line["id"], other["id"]])
    ]
    history = _ok(api.get(f"/v1/memories/{line['id']}/history", params={"user_id": "ann"}))
    (entry,) = history["results"]
    assert (entry["actor"], entry["claimed_actor"]) == ("api", "cli")
    assert entry["claimed_at"].startswith("2025-05-01T10:00:00")
    assert entry["created_at"] > "2026"


# --- other users' rows -------------------------------------------------------------------------


def test_ids_another_user_holds_are_remapped_and_never_reach_their_rows(
    api: TestClient, raw: psycopg.Connection[Any]
) -> None:
    _populate(api, "carol")
    carols = _export(api, "carol")
    carol_before = _steady(carols)
    # Mallory's file reuses every one of carol's ids.
    forged = [{**copy.deepcopy(line), "user_id": "mallory"} for line in carols]
    counts = _ok(_import(api, forged))
    assert counts["remapped"] > 0 and counts["imported"] == len(forged)
    assert _steady(_export(api, "carol")) == carol_before

    mallory = _export(api, "mallory")
    assert not {line.get("id") for line in mallory} & {
        line["id"] for line in carols if line["kind"] in ("memory", "entity", "fact", "goal")
    }
    facts = _ok(api.get("/v1/facts", params={"user_id": "mallory"}))["results"]
    assert {f["claim"] for f in facts} == {
        f["claim"] for f in _ok(api.get("/v1/facts", params={"user_id": "carol"}))["results"]
    }
    # Erasing mallory's memories leaves carol's facts and entities where they were.
    _ok(api.post("/v1/deletions", json={"user_id": "mallory"}))
    assert _steady(_export(api, "carol")) == carol_before
    assert raw.execute(
        "SELECT count(*) FROM facts f JOIN entities e ON e.tenant_id = f.tenant_id "
        "AND e.id = f.subject_id WHERE e.user_id <> f.user_id"
    ).fetchone() == (0,), "no cross-user graph edge"

    # A second run finds the remapped rows: nothing is written twice.
    _ok(_import(api, forged))
    assert _ok(_import(api, forged))["imported"] == 0


def test_a_line_pointing_at_another_users_row_is_refused(api: TestClient) -> None:
    _populate(api, "carol")
    carol_entity = next(line for line in _export(api, "carol") if line["kind"] == "entity")
    _populate(api, "mallory")
    mallory = _export(api, "mallory")
    _ok(api.post("/v1/deletions", json={"user_id": "mallory"}))
    number = _line(mallory, "fact")
    mallory[number]["subject_id"] = carol_entity["id"]
    answer = _import(api, [line for line in mallory])
    assert answer.status_code == 422
    assert {"line": number + 1, "field": "subject_id"} in [
        {"line": e["line"], "field": e["field"]}
        for e in answer.json()["error"]["details"]["errors"]
    ]
    _still_works(api, "mallory")


# --- the CLI -----------------------------------------------------------------------------------


def test_memvault_export_then_import_moves_a_user(
    api: TestClient,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name, value in {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
        "MEMVAULT_EMBEDDING_PROVIDER": "hash",
        "MEMVAULT_DELETION_HISTORY": "purge",
    }.items():
        monkeypatch.setenv(name, value)
    _populate(api)
    before = _reads(api)
    runner = CliRunner()
    exported = runner.invoke(cli, ["export", "--user", USER])
    assert exported.exit_code == 0, exported.output
    assert "conversation" in exported.stderr and "goal" in exported.stderr
    file = tmp_path / "erin.jsonl"
    file.write_text(exported.stdout)
    assert runner.invoke(cli, ["erase", "--user", USER, "--yes"]).exit_code == 0

    # A broken copy is refused whole, each problem at its line of the file.
    lines = exported.stdout.splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "", "not json", *lines[1:3]]) + "\n")
    refused = runner.invoke(cli, ["import", str(broken)])
    assert refused.exit_code == 1
    assert "broken.jsonl:3: line: " in " ".join(refused.output.split())
    assert _export(api) == []

    loaded = runner.invoke(cli, ["import", str(file)])
    assert loaded.exit_code == 0, loaded.output
    assert f"{len(lines)} imported" in loaded.stdout
    after = _reads(api)
    for name in before:
        assert _without_actor(after[name]) == _without_actor(before[name]), name


def _without_actor(value: Any) -> Any:
    """The CLI imports as actor "cli" where the routes wrote "api"."""
    if isinstance(value, list):
        return [_without_actor(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_actor(v) for k, v in value.items() if k != "actor"}
    return value


def test_every_table_of_a_users_rows_is_exported_rebuilt_or_left_out_on_purpose() -> None:
    from memvault.db import portable
    from memvault.db.tables import metadata

    holding = {t.name for t in metadata.tables.values() if "user_id" in t.c}
    exported = {t.name for t in portable.OWNED}
    assert holding <= exported | set(portable.REBUILT) | set(portable.LEFT_OUT)
    assert not exported & (set(portable.REBUILT) | set(portable.LEFT_OUT))
    documented = (Path(__file__).parent.parent / "docs" / "export-format.md").read_text()
    for name in [*portable.REBUILT, *portable.LEFT_OUT]:
        assert name.replace("_", " ") in documented or name in documented, name


async def test_an_import_applies_the_stores_pii_policy(
    make_settings: Callable[..., Settings],
) -> None:
    card = "Erin pays with card 4111 1111 1111 1111"
    loose = make_settings(embedding_provider="hash", pii_policy="allow")
    async with await AsyncMemory.open(loose) as store:
        added = await store.add(card, user_id=USER, infer=False, wait=True)
        lines = json.loads(json.dumps(await store.export_memories(user_id=USER)))
        await store.erase_user(user_id=USER)
    assert lines[0]["content"] == card and lines[0]["vectors"]

    strict = make_settings(embedding_provider="hash", pii_policy="reject")
    async with await AsyncMemory.open(strict) as store:
        with pytest.raises(InvalidInput) as refused:
            await store.import_memories(lines)
        assert refused.value.details["errors"][0] | {"problem": ""} == {
            "line": 1,
            "field": "content",
            "problem": "",
        }
        assert "4111" not in json.dumps(refused.value.details)
        assert await store.export_memories(user_id=USER) == []

    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        counts = await store.import_memories(lines)
        # Redacted on the way in, as an add would be; its vectors were of the card's text.
        assert counts["queued_for_embedding"] == 1
        stored = await store.get(added.id, user_id=USER)
        assert stored.content == "Erin pays with card [REDACTED:credit_card]"
        history = await store.history(added.id, user_id=USER)
        assert all("4111" not in (h.new_content or "") for h in history)


HOSTILE: list[Any] = [None, "", " ", "\x00", "a\x00b", "\ud800", "x" * 70_000, -1, 2**63, 1e308,
                      math.nan, -math.inf, True, [], [None], {}, {"k": "\x00"}, [[[[[[]]]]]],
                      "9999-12-31T23:59:59-05:00", "not-a-uuid"]  # fmt: skip


@pytest.mark.slow
def test_no_hostile_value_in_any_field_of_any_kind_answers_5xx(api: TestClient) -> None:
    _populate(api)
    lines = _export(api)
    _ok(api.post("/v1/deletions", json={"user_id": USER}))
    for line in lines:  # smaller bodies; vectors get their own hostile values below
        line.update(
            {k: [] if k == "vectors" else None for k in ("vectors", "embedding") if k in line}
        )
    one_of_each = {line["kind"]: n for n, line in reversed(list(enumerate(lines)))}
    # Each body is the file with one value changed: the other lines are encoded once, not
    # copied and encoded again for each of the thousands of cases.
    encoded = [json.dumps(line, allow_nan=True) for line in lines]
    cases = [
        (number, name, value)
        for number in one_of_each.values()
        for name in lines[number]
        for value in HOSTILE
    ]
    answers: dict[int, int] = {}

    async def send_each() -> None:
        # The same app, its lifespan begun by the TestClient, asked from inside its own event
        # loop: a TestClient request hops between threads eight times, half of each of these
        # 3,400 requests' time (23 s of the module's 38 s before, 12 s after).
        transport = httpx.ASGITransport(api.app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url=str(api.base_url)) as client:
            for number, name, value in cases:
                changed = json.dumps({**lines[number], name: value}, allow_nan=True)
                file = [*encoded[:number], changed, *encoded[number + 1 :]]
                body = '{"memories": [' + ", ".join(file) + "]}"
                answer = await client.post(
                    "/v1/import", content=body, headers={"Content-Type": "application/json"}
                )
                answers[answer.status_code] = answers.get(answer.status_code, 0) + 1
                assert answer.status_code in (200, 422), (name, repr(value)[:40], answer.text)
                assert "\\u0000" not in answer.text and "\\ud800" not in answer.text

    assert api.portal is not None
    api.portal.call(send_each)
    assert answers[422] > answers.get(200, 0)
    _still_works(api, USER)
