"""No tenant can stop shared machinery: a scheduled job that meets a record it cannot handle
(a row altered behind the store's back, say) skips that record, reports it in the run and in
the owner's memory health, and does the rest, for every other tenant."""

from __future__ import annotations

from typing import Any

import psycopg

from memvault import AsyncMemory
from memvault.lifecycle import jobs
from tests.conftest import backend_of
from tests.test_graph_promotion import _fact_in_conversations, _global, _set


def _corrupt_memory(raw: psycopg.Connection[Any], memory_id: Any) -> None:
    raw.execute(
        "UPDATE memories SET ciphertext = decode('deadbeef', 'hex') WHERE id = %s", (memory_id,)
    )


def _expire(raw: psycopg.Connection[Any], memory_id: Any) -> None:
    raw.execute(
        "UPDATE memories SET expires_at = now() - interval '1 day' WHERE id = %s", (memory_id,)
    )


async def test_a_memory_that_cannot_be_opened_is_still_erased(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    broken = await memory.add("a note that will be altered", user_id="ann", infer=False)
    _corrupt_memory(raw, broken.id)
    receipt = await memory.erase(broken.id, user_id="ann")
    assert receipt.memories == 1
    left = raw.execute("SELECT count(*) FROM memories WHERE id = %s", (broken.id,)).fetchone()
    assert left == (0,)


async def test_cleanup_is_not_stopped_by_one_tenants_altered_row(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    mallory, victim = memory.for_tenant("mallory"), memory.for_tenant("victim")
    broken = await mallory.add("expired and altered", user_id="m", infer=False)
    fine = await victim.add("expired and fine", user_id="v", infer=False)
    kept = await victim.add("not expired", user_id="v", infer=False)
    for memory_id in (broken.id, fine.id):
        _expire(raw, memory_id)
    _corrupt_memory(raw, broken.id)

    run = await jobs.run_job(backend_of(memory), "cleanup")

    assert run.outcome == "ok", run
    remaining = {r[0] for r in raw.execute("SELECT id FROM memories").fetchall()}
    assert fine.id not in remaining and kept.id in remaining
    assert broken.id not in remaining  # deleted though it could not be read


async def test_the_promote_job_skips_a_fact_it_cannot_promote_and_reports_it(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    mallory, victim = memory.for_tenant("mallory"), memory.for_tenant("victim")
    broken = await _fact_in_conversations(mallory, 2)
    fine = await _fact_in_conversations(victim, 2)
    for fact in (broken, fine):
        _set(raw, fact, 0.99, 40)
    raw.execute(
        "UPDATE facts SET claim_ciphertext = decode('deadbeef', 'hex') WHERE id = %s",
        (broken.id,),
    )

    run = await jobs.run_job(backend_of(memory), "promote")

    assert run.outcome == "ok", run
    assert run.counts["promoted"] == 1
    assert [source for _, source in _global(raw)] == [fine.id]
    (skipped,) = run.counts["skipped_records"]
    assert skipped == {
        "tenant_id": "mallory",
        "user_id": "ann",
        "record": str(broken.id),
        "error_code": "key_mismatch",
    }
    # The owner sees it in memory health; no one else does.
    health = await mallory.memory_health(user_id="ann")
    (finding,) = [f for f in health.findings if f.kind == "skipped_by_jobs"]
    assert finding.count == 1 and "promote" in finding.recommendation
    assert str(broken.id) not in finding.recommendation
    assert not [
        f
        for f in (await victim.memory_health(user_id="ann")).findings
        if f.kind == "skipped_by_jobs"
    ]
