"""Large batches: every item stored and answered while the caller still listens, the items a
deadline leaves over finished by the worker with the same dedup, enrichment and facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from memvault import AsyncMemory, Settings
from memvault.api.app import create_app
from memvault.deadline import answer_within
from tests.made_up import made_up_texts
from tests.waiting import wait_for, wait_until


async def test_a_batch_past_its_deadline_stores_every_item_and_leaves_the_rest_to_the_worker(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(make_settings(run_worker=True))
    try:
        items: list[dict[str, Any]] = [
            {"content": t, "user_id": "ann"} for t in made_up_texts(120, 1)
        ]
        items[110] = dict(items[10])  # the same text in the part left to the worker
        with answer_within(0.0):  # out of time from the start: one slice, then the worker
            results = await memory.add_many(items)
        assert len(results) == 120 and len({r.id for r in results}) == 120
        settled = [r for r in results if r.dedup.action != "pending"]
        assert len(settled) == 100 and all(r.embedded for r in settled)
        assert all(not r.embedded for r in results[100:])

        def all_settled() -> bool:
            return raw.execute(
                "SELECT count(*) = 0 FROM memories WHERE user_id = 'ann' AND NOT embedded"
            ).fetchone() == (True,)

        await wait_for(all_settled, 120, "the worker never settled the rest of the batch")
        stored = {row[0] for row in raw.execute("SELECT id FROM memories WHERE user_id = 'ann'")}
        # The late copy was folded into the first, as inline dedup would have done.
        assert results[10].id in stored and results[110].id not in stored
        assert {r.id for r in results[100:110]} <= stored
    finally:
        await memory.close()


def test_the_largest_batch_over_rest_is_stored_whole_in_time(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    """The documented maximum (1,000 items) with a deadline it could not meet inline on a
    small machine: an answer, never a bare timeout, and every item stored."""
    settings = make_settings(run_worker=True, request_timeout_s=20)
    items = [{"content": t, "user_id": "bo"} for t in made_up_texts(1000, 2)]
    with TestClient(create_app(settings)) as api:
        answer = api.post("/v1/memories/batch", json={"memories": items})
        assert answer.status_code == 201, answer.text
        results = answer.json()["results"]
        assert [r["content"] for r in results] == [i["content"] for i in items]
        pending = [r["id"] for r in results if r["dedup"]["action"] == "pending"]
        assert all(r["embedded"] for r in results if r["id"] not in pending)

        def searchable() -> bool:
            row = raw.execute("SELECT count(*) FILTER (WHERE embedded) FROM memories").fetchone()
            return row == (1000,)

        wait_until(searchable, 120, "not every item of the batch became searchable")
        if pending:
            last = api.get(f"/v1/memories/{pending[-1]}", params={"user_id": "bo"}).json()
            assert last["embedded"] and last["importance"] is not None


async def test_a_long_conversation_past_its_deadline_keeps_every_turn(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    """Turns left to the worker are finished as turns: kept as said, never folded into a
    memory that says the same."""
    memory = await AsyncMemory.open(make_settings(run_worker=True))
    try:
        await memory.add("I drink green tea every single morning", user_id="cy")
        said = [{"role": "user", "content": t} for t in made_up_texts(130, 3)]
        said[120]["content"] = "I drink green tea every single morning"
        with answer_within(0.0):
            turns = await memory.add_messages(said, user_id="cy", conversation_id="long")
        assert [t.turn_index for t in turns] == list(range(130))
        assert turns[120].dedup.action == "pending"

        def all_settled() -> bool:
            return raw.execute(
                "SELECT count(*) FILTER (WHERE embedded), count(*) FROM memories"
                " WHERE user_id = 'cy'"
            ).fetchone() == (131, 131)

        await wait_for(all_settled, 120, "the worker never settled the conversation's turns")
        conversation = await memory.get_conversation("long", user_id="cy")
        assert [t.content for t in conversation.turns] == [m["content"] for m in said]
    finally:
        await memory.close()
