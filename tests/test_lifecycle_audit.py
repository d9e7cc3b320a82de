"""The audit log: what each level records, the sealed query text of ``verbose``, partitions
made as rows arrive, the settings snapshot, cross-channel matches, the admin route (tenant-
limited) and key rotation of sealed queries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from memvault import auth
from memvault.admin import AsyncAdmin
from memvault.api import create_app
from memvault.config import Settings
from memvault.crypto.envelope import generate_key
from memvault.service import AsyncMemory
from tests.conftest import backend_of


async def _activity(store: AsyncMemory) -> Any:
    added = await store.add("Dana drinks oolong tea", user_id="dana", infer=False)
    await store.update(added.id, user_id="dana", content="Dana drinks jasmine tea")
    await store.search("what tea does Dana drink", user_id="dana")
    await store.get(added.id, user_id="dana")
    await store.list(user_id="dana")
    await store.delete(added.id, user_id="dana")
    return added


async def _operations(make_settings: Callable[..., Settings], level: str) -> list[tuple[str, str]]:
    settings = make_settings(embedding_provider="hash", audit_level=level)
    async with await AsyncMemory.open(settings) as opened:
        store = opened.for_tenant(f"tenant-{level}")  # each level's rows apart
        await _activity(store)
        page = await store.audit_log(limit=100)
    return sorted((e.operation, e.details.get("via", "")) for e in page.results)


async def test_each_level_records_what_it_names(make_settings: Callable[..., Settings]) -> None:
    assert await _operations(make_settings, "off") == []
    writes = [("delete", ""), ("store", ""), ("update", "")]
    assert await _operations(make_settings, "writes") == writes
    reads = [("retrieve", ""), ("retrieve", "get"), ("retrieve", "list")]
    assert await _operations(make_settings, "reads") == sorted(writes + reads)


async def test_verbose_seals_the_query_and_rows_carry_their_context(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(embedding_provider="hash", audit_level="verbose")
    async with await AsyncMemory.open(settings) as store:
        await store.add("Eli hikes on Sundays", user_id="eli", channel="home", infer=False)
        await store.add("Eli reviews code", user_id="eli", channel="work", infer=False)
        found = await store.search("when does Eli hike", user_id="eli")
        (entry,) = (await store.audit_log(operation="retrieve")).results
    assert entry.query == "when does Eli hike"
    assert entry.result_count == len(found.results) == 2
    assert set(entry.memory_ids) == {h.id for h in found.results}
    assert entry.target_channel == "home,work"  # matches from channels not asked for
    assert entry.latency_ms is not None and entry.latency_ms > 0
    assert entry.success and entry.actor == "library" and entry.user_id == "eli"
    stored = raw.execute("SELECT t::text FROM audit_log t").fetchall()
    assert stored and not any("hike" in row[0] for row in stored)  # never in plaintext
    snapshot = raw.execute(
        "SELECT snapshot FROM audit_settings WHERE id = decode(%s, 'hex')", (entry.settings_id,)
    ).fetchone()
    assert snapshot is not None and snapshot[0]["audit_level"] == "verbose"
    assert "encryption_key" not in snapshot[0] and "database_url" not in snapshot[0]
    partitions = raw.execute(
        "SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent "
        "WHERE p.relname = 'audit_log'"
    ).fetchone()
    assert partitions is not None and partitions[0] >= 2  # today's and tomorrow's


async def test_a_failed_call_is_audited_with_its_error_code(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(embedding_provider="hash", audit_level="reads")
    async with await AsyncMemory.open(settings) as store:
        missing = "00000000-0000-0000-0000-000000000001"
        try:
            await store.get(missing, user_id="nobody")
        except Exception as exc:
            assert type(exc).__name__ == "NotFound"
        (entry,) = (await store.audit_log(operation="retrieve")).results
    assert (entry.success, entry.error_code) == (False, "not_found")


async def test_rotation_reseals_audited_queries(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    old_key, new_key = generate_key(), generate_key()
    before = make_settings(embedding_provider="hash", audit_level="verbose", encryption_key=old_key)
    async with await AsyncMemory.open(before) as store:
        await store.add("Fay plays chess", user_id="fay", infer=False)
        await store.search("what does Fay play", user_id="fay")
        await store.flush_audit()
    during = make_settings(
        embedding_provider="hash",
        audit_level="verbose",
        encryption_key=new_key,
        encryption_old_keys=old_key,
    )
    async with await AsyncMemory.open(during) as store:
        await AsyncAdmin.of(store).rotate_encryption_key(reload_grace_s=0)
    after = make_settings(embedding_provider="hash", audit_level="verbose", encryption_key=new_key)
    async with await AsyncMemory.open(after) as store:
        (entry,) = (await store.audit_log(operation="retrieve")).results
        assert entry.query == "what does Fay play"
        active = backend_of(store).keys.current().active.key_id
    keys = raw.execute("SELECT DISTINCT query_key_id FROM audit_log WHERE query_key_id IS NOT NULL")
    assert keys.fetchall() == [(active,)]


def test_the_audit_route_is_admin_only_and_sees_only_its_tenant(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(auth="required", embedding_provider="hash", audit_level="reads")
    with TestClient(create_app(settings)) as api:
        engine = backend_of(api.app.state.memory).engine  # type: ignore[attr-defined]

        def key(tenant: str, scopes: str) -> dict[str, str]:
            created = api.portal.call(auth.create_key, engine, tenant, scopes, None)  # type: ignore[union-attr]
            return {"Authorization": f"Bearer {created.key}"}

        acme, globex = key("acme", "read,write,admin"), key("globex", "read,write,admin")
        for headers, text in ((acme, "acme plan"), (globex, "globex plan")):
            body = {"content": text, "user_id": "u", "infer": False}
            assert api.post("/v1/memories", json=body, headers=headers).status_code == 201
        writer = key("acme", "read,write")
        assert api.get("/v1/audit", headers=writer).status_code == 403
        answer = api.get("/v1/audit", params={"operation": "store"}, headers=acme)
        assert answer.status_code == 200
        rows = answer.json()["results"]
        assert len(rows) == 1 and rows[0]["user_id"] == "u"
        stored_id = api.get("/v1/memories", params={"user_id": "u"}, headers=acme).json()
        assert rows[0]["memory_ids"] == [stored_id["results"][0]["id"]]
        assert api.get("/v1/audit", params={"user_id": "nobody"}, headers=acme).json() == {
            "results": []
        }
        bad = api.get("/v1/audit", params={"operation": "drop"}, headers=acme)
        assert bad.status_code == 422


async def test_stores_carry_their_session_and_dedup_outcome_and_metrics_count(
    make_settings: Callable[..., Settings],
) -> None:
    from prometheus_client import REGISTRY

    from memvault.lifecycle import jobs

    def runs() -> float:
        labels = {"job": "tiers", "outcome": "ok"}
        return REGISTRY.get_sample_value("memvault_scheduled_runs_total", labels) or 0.0

    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        messages = [{"role": "user", "content": "Gil loves figs"}]
        await store.add_messages(messages, user_id="gil", session_id="s-1")
        # The turn is what was said: a memory saying the same is not folded into it, but a
        # second such memory is folded into the first.
        for _ in range(2):
            await store.add("Gil loves figs", user_id="gil", metadata={"session_id": "s-1"})
        entries = (await store.audit_log(operation="store")).results
        assert {e.session_id for e in entries} == {"s-1"}
        outcomes = sorted(a for e in entries for a in e.details["dedup"])
        assert outcomes == ["duplicate_exact", "stored_new", "stored_new"]
        before = runs()
        await jobs.run_job(backend_of(store), "tiers")
        assert runs() == before + 1
