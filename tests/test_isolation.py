"""Tenant and user isolation: no read or write path ever reaches another owner's memory."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault import AsyncMemory, NotFound

tenants = st.sampled_from(["acme", "globex", "initech"])
users = st.sampled_from(["alice", "bob", "carol"])
content = st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=40)
writes = st.lists(st.tuples(tenants, users, content.filter(str.strip)), min_size=1, max_size=8)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(writes=writes)
async def test_memories_are_visible_only_to_their_owner(
    memory: AsyncMemory, writes: list[tuple[str, str, str]]
) -> None:
    run = uuid.uuid4().hex[:8]  # examples share one database; keep each example's owners apart
    owners = [
        (f"{t}-{run}", f"{u}-{run}")
        for t in ("acme", "globex", "initech")
        for u in ("alice", "bob", "carol")
    ]
    stored = []
    for tenant, user, content in writes:
        owner = (f"{tenant}-{run}", f"{user}-{run}")
        record = await memory.for_tenant(owner[0]).add(
            content, user_id=owner[1], infer=False, pii_policy="allow"
        )
        stored.append((owner, record.id, content))

    for tenant, user in owners:
        view = memory.for_tenant(tenant)
        mine = {rid for (o, rid, _) in stored if o == (tenant, user)}
        listed = {m.id for m in (await view.list(user_id=user, limit=100)).results}
        assert listed == mine
        for owner, rid, content in stored:
            if owner == (tenant, user):
                assert (await view.get(rid, user_id=user)).content == content
                continue
            with pytest.raises(NotFound):
                await view.get(rid, user_id=user)
            with pytest.raises(NotFound):
                await view.history(rid, user_id=user)
            with pytest.raises(NotFound):
                await view.update(rid, user_id=user, content="overwritten")
            with pytest.raises(NotFound):
                await view.delete(rid, user_id=user)
        await view.delete_all(user_id=f"{user}-nobody")

    for (tenant, user), rid, content in stored:
        assert (await memory.for_tenant(tenant).get(rid, user_id=user)).content == content


async def test_delete_all_of_one_tenant_leaves_another_untouched(memory: AsyncMemory) -> None:
    a, b = memory.for_tenant("a"), memory.for_tenant("b")
    kept = await b.add("b's memory", user_id="same-user")
    await a.add("a's memory", user_id="same-user")
    assert await a.delete_all(user_id="same-user") == 1
    assert (await b.get(kept.id, user_id="same-user")).content == "b's memory"
