"""The lifecycle's tenant tables (decay records, the audit log and its partitions) are
isolated by row-level security like every other, and its routes answer 404 for another
tenant's ids."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.exc import DBAPIError

from memvault import auth
from memvault.api import create_app
from memvault.config import Settings
from memvault.db.tenancy import tenant_scope
from memvault.lifecycle import jobs
from memvault.service import AsyncMemory
from tests.conftest import backend_of


async def test_lifecycle_tables_show_and_change_only_the_current_tenant(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(embedding_provider="hash", lifecycle_max_share=1.0)
    async with await AsyncMemory.open(settings) as store:
        for tenant in ("acme", "globex"):
            await store.for_tenant(tenant).add(f"{tenant} memo", user_id="u", infer=False)
        raw.execute(
            "UPDATE memories SET importance = 6, created_at = now() - interval '60 days',"
            " updated_at = now() - interval '60 days'"
        )
        run = await jobs.run_job(backend_of(store), "decay", clock=lambda: datetime.now(UTC))
        assert run.counts["memory_importance"] == 2
        await store.flush_audit()
        engine = backend_of(store).engine
        with tenant_scope("acme"):
            async with engine.begin() as conn:
                for table in ("decay_changes", "audit_log"):
                    seen = await conn.execute(sa.text(f"SELECT DISTINCT tenant_id FROM {table}"))
                    assert set(seen.scalars()) == {"acme"}, table
                    for statement in (
                        f"UPDATE {table} SET tenant_id = 'acme' WHERE tenant_id = 'globex'",
                        f"DELETE FROM {table} WHERE tenant_id = 'globex'",
                    ):
                        assert (await conn.execute(sa.text(statement))).rowcount == 0
            day = datetime.now(UTC).strftime("%Y%m%d")
            with pytest.raises(DBAPIError, match="permission denied"):
                async with engine.begin() as conn:  # a partition is reached only via audit_log
                    await conn.execute(sa.text(f"SELECT * FROM audit_log_p{day}"))
    left = raw.execute("SELECT tenant_id, count(*) FROM decay_changes GROUP BY 1 ORDER BY 1")
    assert left.fetchall() == [("acme", 1), ("globex", 1)]


def test_lifecycle_routes_answer_404_for_another_tenants_ids(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(auth="required", embedding_provider="hash")
    with TestClient(create_app(settings)) as api:
        engine = backend_of(api.app.state.memory).engine  # type: ignore[attr-defined]

        def key(tenant: str) -> dict[str, str]:
            created = api.portal.call(auth.create_key, engine, tenant, "read,write,admin", None)  # type: ignore[union-attr]
            return {"Authorization": f"Bearer {created.key}"}

        acme, globex = key("acme"), key("globex")
        body = {"content": "globex secret", "user_id": "u", "infer": False}
        theirs = api.post("/v1/memories", json=body, headers=globex).json()["id"]
        gone = api.post("/v1/deletions", json={"user_id": "u", "memory_id": theirs}, headers=acme)
        assert gone.status_code == 404
        archive = {"user_id": "u", "action": "archive", "memory_ids": [theirs]}
        answer = api.post("/v1/health/memory/actions", json=archive, headers=acme)
        assert answer.json()["changed"] == 0
        delete = {**archive, "action": "delete"}
        assert api.post("/v1/health/memory/actions", json=delete, headers=acme).status_code == 404
        assert api.get("/v1/export", params={"user_id": "u"}, headers=acme).json() == {
            "results": []
        }
        erased = api.delete("/v1/admin/tenant", headers=acme).json()
        assert erased["tenant_id"] == "acme" and erased["memories"] == 0
        mine = api.get(f"/v1/memories/{theirs}", params={"user_id": "u"}, headers=globex)
        assert mine.json()["content"] == "globex secret"
