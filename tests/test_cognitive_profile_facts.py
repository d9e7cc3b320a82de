"""The profile learns from the knowledge graph: facts about the user (subject SELF) whose
predicates say what they like, know or how they talk fold into the profile of the channel they
were learned in, each once, so a preference removed by hand stays removed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from memvault import AsyncMemory
from memvault.cognitive.profile import is_profile_predicate, profile_update_from_facts
from tests.conftest import backend_of


def test_which_predicates_are_profile() -> None:
    for predicate in ("likes", "prefers", "favourite_colour", "expert_in", "speaks", "hates"):
        assert is_profile_predicate(predicate), predicate
    for predicate in ("lives_in", "works_for", "favourite", "knows", "married_to"):
        assert not is_profile_predicate(predicate), predicate
    assert profile_update_from_facts(
        [("@user", "favourite_colour", "teal"), ("@user", "speaks", "Portuguese")]
    ) == {"preferences": {"favourite_colour": "teal"}, "expertise": ["Portuguese"]}


async def test_stated_and_extracted_facts_about_the_user_fill_the_profile(
    memory: AsyncMemory,
) -> None:
    await memory.update_profile(user_id="ann", expertise=["sql"])
    await memory.add("My favourite colour is teal", user_id="ann", wait=True)
    await memory.add_fact("@user", "likes", value="green tea", user_id="ann")
    await memory.add_fact("@user", "expert_in", value="rust", user_id="ann")
    await memory.add_fact("@user", "lives_in", object="Porto", user_id="ann")
    await memory.add_fact("Bob", "likes", value="coffee", user_id="ann")  # not the user
    await memory.add_fact("@user", "speaks", value="Portuguese", user_id="ann", channel="work")
    profile = await memory.get_profile(user_id="ann")
    assert profile.preferences == {"favourite_colour": "teal", "green tea": True}
    assert profile.expertise == ["sql", "rust"]  # added to, not replaced
    assert (await memory.get_profile(user_id="bob")).preferences == {}
    # the project's own fact stays in the project
    work = await memory.get_profile(user_id="ann", channel="work")
    assert work.expertise == ["Portuguese"] and work.preferences["green tea"] is True

    # Learned once: removing a learned preference by hand sticks.
    await memory.update_profile(user_id="ann", preferences={"green tea": None})
    assert "green tea" not in (await memory.get_profile(user_id="ann")).preferences
    # … and a new fact later is learned as well.
    await memory.add_fact("@user", "prefers", value="aisle seats", user_id="ann")
    again = await memory.get_profile(user_id="ann")
    assert again.preferences == {"favourite_colour": "teal", "aisle seats": True}
    bundle = await memory.remember("what does the user like", user_id="ann", include=["profile"])
    assert "prefers: aisle seats = true" in bundle.as_prompt()


async def test_a_channel_with_no_profile_of_its_own_reads_only_what_a_profile_is_made_of(
    memory: AsyncMemory,
) -> None:
    """Before, a read in such a channel fetched every fact the user had stated about
    themselves, on every remember(), however few of them a profile could learn from."""
    for n in range(30):
        await memory.add_fact("@user", "visited", value=f"city {n}", user_id="cy")
    await memory.update_profile(user_id="cy", communication_style="brief")
    fetched: list[int] = []

    def counted(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            fetched.append(cursor.rowcount)

    engine = backend_of(memory).engine.sync_engine
    event.listen(engine, "after_cursor_execute", counted)
    try:
        travel = await memory.get_profile(user_id="cy", channel="travel")
    finally:
        event.remove(engine, "after_cursor_execute", counted)
    assert travel.communication_style == "brief"  # _global's, seen from the channel
    assert fetched and sum(fetched) < 30, fetched
    # What a profile is made of is still learned there, and only there.
    await memory.add_fact("@user", "likes", value="night trains", user_id="cy", channel="travel")
    assert (await memory.get_profile(user_id="cy", channel="travel")).preferences == {
        "night trains": True
    }
    assert (await memory.get_profile(user_id="cy")).preferences == {}
