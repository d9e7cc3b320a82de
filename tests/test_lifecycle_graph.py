"""The graph's lifecycle on a fixed clock: consolidate (turns through the extractor, dry run,
idempotent, lag probe and metrics), entity salience and inferred-fact confidence decay at
their thresholds and their undo, low-salience entity cleanup with the graph's cascades, the
open-reviews probe, and the export/import round trip of a user's facts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memvault.config import Settings
from memvault.lifecycle import jobs
from memvault.metrics import CONSOLIDATION_BACKLOG
from memvault.service import AsyncMemory
from tests.conftest import backend_of

NOW = datetime(2030, 6, 15, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
TALK = [
    {"role": "user", "content": "My sister is called Maria."},
    {"role": "assistant", "content": "Nice to know about Maria."},
    {"role": "user", "content": "Caroline moved to Paris."},
]


def at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    yield opened
    await opened.close()


def _count(raw: psycopg.Connection[Any], sql: str, *params: Any) -> int:
    return int(raw.execute(sql, params).fetchone()[0])  # type: ignore[index]


async def _conversation(store: AsyncMemory, user: str = "ann") -> Any:
    convo = await store.start_conversation(user_id=user)
    await store.add_turns(convo.id, TALK, user_id=user, wait=True)
    return convo.id


def _forget_graph(raw: psycopg.Connection[Any]) -> None:
    """As if the turns had been stored without extraction (a background add, a store from
    before extraction at write): the memories stay, nothing is derived from them, and the
    conversations' watermarks are back at their start."""
    raw.execute("DELETE FROM entities")
    raw.execute("UPDATE conversations SET consolidated_turns = 0, consolidated_at = NULL")


# --- consolidate -------------------------------------------------------------------------------


