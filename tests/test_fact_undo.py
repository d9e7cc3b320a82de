"""Undoing a person's retire or correction of a fact (``restore_fact``): the fact holds again
exactly as it did, a correction's replacement never held, the undo is audited, and a change
made in between is never overwritten (409, and nothing changes)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memvault import AsyncMemory
from memvault.errors import Conflict, NotFound

Y2020, Y2022, Y2024 = (datetime(y, 1, 1, tzinfo=UTC) for y in (2020, 2022, 2024))


async def claims(memory: AsyncMemory, user: str = "u", **as_of: datetime) -> list[str]:
    return sorted(f.claim for f in await memory.facts(user_id=user, **as_of))  # type: ignore[arg-type]


async def test_a_retired_fact_comes_back_with_the_interval_it_had(memory: AsyncMemory) -> None:
    porto = await memory.add_fact("Cy", "lives_in", object="Porto", user_id="u", valid_from=Y2020)
    figs = await memory.add_fact("Cy", "likes", value="figs", user_id="u")
    await memory.retire_fact(porto.id, user_id="u", never_held=True)
    await memory.retire_fact(figs.id, user_id="u")
    assert await claims(memory) == []
    back = await memory.restore_fact(porto.id, user_id="u")
    assert (back.valid_from, back.valid_until, back.superseded_at) == (Y2020, None, None)
    liked = await memory.restore_fact(figs.id, user_id="u")
    assert (liked.valid_from, liked.valid_until) == (figs.valid_from, figs.valid_until)
    assert await claims(memory) == sorted([porto.claim, figs.claim])
    assert await claims(memory, valid_at=Y2022) == [porto.claim]


async def test_an_undone_correction_never_held_and_the_old_value_holds_again(
    memory: AsyncMemory,
) -> None:
    porto = await memory.add_fact("Cy", "lives_in", object="Porto", user_id="u", valid_from=Y2020)
    braga = await memory.correct_fact(porto.id, user_id="u", object="Braga")
    assert await claims(memory) == [braga.claim]
    back = await memory.restore_fact(porto.id, user_id="u")
    assert (back.object, back.superseded_by, back.valid_from) == ("Porto", None, Y2020)
    assert await claims(memory) == [porto.claim]
    assert await claims(memory, valid_at=Y2022) == [porto.claim]
    history = {f.id: f for f in await memory.facts(user_id="u", include_superseded=True)}
    withdrawn = history[braga.id]
    assert withdrawn.superseded_by == porto.id
    assert withdrawn.valid_from == withdrawn.valid_until  # an empty interval: never held
    # The undo is audited with what it undid and what it withdrew.
    audit = await memory.audit_log(user_id="u", operation="update", limit=10)
    (row,) = [r for r in audit.results if r.details.get("via") == "restore_fact"]
    assert row.details == {
        "via": "restore_fact",
        "target": f"fact:{porto.id}",
        "undid": "correct",
        "withdrew": f"fact:{braga.id}",
    }


async def test_an_undo_over_a_later_change_is_refused_and_changes_nothing(
    memory: AsyncMemory,
) -> None:
    porto = await memory.add_fact("Cy", "lives_in", object="Porto", user_id="u")
    braga = await memory.correct_fact(porto.id, user_id="u", object="Braga")
    await memory.retire_fact(braga.id, user_id="u")
    with pytest.raises(Conflict) as refused:
        await memory.restore_fact(porto.id, user_id="u")
    assert "undo that change first" in refused.value.message
    assert await claims(memory) == []
    # Undone in order, last change first, both go through.
    await memory.restore_fact(braga.id, user_id="u")
    await memory.restore_fact(porto.id, user_id="u")
    assert await claims(memory) == [porto.claim]


async def test_a_newer_fact_stated_after_a_retire_blocks_its_undo(memory: AsyncMemory) -> None:
    porto = await memory.add_fact("Cy", "lives_in", object="Porto", user_id="u")
    await memory.retire_fact(porto.id, user_id="u")
    lisbon = await memory.add_fact("Cy", "lives_in", object="Lisbon", user_id="u")
    with pytest.raises(Conflict) as refused:
        await memory.restore_fact(porto.id, user_id="u")
    assert refused.value.details["newer"] == [str(lisbon.id)]
    assert await claims(memory) == [lisbon.claim]
    await memory.retire_fact(lisbon.id, user_id="u")
    assert (await memory.restore_fact(porto.id, user_id="u")).superseded_at is None


async def test_only_a_persons_change_is_undone_and_only_by_its_owner(
    memory: AsyncMemory,
) -> None:
    porto = await memory.add_fact("Cy", "lives_in", object="Porto", user_id="u")
    # Replaced by the contradiction policy, not by a person: nothing to undo.
    lisbon = await memory.add_fact("Cy", "lives_in", object="Lisbon", user_id="u")
    with pytest.raises(Conflict) as refused:
        await memory.restore_fact(porto.id, user_id="u")
    assert "Nothing to undo" in refused.value.message
    figs = await memory.add_fact("Cy", "likes", value="figs", user_id="u")
    with pytest.raises(Conflict):
        await memory.restore_fact(figs.id, user_id="u")  # current: never retired
    await memory.retire_fact(figs.id, user_id="u")
    with pytest.raises(NotFound):
        await memory.restore_fact(figs.id, user_id="someone-else")
    with pytest.raises(NotFound):
        await memory.for_tenant("other").restore_fact(figs.id, user_id="u")
    assert await claims(memory) == [lisbon.claim]
