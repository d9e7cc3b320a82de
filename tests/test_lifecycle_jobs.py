"""Scheduled lifecycle jobs at their thresholds, on a fixed clock: cleanup, tiers, decay (and
its undo), audit partitions; dry runs, the safety stop, due intervals and the one-runner lock."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memvault.config import Settings
from memvault.errors import InvalidInput
from memvault.lifecycle import jobs
from memvault.service import AsyncMemory
from tests.conftest import KEY, backend_of
from tests.processes import Process, environment
from tests.waiting import wait_until

NOW = datetime(2030, 6, 15, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


async def _add(store: AsyncMemory, text: str, user: str = "u") -> Any:
    return (await store.add(text, user_id=user, infer=False)).id


def _set(raw: psycopg.Connection[Any], memory_id: Any, **values: Any) -> None:
    columns = ", ".join(f"{k} = %({k})s" for k in values)
    raw.execute(f"UPDATE memories SET {columns} WHERE id = %(id)s", {**values, "id": memory_id})


def _ids(raw: psycopg.Connection[Any]) -> set[Any]:
    return {r[0] for r in raw.execute("SELECT id FROM memories").fetchall()}


async def _age_all(raw: psycopg.Connection[Any], idle_since: datetime) -> None:
    raw.execute(
        "UPDATE memories SET created_at = %(t)s, updated_at = %(t)s, last_accessed = NULL",
        {"t": idle_since},
    )


# --- cleanup ----------------------------------------------------------------------------------


async def test_cleanup_deletes_exactly_what_expired_by_the_clock(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    gone = await _add(store, "expired a second ago")
    kept = await _add(store, "expires in a second")
    temporal_gone = await _add(store, "temporal, no longer valid")
    persistent = await _add(store, "persistent with a past valid_until")
    _set(raw, gone, expires_at=NOW - timedelta(seconds=1))
    _set(raw, kept, expires_at=NOW + timedelta(seconds=1))
    _set(raw, temporal_gone, memory_type="temporal", valid_until=NOW)
    _set(raw, persistent, valid_until=NOW - DAY)
    for n in range(6):  # enough other memories that the safety stop stays out of it
        await _add(store, f"unrelated note {n}")

    dry = await jobs.run_job(backend_of(store), "cleanup", dry_run=True, clock=at(NOW))
    assert (dry.outcome, dry.dry_run, dry.counts["would_delete"]) == ("ok", True, 2)
    assert {gone, temporal_gone} <= _ids(raw)

    run = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert run.outcome == "ok" and run.counts["deleted"] == 2
    assert gone not in _ids(raw) and temporal_gone not in _ids(raw)
    assert {kept, persistent} <= _ids(raw)
    stored = raw.execute(
        "SELECT outcome, dry_run, counts->>'deleted' FROM scheduled_runs ORDER BY id"
    ).fetchall()
    assert stored == [("ok", True, None), ("ok", False, "2")]


async def test_the_safety_stop_holds_back_a_run_that_would_touch_too_much(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(
        embedding_provider="hash", lifecycle_max_share=0.5, lifecycle_safety_min=1
    )
    async with await AsyncMemory.open(settings) as store:
        doomed = [await _add(store, f"note {n}", user="heavy") for n in range(3)]
        for memory_id in doomed[:2]:
            _set(raw, memory_id, expires_at=NOW - DAY)
        run = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert (run.outcome, run.error_code) == ("stopped", "safety_stop")
    assert run.report == [{"tenant_id": "default", "user_id": "heavy", "touched": 2, "total": 3}]
    assert set(doomed) <= _ids(raw)  # nothing was deleted


# --- tiers ------------------------------------------------------------------------------------


async def test_tiers_move_by_idleness_at_the_thresholds_and_search_filters_by_tier(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    ids = {name: await _add(store, f"{name} ledger entry") for name in ("hot", "warm", "cold")}
    ids["back"] = await _add(store, "back ledger entry")
    edge = await _add(store, "edge ledger entry")
    await _age_all(raw, NOW - 200 * DAY)
    _set(raw, ids["hot"], created_at=NOW - 200 * DAY, last_accessed=NOW - DAY)
    _set(raw, ids["warm"], last_accessed=NOW - 31 * DAY)
    _set(raw, ids["back"], tier="cold", last_accessed=NOW - DAY)
    _set(raw, edge, last_accessed=NOW - 30 * DAY)  # exactly at the threshold: stays hot
    s = backend_of(store).settings
    assert (s.tier_warm_after_days, s.tier_cold_after_days) == (30, 180)
    settings = s.model_copy(update={"lifecycle_max_share": 1.0})
    backend_of(store).settings = settings

    run = await jobs.run_job(backend_of(store), "tiers", clock=at(NOW))
    assert run.outcome == "ok", run
    tiers = dict(raw.execute("SELECT id, tier FROM memories").fetchall())
    assert tiers[ids["hot"]] == "hot" and tiers[edge] == "hot"
    assert tiers[ids["warm"]] == "warm" and tiers[ids["cold"]] == "cold"
    assert tiers[ids["back"]] == "hot"

    for recipe in ("keyword", "hybrid", "vector"):
        found = await store.search("ledger entry", user_id="u", tier="warm", recipe=recipe)
        assert [h.id for h in found.results] == [ids["warm"]], recipe
    listed = await store.list(user_id="u", tier="cold")
    assert [r.id for r in listed.results] == [ids["cold"]]


# --- decay ------------------------------------------------------------------------------------


async def test_decay_lowers_idle_importance_to_the_floor_and_undo_puts_it_back(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    backend_of(store).settings = backend_of(store).settings.model_copy(
        update={"lifecycle_max_share": 1.0}
    )
    idle, recent, at_floor, edited = [await _add(store, f"memo {n}") for n in range(4)]
    await _age_all(raw, NOW - 31 * DAY)
    for memory_id, importance in ((idle, 5), (recent, 5), (at_floor, 3), (edited, 7)):
        _set(raw, memory_id, importance=importance)
    _set(raw, recent, last_accessed=NOW - 29 * DAY)

    first = await jobs.run_job(backend_of(store), "decay", clock=at(NOW))
    assert first.counts["memory_importance"] == 2
    importance = dict(raw.execute("SELECT id, importance FROM memories").fetchall())
    assert importance == {idle: 4, recent: 5, at_floor: 3, edited: 6}

    second = await jobs.run_job(backend_of(store), "decay", clock=at(NOW + DAY))
    third = await jobs.run_job(backend_of(store), "decay", clock=at(NOW + 2 * DAY))
    assert second.counts["memory_importance"] == 2 and third.counts["memory_importance"] == 2
    importance = dict(raw.execute("SELECT id, importance FROM memories").fetchall())
    assert importance[idle] == 3  # the floor, never below
    _set(raw, edited, importance=9)  # changed since: undo leaves it

    assert first.id and second.id and third.id
    # Newest first: each run puts back what it lowered, and what changed since stays.
    assert await jobs.undo(backend_of(store), "decay", third.id) == 1  # recent (idle by then)
    assert await jobs.undo(backend_of(store), "decay", second.id) == 1
    assert await jobs.undo(backend_of(store), "decay", first.id) == 1
    importance = dict(raw.execute("SELECT id, importance FROM memories").fetchall())
    assert importance == {idle: 5, recent: 5, at_floor: 3, edited: 9}
    with pytest.raises(InvalidInput):
        await jobs.undo(backend_of(store), "decay", first.id)  # once only


# --- audit partitions ------------------------------------------------------------------------


def _partitions(raw: psycopg.Connection[Any]) -> list[str]:
    rows = raw.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'audit_log' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


async def test_audit_partitions_are_made_ahead_and_dropped_past_retention(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    old = NOW - 91 * DAY
    await jobs.run_job(backend_of(store), "audit_partitions", clock=at(old))
    assert "audit_log_p20300316" in _partitions(raw)
    dry = await jobs.run_job(backend_of(store), "audit_partitions", dry_run=True, clock=at(NOW))
    assert dry.counts["create"] == ["2030-06-15", "2030-06-16", "2030-06-17", "2030-06-18"]
    assert dry.counts["drop"] == ["2030-03-16"]
    assert "audit_log_p20300615" not in _partitions(raw)

    await jobs.run_job(backend_of(store), "audit_partitions", clock=at(NOW))
    made = _partitions(raw)
    assert "audit_log_p20300316" not in made
    assert "audit_log_p20300317" in made  # 90 days back: kept
    assert {"audit_log_p20300615", "audit_log_p20300618"} <= set(made)
    # The app role reaches partitions only through audit_log and its row-level policy.
    grants = raw.execute(
        "SELECT has_table_privilege('memvault_app', 'audit_log_p20300615', 'SELECT')"
    ).fetchone()
    assert grants == (False,)


# --- when jobs run, and who runs them ---------------------------------------------------------


async def test_a_job_runs_when_due_and_not_before(store: AsyncMemory) -> None:
    backend = backend_of(store)
    daily = {n for n, j in jobs.JOBS.items() if j.interval_s(backend.settings) == 86_400}
    assert daily >= {"cleanup", "tiers", "decay", "audit_partitions"}
    first = {r.job for r in await jobs.run_due(backend, clock=at(NOW))}
    assert first == set(jobs.JOBS)
    # Jobs on a shorter interval (consolidate: 15 minutes) run in between; the daily ones not.
    between = await jobs.run_due(backend, clock=at(NOW + DAY - timedelta(seconds=1)))
    assert not daily & {r.job for r in between}
    again = await jobs.run_due(backend, clock=at(NOW + DAY))
    assert {r.job for r in again} >= daily
    listed = {s.name: s for s in await jobs.statuses(backend, clock=at(NOW + DAY))}
    assert listed["decay"].next_due == NOW + 2 * DAY and listed["decay"].undo
    assert listed["cleanup"].last_run is not None and listed["cleanup"].last_run.outcome == "ok"


async def test_a_held_job_is_skipped_not_run_twice(store: AsyncMemory, database_url: str) -> None:
    key = "hashtextextended('memvault.schedule:tiers', 0)"
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute(f"SELECT pg_advisory_lock({key})")
        run = await jobs.run_job(backend_of(store), "tiers", clock=at(NOW))
        # Released here, not by closing: the server ends a closed session a moment later, and
        # a run in that moment would still find the job held.
        holder.execute(f"SELECT pg_advisory_unlock({key})")
    assert (run.outcome, run.id) == ("skipped", None)
    assert (await jobs.run_job(backend_of(store), "tiers", clock=at(NOW))).outcome == "ok"


def test_two_worker_processes_run_each_job_once_per_interval(
    database_url: str, tmp_path: Path, raw: psycopg.Connection[Any]
) -> None:
    env = environment(
        tmp_path / "data",
        database_url=database_url,
        encryption_key=KEY,
        schedule_tick_s=0.05,
        cleanup_interval_s=1,
        tiers_interval_s=1,
        decay_interval_s=1,
        audit_partitions_interval_s=1,
        patterns_interval_s=1,
        promote_interval_s=1,
        consolidate_interval_s=1,
    )
    workers = [Process(["worker"], env, tmp_path / f"worker{n}.log") for n in range(2)]

    def every_job_ran_twice() -> bool:
        counts = dict(
            raw.execute(
                "SELECT job, count(*) FROM scheduled_runs WHERE finished_at IS NOT NULL "
                "GROUP BY job"
            ).fetchall()
        )
        return all(counts.get(job, 0) >= 2 for job in jobs.JOBS)

    try:
        wait_until(every_job_ran_twice, 90, "every job did not run twice", interval=0.2)
    finally:
        for worker in workers:
            worker.stop()
    rows = raw.execute(
        "SELECT job, started_at, finished_at FROM scheduled_runs ORDER BY job, started_at"
    ).fetchall()
    by_job: dict[str, list[tuple[datetime, datetime]]] = {}
    for job, started, finished in rows:
        by_job.setdefault(job, []).append((started, finished))
    assert set(by_job) == set(jobs.JOBS), workers[0].log.read_text()[-2000:]
    for job, runs in by_job.items():
        assert len(runs) >= 2, job
        for (start, end), (next_start, _) in itertools.pairwise(runs):
            assert end is not None and end <= next_start, job  # never two at once
            assert next_start - start >= timedelta(seconds=1), job  # once per interval


@pytest.mark.parametrize("by", ["scheduled job", "memvault cleanup"])
async def test_the_cleanup_job_and_the_cleanup_command_delete_the_same_memories(
    store: AsyncMemory, raw: psycopg.Connection[Any], by: str
) -> None:
    from memvault.admin import AsyncAdmin

    now = datetime.now(UTC)
    gone = await _add(store, "expired a minute ago")
    temporal_gone = await _add(store, "temporal, valid until yesterday")
    tomorrow = await _add(store, "expires tomorrow")
    persistent = await _add(store, "persistent with a past valid_until")
    for n in range(6):  # enough other memories that the job's safety stop stays out of it
        await _add(store, f"unrelated note {n}")
    _set(raw, gone, expires_at=now - timedelta(minutes=1))
    _set(raw, temporal_gone, memory_type="temporal", valid_until=now - DAY)
    _set(raw, tomorrow, expires_at=now + DAY)
    _set(raw, persistent, valid_until=now - DAY)
    before = _ids(raw)

    if by == "scheduled job":
        run = await jobs.run_job(backend_of(store), "cleanup", clock=at(now))
        deleted = run.counts["deleted"]
    else:
        deleted = await AsyncAdmin.of(store).purge_expired()
    assert deleted == 2
    assert before - _ids(raw) == {gone, temporal_gone}