async def test_consolidate_derives_the_turns_facts_once_and_marks_the_conversation(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    first = await _conversation(store)
    second = await _conversation(store, user="bob")
    _forget_graph(raw)
    assert _count(raw, "SELECT count(*) FROM facts") == 0

    dry = await jobs.run_job(backend_of(store), "consolidate", dry_run=True, clock=at(NOW))
    assert dry.outcome == "ok"
    assert dry.counts == {"would_consolidate": 2, "would_extract": 6}
    assert _count(raw, "SELECT count(*) FROM facts") == 0

    health = await store.memory_health(user_id="ann")
    lag = next(f for f in health.findings if f.kind == "consolidation_lag")
    assert lag.count == len(TALK) and "in 1 conversation" in lag.recommendation

    run = await jobs.run_job(backend_of(store), "consolidate", clock=at(NOW))
    assert run.outcome == "ok", run
    assert run.counts["conversations"] == 2 and run.counts["turns_extracted"] == 6
    assert run.counts["turns_with_facts"] >= 2
    facts = _count(raw, "SELECT count(*) FROM facts")
    sources = _count(raw, "SELECT count(*) FROM fact_sources")
    assert facts >= 2 and sources >= 2
    stamped = raw.execute(
        "SELECT id, consolidated_at FROM conversations WHERE id IN (%s, %s)", (first, second)
    ).fetchall()
    assert {r[1] for r in stamped} == {NOW}
    assert CONSOLIDATION_BACKLOG._value.get() == 0
    health = await store.memory_health(user_id="ann")
    assert "consolidation_lag" not in {f.kind for f in health.findings}

    again = await jobs.run_job(backend_of(store), "consolidate", clock=at(NOW + DAY))
    assert again.counts == {
        "conversations": 0,
        "turns_extracted": 0,
        "turns_with_facts": 0,
        "skipped": 0,
    }
    assert _count(raw, "SELECT count(*) FROM facts") == facts
    assert _count(raw, "SELECT count(*) FROM fact_sources") == sources
    stamped_again = raw.execute("SELECT DISTINCT consolidated_at FROM conversations").fetchall()
    assert stamped_again == [(NOW,)]


async def test_consolidate_skips_turns_that_already_have_facts(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await _conversation(store)
    await jobs.run_job(backend_of(store), "consolidate", clock=at(NOW))
    before = _count(raw, "SELECT count(*) FROM facts")
    with_facts = _count(raw, "SELECT count(DISTINCT memory_id) FROM fact_sources")
    assert before >= 2 and with_facts >= 2
    raw.execute("UPDATE conversations SET consolidated_at = NULL, consolidated_turns = 0")
    run = await jobs.run_job(backend_of(store), "consolidate", clock=at(NOW + DAY))
    assert run.counts["conversations"] == 1
    assert run.counts["turns_extracted"] == len(TALK) - with_facts
    assert _count(raw, "SELECT count(*) FROM facts") == before


# --- decay -------------------------------------------------------------------------------------


async def _graph(store: AsyncMemory, raw: psycopg.Connection[Any]) -> None:
    await store.add("Caroline moved to Paris.", user_id="ann", wait=True)
    await store.add("Dave works at Acme.", user_id="ann", wait=True)
    await store.add("My sister is called Maria.", user_id="ann", wait=True)
    assert _count(raw, "SELECT count(*) FROM entities") >= 3


async def test_entity_salience_decays_past_the_idle_threshold_and_undo_restores_it(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await _graph(store, raw)
    raw.execute("UPDATE entities SET salience = 0.8, last_accessed = NULL, first_seen = %s", (NOW,))
    idle, fresh = raw.execute("SELECT id FROM entities ORDER BY id LIMIT 2").fetchall()
    # One second past the threshold decays; exactly at it does not.
    raw.execute(
        "UPDATE entities SET first_seen = %s WHERE id = %s",
        (NOW - timedelta(hours=24, seconds=1), idle[0]),
    )
    raw.execute(
        "UPDATE entities SET last_accessed = %s WHERE id = %s",
        (NOW - timedelta(hours=24), fresh[0]),
    )
    run = await jobs.run_job(backend_of(store), "decay", clock=at(NOW))
    assert run.outcome == "ok" and run.counts["entity_salience"] == 1
    salience = dict(raw.execute("SELECT id, salience FROM entities").fetchall())
    assert salience[idle[0]] == pytest.approx(0.8 * 0.95)
    assert salience[fresh[0]] == pytest.approx(0.8)
    logged = raw.execute(
        "SELECT old_value, new_value FROM decay_changes WHERE target = 'entity_salience'"
    ).fetchall()
    assert logged == [(pytest.approx(0.8), pytest.approx(0.76))]

    assert await jobs.undo(backend_of(store), "decay", run.id or 0) == sum(run.counts.values())
    assert raw.execute("SELECT salience FROM entities WHERE id = %s", idle).fetchone() == (
        pytest.approx(0.8),
    )


async def test_inferred_confidence_decays_weekly_to_the_floor_and_explicit_does_not(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    settings = make_settings(embedding_provider="hash", fact_decay_rate=0.5, fact_decay_floor=0.3)
    store = await AsyncMemory.open(settings)
    try:
        await _graph(store, raw)
        inferred, uncertain, explicit = raw.execute(
            "SELECT id FROM facts ORDER BY id LIMIT 3"
        ).fetchall()
        raw.execute("UPDATE facts SET certainty = 'explicit', confidence = 0.9")
        raw.execute(
            "UPDATE facts SET certainty = 'inferred', confidence = 0.7 WHERE id = %s", inferred
        )
        raw.execute(
            "UPDATE facts SET certainty = 'uncertain', confidence = 0.32 WHERE id = %s", uncertain
        )
        run = await jobs.run_job(backend_of(store), "decay", clock=at(NOW))
        assert run.counts["fact_confidence"] == 2
        confidence = dict(raw.execute("SELECT id, confidence FROM facts").fetchall())
        # Daily runs of a weekly rate: 0.5 ** (1/7) per run; never below the floor.
        assert confidence[inferred[0]] == pytest.approx(0.7 * 0.5 ** (1 / 7))
        assert confidence[uncertain[0]] == pytest.approx(0.3)
        assert confidence[explicit[0]] == pytest.approx(0.9)
        for n in range(1, 30):
            await jobs.run_job(backend_of(store), "decay", clock=at(NOW + n * DAY))
        assert raw.execute("SELECT confidence FROM facts WHERE id = %s", inferred).fetchone() == (
            pytest.approx(0.3),
        )
        # Changed again by later runs: the first run's undo leaves the value as it is now.
        await jobs.undo(backend_of(store), "decay", run.id or 0)
        assert raw.execute("SELECT confidence FROM facts WHERE id = %s", inferred).fetchone() == (
            pytest.approx(0.3),
        )
    finally:
        await store.close()


async def test_undo_of_fact_decay_restores_confidence(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await _graph(store, raw)
    raw.execute("UPDATE facts SET certainty = 'inferred', confidence = 0.6")
    total = _count(raw, "SELECT count(*) FROM facts")
    run = await jobs.run_job(backend_of(store), "decay", clock=at(NOW))
    assert run.counts["fact_confidence"] == total
    assert _count(raw, "SELECT count(*) FROM facts WHERE confidence < 0.6") == total
    assert await jobs.undo(backend_of(store), "decay", run.id or 0) >= total
    assert _count(raw, "SELECT count(*) FROM facts WHERE confidence = 0.6") == total


# --- cleanup -----------------------------------------------------------------------------------


async def test_cleanup_deletes_low_salience_idle_entities_with_their_facts(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await _graph(store, raw)
    raw.execute("UPDATE entities SET salience = 0.5, last_accessed = NULL, first_seen = %s", (NOW,))
    doomed = raw.execute(
        "SELECT subject_id FROM facts WHERE object_id IS NOT NULL LIMIT 1"
    ).fetchone()
    assert doomed is not None
    raw.execute(
        "UPDATE entities SET salience = 0.09, first_seen = %s WHERE id = %s",
        (NOW - timedelta(days=30, seconds=1), doomed[0]),
    )
    # Low salience but accessed within the 30 days: kept.
    raw.execute(
        "UPDATE entities SET salience = 0.05, last_accessed = %s WHERE id <> %s",
        (NOW - timedelta(days=30), doomed[0]),
    )
    naming = _count(
        raw, "SELECT count(*) FROM facts WHERE %s IN (subject_id, object_id)", doomed[0]
    )
    dry = await jobs.run_job(backend_of(store), "cleanup", dry_run=True, clock=at(NOW))
    assert dry.counts["entities.would_delete_entities"] == 1
    assert dry.counts["entities.would_delete_facts"] == naming >= 1
    entities = _count(raw, "SELECT count(*) FROM entities")

    run = await jobs.run_job(backend_of(store), "cleanup", clock=at(NOW))
    assert run.outcome == "ok" and run.counts["entities.deleted"] == 1
    assert _count(raw, "SELECT count(*) FROM entities") == entities - 1
    assert (
        _count(raw, "SELECT count(*) FROM facts WHERE %s IN (subject_id, object_id)", doomed[0])
        == 0
    )
    assert _count(raw, "SELECT count(*) FROM entity_mentions WHERE entity_id = %s", doomed[0]) == 0
    assert _count(raw, "SELECT count(*) FROM memories") == 3  # the memories stay


# --- reviews probe ----------------------------------------------------------------------------


async def test_open_fact_reviews_show_in_health_with_the_route_that_lists_them(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    await _graph(store, raw)
    health = await store.memory_health(user_id="ann")
    assert "contradictions_awaiting_review" not in {f.kind for f in health.findings}
    one, two = raw.execute("SELECT id FROM facts ORDER BY id LIMIT 2").fetchall()
    raw.execute(
        "INSERT INTO fact_reviews (tenant_id, id, user_id, fact_id, conflicts_with, reason) "
        "SELECT tenant_id, gen_random_uuid(), user_id, %s, %s, 'contradiction' FROM facts "
        "WHERE id = %s",
        (one[0], two[0], one[0]),
    )
    health = await store.memory_health(user_id="ann")
    found = next(f for f in health.findings if f.kind == "contradictions_awaiting_review")
    assert found.count == 1 and found.action is not None
    assert (found.action.method, found.action.path) == ("GET", "/v1/facts/reviews")
    assert len(await store.fact_reviews(user_id="ann")) == 1
    assert (await store.memory_health(user_id="bob")).findings == []


# --- export and import ------------------------------------------------------------------------

_FACT_COLUMNS = (
    "id, user_id, subject_id, predicate, object_id, confidence, certainty, temporal, "
    "valid_from, valid_until, recorded_at, superseded_at, superseded_by, embedding::text, "
    "embedding_model"
)


def _facts(raw: psycopg.Connection[Any], tenant: str) -> list[tuple[Any, ...]]:
    return raw.execute(
        f"SELECT {_FACT_COLUMNS} FROM facts WHERE tenant_id = %s ORDER BY id", (tenant,)
    ).fetchall()


async def test_export_then_import_round_trips_current_and_superseded_facts(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    source, target = store.for_tenant("old"), store.for_tenant("new")
    await source.add("Caroline moved to Paris.", user_id="ann")
    await source.add("Dave works at Acme.", user_id="ann")
    await source.add("Bob lives in Rome.", user_id="bob")
    old, new = raw.execute(
        "SELECT id FROM facts WHERE tenant_id = 'old' AND user_id = 'ann' ORDER BY id LIMIT 2"
    ).fetchall()
    # A fact replaced by a newer one is kept, with both time axes closed.
    raw.execute(
        "UPDATE facts SET superseded_at = %s, superseded_by = %s, valid_until = %s, "
        "valid_from = %s WHERE id = %s",
        (NOW, new[0], NOW - DAY, NOW - 30 * DAY, old[0]),
    )
    before = _facts(raw, "old")
    assert any(r[11] is not None for r in before) and any(r[11] is None for r in before)
    assert all(r[13] is not None for r in before), "facts have vectors"

    lines = json.loads(json.dumps(await source.export_memories(user_id="ann")))
    await target.import_memories(lines)
    after = _facts(raw, "new")
    ann_before = [r for r in before if r[1] == "ann"]
    assert after == ann_before
    assert _count(raw, "SELECT count(*) FROM fact_sources WHERE tenant_id = 'new'") == _count(
        raw, "SELECT count(*) FROM fact_sources WHERE tenant_id = 'old' AND user_id = 'ann'"
    )
    assert _count(raw, "SELECT count(*) FROM fact_terms WHERE tenant_id = 'new'") > 0
    # Opened under the new tenant: the texts were sealed again, not copied.
    current = {f.claim for f in await target.facts(user_id="ann")}
    assert current == {f.claim for f in await source.facts(user_id="ann")}
    assert len(current) == len(ann_before) - 1
    history = await target.facts(user_id="ann", include_superseded=True)
    assert {f.claim for f in history} == {
        f.claim for f in await source.facts(user_id="ann", include_superseded=True)
    }
    assert len(history) == len(ann_before)

    await target.import_memories(lines)  # twice is harmless
    assert _facts(raw, "new") == after


async def test_consolidate_and_batches_naming_the_same_people_never_deadlock(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    """Consolidate writes a batch of turns' graph in one transaction, as a batch add does:
    locking each turn's names in turn, it held some while a batch add waited for them and
    waited for the batch's: PostgreSQL failed one of them (a 503 to the caller)."""
    people = ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus", "Hal"]
    towns = ["Paris", "Rome", "Oslo", "Lima", "Bern", "Kyiv", "Riga", "Baku"]
    moves = list(zip(people, towns, strict=True))
    for round_ in range(3):
        convo = await store.start_conversation(user_id="ann")
        talk = [{"role": "user", "content": f"{p} moved to {t}."} for p, t in moves]
        await store.add_turns(convo.id, talk, user_id="ann", wait=True)
        _forget_graph(raw)
        batches = [
            [
                {"content": f"{p} moved to {t} in {2000 + round_ * 10 + n}.", "user_id": "ann"}
                for p, t in (moves[::-1] if n % 2 else moves)
            ]
            for n in range(4)
        ]
        run, *_ = await asyncio.gather(
            jobs.run_job(backend_of(store), "consolidate", clock=at(NOW + round_ * DAY)),
            *(store.add_many(batch) for batch in batches),
        )
        assert run.outcome == "ok", run


async def test_one_tenants_bad_record_stops_no_other_tenants_consolidation(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    ours = await _conversation(store)
    theirs = store.for_tenant("mallory")
    await _conversation(theirs)
    _forget_graph(raw)
    # A record of theirs the store cannot use: a turn whose sealed text no longer opens.
    raw.execute(
        "UPDATE memories SET nonce = decode(repeat('00', 12), 'hex') WHERE tenant_id = 'mallory'"
    )
    run = await jobs.run_job(backend_of(store), "consolidate", clock=at(NOW))
    assert run.outcome == "ok", run
    assert run.counts["conversations"] == 1 and run.counts["skipped"] == 1
    consolidated = raw.execute(
        "SELECT tenant_id, consolidated_turns FROM conversations ORDER BY tenant_id"
    ).fetchall()
    assert consolidated == [("default", len(TALK)), ("mallory", 0)]
    assert _count(raw, "SELECT count(*) FROM facts WHERE tenant_id = 'default'") >= 2
    assert ours
