"""Memory health: each finding at its threshold, with an action that goes through the write
path and the audit; export -> import keeps ids, history and vectors; the CLI faces."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memvault.api import create_app
from memvault.cli import app
from memvault.config import Settings
from memvault.service import AsyncMemory
from memvault.worker import Worker
from tests.conftest import KEY, backend_of

runner = CliRunner()


def _set(raw: psycopg.Connection[Any], memory_id: Any, **values: Any) -> None:
    columns = ", ".join(f"{k} = %({k})s" for k in values)
    raw.execute(f"UPDATE memories SET {columns} WHERE id = %(id)s", {**values, "id": memory_id})


def test_health_findings_and_their_actions(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    now = datetime.now(UTC)
    with TestClient(create_app(make_settings(embedding_provider="hash"))) as api:

        def add(text: str) -> str:
            body = {"content": text, "user_id": "gus", "infer": False}
            answer = api.post("/v1/memories", json=body)
            assert answer.status_code == 201
            return str(answer.json()["id"])

        fresh = add("Gus likes the harbour at dawn")
        twin_a, twin_b = add("Gus owns a red kayak"), add("Gus owns a red kayak")
        expired = add("Gus is in Lisbon this week")
        stale = add("Gus once read a book on knots")
        noise = add("Gus said ok")
        bare = add("Gus bought rope")
        _set(raw, expired, memory_type="temporal", valid_until=now - timedelta(days=1))
        _set(
            raw, stale, created_at=now - timedelta(days=200), last_accessed=now - timedelta(days=91)
        )
        _set(raw, noise, importance=2, created_at=now - timedelta(days=31))
        _set(raw, fresh, importance=2)  # as unimportant, but new: not yet a finding
        _set(raw, bare, embedded=False, created_at=now - timedelta(minutes=10))
        raw.execute(
            "INSERT INTO embedding_jobs (tenant_id, memory_id, status) VALUES ('default', %s, "
            "'failed')",
            (bare,),
        )
        report = api.get("/v1/health/memory", params={"user_id": "gus"}).json()
        found = {f["kind"]: f for f in report["findings"]}
        assert report["total"] == 7
        assert found["expired_temporal"]["memory_ids"] == [expired]
        assert found["stale"]["memory_ids"] == [stale]
        assert noise in found["low_importance_unrecalled"]["memory_ids"]
        assert fresh not in found["low_importance_unrecalled"]["memory_ids"]
        assert found["vectorless"]["memory_ids"] == [bare]
        assert found["failed_jobs"]["memory_ids"] == [bare]
        assert found["near_duplicates"]["clusters"] == [sorted([twin_a, twin_b])]

        for kind in ("near_duplicates", "stale", "failed_jobs"):
            action = found[kind]["action"]
            assert action["method"] == "POST" and action["path"] == "/v1/health/memory/actions"
            done = api.post(action["path"], json=action["body"])
            assert done.status_code == 200, done.text
            assert done.json()["changed"] == 1, kind
        keep, gone = twin_a, twin_b  # the earliest stays (the original, not the copy)
        merged = api.get(f"/v1/memories/{keep}", params={"user_id": "gus"}).json()
        assert merged["metadata"] == {"merged_from": [gone]}
        assert api.get(f"/v1/memories/{gone}", params={"user_id": "gus"}).status_code == 404
        tier = api.get(f"/v1/memories/{stale}", params={"user_id": "gus"}).json()["tier"]
        assert tier == "cold"
        jobs = raw.execute("SELECT status FROM embedding_jobs WHERE memory_id = %s", (bare,))
        assert {r[0] for r in jobs} == {"queued"}
        audited = {e["operation"] for e in api.get("/v1/audit").json()["results"]}
        assert {"merge", "tier", "delete", "update"} <= audited
        refused = api.post(
            "/v1/health/memory/actions",
            json={"user_id": "gus", "action": "merge", "memory_ids": [keep]},
        )
        assert refused.status_code == 422


async def test_health_of_another_tenants_ids_changes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        theirs = await store.for_tenant("globex").add("globex plan", user_id="u", infer=False)
        acme = store.for_tenant("acme")
        result = await acme.health_action(
            {"user_id": "u", "action": "archive", "memory_ids": [str(theirs.id)]}
        )
        assert result.changed == 0
        with pytest.raises(Exception, match="memory"):
            await acme.health_action(
                {"user_id": "u", "action": "delete", "memory_ids": [str(theirs.id)]}
            )
        assert (await store.for_tenant("globex").get(theirs.id, user_id="u")).tier == "hot"


async def test_near_duplicates_follow_every_change_between_reports(
    make_settings: Callable[..., Settings],
) -> None:
    """A report compares only what changed since the last one (lifecycle/duplicates.py): after
    each write, edit and deletion it still finds what a store opened afresh finds."""
    settings = make_settings(embedding_provider="hash")

    async def clusters(store: AsyncMemory) -> list[list[str]]:
        found = (await store.memory_health(user_id="ivy")).findings
        return [[str(i) for i in c] for f in found for c in f.clusters]

    async def afresh() -> list[list[str]]:
        async with await AsyncMemory.open(settings) as other:
            return await clusters(other)

    async with await AsyncMemory.open(settings) as store:

        async def add(text: str) -> str:
            return str((await store.add(text, user_id="ivy", infer=False)).id)

        async def edit(memory_id: str, text: str) -> None:
            await store.update(memory_id, user_id="ivy", content=text)
            # Embedded again by the worker (none runs in a library store): a new chunk row.
            worker = Worker(backend_of(store))
            while await worker.run_once():
                pass
            assert (await store.get(memory_id, user_id="ivy")).embedded

        kayak = await add("Ivy owns a red kayak")
        await add("Ivy likes the harbour at dawn")
        assert await clusters(store) == [] == await afresh()
        copy = await add("Ivy owns a red kayak")  # a new memory, compared with the rest
        assert await clusters(store) == [sorted([kayak, copy])] == await afresh()
        third = await add("Ivy owns a red kayak")
        assert await clusters(store) == [sorted([kayak, copy, third])] == await afresh()
        await edit(copy, "Ivy sold the kayak in May")  # a new vector
        assert await clusters(store) == [sorted([kayak, third])] == await afresh()
        await store.delete(third, user_id="ivy")
        assert await clusters(store) == [] == await afresh()
        await edit(copy, "Ivy owns a red kayak")
        assert await clusters(store) == [sorted([kayak, copy])] == await afresh()


async def test_export_then_import_keeps_ids_history_and_vectors(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        source, target = store.for_tenant("old"), store.for_tenant("new")
        added = await source.add("Hana keeps bees", user_id="hana", infer=False, tags=["bees"])
        await source.update(added.id, user_id="hana", content="Hana keeps bees and goats")
        raw.execute("UPDATE memories SET embedded = true WHERE id = %s", (added.id,))
        raw.execute(  # the worker's part, done here: vectors for the edited text
            "INSERT INTO memory_chunks (tenant_id, memory_id, model, chunk_index, user_id, "
            "embedding) SELECT tenant_id, memory_id, model, 1, user_id, embedding "
            "FROM memory_chunks WHERE memory_id = %s",
            (added.id,),
        )
        lines = await source.export_memories(user_id="hana")
        lines = json.loads(json.dumps(lines))  # through a file, as the CLI does
        counts = await target.import_memories(lines)
        assert (counts["memories"], counts["queued_for_embedding"]) == (1, 0)
        assert (await target.import_memories(lines))["skipped"] == len(lines)  # twice: harmless
        copy = await target.get(added.id, user_id="hana")
        assert (copy.content, copy.tags, copy.embedded) == (
            "Hana keeps bees and goats",
            ["bees"],
            True,
        )
        history = [
            (h.action, h.old_content, h.new_content)
            for h in await target.history(added.id, user_id="hana")
        ]
        assert history == [
            ("ADD", None, "Hana keeps bees"),
            ("UPDATE", "Hana keeps bees", "Hana keeps bees and goats"),
        ]
        vectors = raw.execute(
            "SELECT tenant_id, chunk_index, embedding::text FROM memory_chunks "
            "WHERE memory_id = %s ORDER BY tenant_id, chunk_index",
            (added.id,),
        ).fetchall()
        assert [(t, i) for t, i, _ in vectors] == [("new", 0), ("new", 1), ("old", 0), ("old", 1)]
        assert vectors[0][2] == vectors[2][2]
        for recipe in ("keyword", "vector"):
            hits = await target.search("goats", user_id="hana", recipe=recipe)
            assert [h.id for h in hits.results] == [added.id], recipe


def test_the_cli_lists_and_runs_scheduled_jobs_and_reports_memory_health(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
        "MEMVAULT_EMBEDDING_PROVIDER": "hash",
    }.items():
        monkeypatch.setenv(name, value)
    listed = runner.invoke(app, ["jobs", "schedule", "--json"])
    assert listed.exit_code == 0, listed.output
    assert {j["name"] for j in json.loads(listed.stdout)} >= {"cleanup", "tiers", "decay"}
    dry = runner.invoke(app, ["jobs", "schedule", "run", "tiers", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["dry_run"] is True
    assert runner.invoke(app, ["add", "Ivo sails", "--user", "ivo"]).exit_code == 0
    exported = runner.invoke(app, ["export", "--user", "ivo"])
    assert exported.exit_code == 0, exported.output
    (line,) = [json.loads(x) for x in exported.stdout.splitlines()]
    assert line["content"] == "Ivo sails"
    file = tmp_path / "ivo.jsonl"
    file.write_text(exported.stdout)
    again = runner.invoke(app, ["import", str(file)])
    assert again.exit_code == 0 and "1 skipped" in again.stdout, again.output
    doctor = runner.invoke(app, ["doctor", "--memory", "--user", "ivo"])
    assert doctor.exit_code == 0, doctor.output
    audit = runner.invoke(app, ["audit", "--json", "--operation", "export"])
    assert audit.exit_code == 0 and json.loads(audit.stdout)[0]["user_id"] == "ivo"
