"""An update outranks what it replaced for questions about how things stand, in search and in
remember(), and a question about then still finds the old statement first. The cases are the
three reproductions an issue gave, none of them in the bench set
(bench/data/update_first.json, scored by bench/update_first.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from memvault import AsyncMemory, Settings
from memvault.language.when import parse_time
from memvault.retrieval.updates import Replacement, Statement, asked_about, reorder, replacements

OLD_AT = datetime(2025, 2, 3, 9, 30, tzinfo=UTC)
NEW_AT = datetime(2025, 10, 3, 18, 15, tzinfo=UTC)
THEN = datetime(2025, 3, 1, tzinfo=UTC)

# (old statement, update, question about now, the old value, the new value)
CASES = [
    (
        "We rent a place in Leeds.",
        "We left Leeds over the summer; these days we rent in York.",
        "Where does the user live now?",
        "Leeds",
        "York",
    ),
    (
        "I'm a barista at a café downtown.",
        "I handed in my notice at the café and I'm a paralegal now.",
        "What does the user do for work?",
        "barista",
        "paralegal",
    ),
    (
        "My laptop is a ThinkPad X1.",
        "The ThinkPad died, so I got a MacBook Air.",
        "Which laptop does the user have?",
        "ThinkPad X1",
        "MacBook",
    ),
]


@pytest.fixture
async def memory(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    """A store with the default settings: updates first is on."""
    opened = await AsyncMemory.open(make_settings())
    yield opened
    await opened.close()


async def _told(memory: AsyncMemory, user: str, old: str, new: str) -> None:
    await memory.add_messages(
        [
            {"role": "user", "content": "Hi! Hope your day is going well."},
            {"role": "assistant", "content": "Hello! What can I help you with today?"},
            {"role": "user", "content": old},
            {"role": "assistant", "content": "Noted. A tip: keep receipts in one folder."},
        ],
        user_id=user,
        occurred_at=OLD_AT,
        wait=True,
    )
    await memory.add_messages(
        [
            {"role": "user", "content": "Morning! Quick question about recipes."},
            {"role": "assistant", "content": "Sure, what are you cooking?"},
            {"role": "user", "content": new},
            {"role": "assistant", "content": "Thanks for the update!"},
        ],
        user_id=user,
        occurred_at=NEW_AT,
        wait=True,
    )


def _items(prompt: str) -> list[str]:
    """The prompt's memory lines, each with the source lines a fact carries under it."""
    items: list[str] = []
    for line in prompt.splitlines():
        if line.startswith("  ") and items:
            items[-1] += "\n" + line
        elif line.startswith("- "):
            items.append(line)
    return items


def _first_naming(prompt: str, old_value: str, new_value: str) -> str | None:
    """The first item that names either value (the update's own line names both)."""
    return next((i for i in _items(prompt) if new_value in i or old_value in i), None)


@pytest.mark.parametrize("case", range(len(CASES)))
async def test_the_update_leads_in_search_and_remember_and_the_old_one_answers_then(
    memory: AsyncMemory, case: int
) -> None:
    old, new, question, old_value, new_value = CASES[case]
    user = f"smoke-{case}"
    await _told(memory, user, old, new)

    now = [h for h in (await memory.search(question, user_id=user, limit=10)).results]
    texts = [h.content for h in now]
    assert texts.index(new) < texts.index(old)
    assert now[texts.index(old)].replaced_by == now[texts.index(new)].id

    then = [
        h.content
        for h in (
            await memory.search(question, user_id=user, limit=10, reference_time=THEN)
        ).results
    ]
    assert then.index(old) < (then.index(new) if new in then else len(then))

    prompt = (await memory.remember(question, user_id=user)).as_prompt()
    lead = _first_naming(prompt, old_value, new_value)
    assert lead is not None and new_value in lead
    for item in _items(prompt):
        if item.startswith("- [turn, _global 2025-02-03") and old in item:
            assert "until October 2025" in item


def test_what_a_question_asks_of_things_that_change() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert asked_about("Which laptop does the user have?", None, now) == ("as_of", now)
    assert asked_about("Where did the user live before?", None, now) == ("past", now)
    assert asked_about("What did Anna buy at the market?", None, now) == ("none", now)
    named = parse_time("In February 2025, where did the user live?", now)
    assert named is not None and named.before is not None
    assert asked_about("In February 2025, where did the user live?", named, now) == (
        "as_of",
        named.before,
    )


def test_a_later_statement_far_from_the_old_one_and_the_question_replaces_nothing() -> None:
    from uuid import uuid4

    old = Statement(uuid4(), "My car is an old Volvo.", OLD_AT, [1.0, 0.0, 0.0])
    chat = Statement(uuid4(), "Anyway, I'm reading a novel now.", NEW_AT, [0.0, 1.0, 0.0])
    update = Statement(uuid4(), "We sold the Volvo; now it's a Kia.", NEW_AT, [0.8, 0.0, 0.6])
    question = [0.7, 0.0, 0.7]
    found = replacements([old, chat, update], question, "as_of", NEW_AT)
    assert found == [Replacement(update.id, old.id, past=True, since=NEW_AT)]
    assert replacements([old, chat, update], question, "as_of", THEN) == [
        Replacement(old.id, update.id, past=False, since=NEW_AT)
    ]
    assert replacements([old, chat, update], question, "none", NEW_AT) == []
    # the update moves up to just above the old one; the old one moves down one place
    scores = reorder({old.id: 1.0, chat.id: 0.5, update.id: 0.2}, found)
    assert scores == {update.id: 1.0, old.id: 0.5, chat.id: 0.2}


async def test_a_later_turn_of_the_same_conversation_replaces_nothing(memory: AsyncMemory) -> None:
    # Said minutes apart, the second turn adds to the first (a change cue, "switched ... now",
    # about the same car) but cannot be news that replaced it: the car still answers first.
    user = "one-sitting"
    told = [
        "I drive a blue Honda Civic.",
        "I switched the car's tyres to winter ones now.",
        "Any podcast recommendations?",
        "It rained all day today.",
    ]
    await memory.add_many(
        [
            {
                "content": text,
                "user_id": user,
                "infer": False,
                "occurred_at": OLD_AT + timedelta(minutes=minute),
            }
            for minute, text in enumerate(told)
        ],
        wait=True,
    )
    hits = (await memory.search("What car does the user drive?", user_id=user, limit=10)).results
    assert [h.content for h in hits[:2]] == told[:2]
    assert all(h.replaced_by is None for h in hits)


def test_a_statement_gives_way_once_to_its_closest_later_one() -> None:
    from uuid import uuid4

    # Like many later statements about the same person, it is the update of none of them
    # but the closest: each demotion costs the old statement one place, so it pays once.
    old = Statement(uuid4(), "Sara is an architect in Milan.", OLD_AT, [1.0, 0.0, 0.0, 0.0])
    nearer = Statement(uuid4(), "Sara now runs her own studio.", NEW_AT, [0.7, 0.7, 0.1, 0.0])
    farther = Statement(uuid4(), "Sara started tennis now.", NEW_AT, [0.6, 0.0, 0.8, 0.0])
    question = [0.8, 0.4, 0.4, 0.0]
    found = replacements([old, nearer, farther], question, "as_of", NEW_AT)
    assert [(r.winner, r.loser) for r in found] == [(nearer.id, old.id)]
