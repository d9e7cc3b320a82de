"""Fact promotion: a project fact copied to _global once, linked
PROMOTED_FROM; the scheduled ``promote`` job copies the prominent ones (confidence, accesses,
conversations: each threshold inclusive), with a dry run; the route; isolation of the link."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from memvault import AsyncMemory, InvalidInput, NotFound
from memvault.db.tenancy import all_tenants, tenant_scope
from memvault.lifecycle import jobs
from memvault.models import Fact
from tests.conftest import backend_of


async def _fact_in_conversations(memory: AsyncMemory, conversations: int) -> Fact:
    """The user's favourite colour, said in ``conversations`` conversations of project proj
    (turns of stored conversations, and messages that carry their session)."""
    said = [
        "My favourite colour is teal",
        "Teal is still my favourite colour, my favourite colour is teal",
        "As I said before: my favourite colour is teal",
    ]
    for n in range(conversations):
        if n % 2 == 0:
            convo = await memory.start_conversation(user_id="ann", channel="proj")
            session = str(convo.id)
        else:
            session = f"chat-{n}"
        await memory.add_messages(
            [{"role": "user", "content": said[n]}],
            user_id="ann",
            channel="proj",
            session_id=session,
            infer=True,
            wait=True,
        )
    (fact,) = [f for f in await memory.facts(user_id="ann") if f.predicate == "favourite_colour"]
    assert fact.channel == "proj" and len(fact.memory_ids) == conversations
    return fact


def _set(raw: psycopg.Connection[Any], fact: Fact, confidence: float, accesses: int) -> None:
    raw.execute(
        "UPDATE facts SET confidence = %s, access_count = %s WHERE id = %s",
        (confidence, accesses, fact.id),
    )


def _global(raw: psycopg.Connection[Any]) -> list[tuple[UUID, UUID]]:
    rows = raw.execute(
        "SELECT f.id, p.promoted_from FROM facts f JOIN fact_promotions p "
        "ON p.tenant_id = f.tenant_id AND p.fact_id = f.id WHERE f.channel = '_global'"
    )
    return list(rows.fetchall())


@pytest.mark.parametrize(
    ("confidence", "accesses", "conversations", "promoted"),
    [
        (0.85, 5, 2, True),  # exactly at every threshold
        (0.99, 40, 3, True),
        (0.84, 5, 2, False),
        (0.85, 4, 2, False),
        (0.85, 5, 1, False),
    ],
)
async def test_the_job_promotes_at_and_only_at_the_thresholds(
    memory: AsyncMemory,
    raw: psycopg.Connection[Any],
    confidence: float,
    accesses: int,
    conversations: int,
    promoted: bool,
) -> None:
    fact = await _fact_in_conversations(memory, conversations)
    _set(raw, fact, confidence, accesses)

    dry = await jobs.run_job(backend_of(memory), "promote", dry_run=True)
    assert (dry.outcome, dry.dry_run) == ("ok", True)
    assert dry.counts["would_promote"] == int(promoted)
    assert _global(raw) == []

    run = await jobs.run_job(backend_of(memory), "promote")
    assert run.outcome == "ok" and run.counts["promoted"] == int(promoted)
    copies = _global(raw)
    assert [source for _, source in copies] == ([fact.id] if promoted else [])
    if promoted:
        (copy,) = [f for f in await memory.facts(user_id="ann") if f.id == copies[0][0]]
        assert (copy.channel, copy.claim, copy.value) == ("_global", fact.claim, fact.value)
        assert copy.memory_ids == fact.memory_ids  # erasing the source takes the copy too
        await backend_of(memory).audit.flush()
        entries = await memory.audit_log(user_id="ann", operation="promote")
        assert [e.actor for e in entries.results] == ["lifecycle:promote"]
    again = await jobs.run_job(backend_of(memory), "promote")
    assert again.counts["promoted"] == 0 and len(_global(raw)) == len(copies)


async def test_promote_by_hand_is_idempotent_and_owned(memory: AsyncMemory) -> None:
    fact = await memory.add_fact("deploys", "run_on", value="Fridays", user_id="ann", channel="p")
    copy = await memory.promote(fact.id, user_id="ann", reason="team-wide rule")
    assert copy.channel == "_global" and copy.id != fact.id and copy.claim == fact.claim
    assert (await memory.promote(str(fact.id), user_id="ann", reason="again")).id == copy.id
    with pytest.raises(InvalidInput):
        await memory.promote(copy.id, user_id="ann", reason="already global")
    with pytest.raises(NotFound):
        await memory.promote(fact.id, user_id="bob", reason="not mine")
    with pytest.raises(NotFound):
        await memory.for_tenant("globex").promote(fact.id, user_id="ann", reason="not ours")
    with pytest.raises(InvalidInput):
        await memory.promote(fact.id, user_id="ann", reason=" ")
    # recalled from another project now
    bundle = await memory.remember("when do deploys run", user_id="ann", channel="q")
    assert copy.id in {UUID(i.id) for i in bundle.facts}


async def test_the_promotion_link_is_behind_row_level_security(memory: AsyncMemory) -> None:
    fact = await memory.add_fact("ann", "speaks", value="Portuguese", user_id="u", channel="p")
    await memory.promote(fact.id, user_id="u", reason="everywhere")
    engine = backend_of(memory).engine

    async def count() -> int:
        async with engine.connect() as conn:
            return int(
                (await conn.execute(sa.text("SELECT count(*) FROM fact_promotions"))).scalar_one()
            )

    with all_tenants():
        assert await count() == 1
    with tenant_scope("globex"):
        assert await count() == 0
        async with engine.begin() as conn:
            changed = await conn.execute(sa.text("UPDATE fact_promotions SET user_id = 'x'"))
            assert changed.rowcount == 0
            gone = await conn.execute(sa.text("DELETE FROM fact_promotions"))
            assert gone.rowcount == 0
    assert await count() == 0  # no tenant entered: nothing at all
    with all_tenants():
        assert await count() == 1


def test_the_promote_route(client: TestClient) -> None:
    fact = client.post(
        "/v1/facts",
        json={
            "subject": "builds",
            "predicate": "use",
            "value": "nix",
            "user_id": "u",
            "channel": "p",
        },
    ).json()
    answer = client.post(f"/v1/facts/{fact['id']}/promote", json={"user_id": "u", "reason": "x"})
    assert answer.status_code == 200 and answer.json()["channel"] == "_global"
    assert (
        client.post(f"/v1/facts/{fact['id']}/promote", json={"user_id": "u", "reason": "x"}).json()[
            "id"
        ]
        == answer.json()["id"]
    )
    missing = client.post(f"/v1/facts/{fact['id']}/promote", json={"user_id": "v", "reason": "x"})
    assert missing.status_code == 404 and missing.json()["error"]["code"]
    bad = client.post(f"/v1/facts/{fact['id']}/promote", json={"user_id": "u", "reason": ""})
    assert bad.status_code == 422 or bad.status_code == 400
