"""The offline judgement rules: dedup decisions, enrichment and category spelling.

No database: these are pure functions. Reference times are fixed (Wednesday 15 May 2024,
10:00 UTC) so every expected date below can be checked by hand against a calendar.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.pipeline.rules import decide_duplicate, enrich, normalise_category

REF = datetime(2024, 5, 15, 10, 0, tzinfo=UTC)  # a Wednesday
SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")


def end_of(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 23, 59, 59, tzinfo=UTC)


# --- enrich: persistent or temporal ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "until"),
    [
        ("I'm in Paris through Friday", end_of(2024, 5, 17)),
        ("The office is closed until 5 June", end_of(2024, 6, 5)),
        ("This week I'm working from home", end_of(2024, 5, 19)),  # Sunday
        ("Next month I start a new job", end_of(2024, 6, 30)),
        ("I'm sick today", end_of(2024, 5, 15)),
        ("Call mom tonight", end_of(2024, 5, 15)),
        ("We're away this weekend", end_of(2024, 5, 19)),
        ("The project deadline is the end of the month", end_of(2024, 5, 31)),
        ("Meeting with Bob on Monday at 10am", end_of(2024, 5, 20)),
        ("I'm in Rome for two weeks", end_of(2024, 5, 29)),
        ("The conference is in June", end_of(2024, 6, 30)),
        ("The lease runs until 2026", end_of(2026, 12, 31)),
        ("From Monday until 5 June I'm on leave", end_of(2024, 6, 5)),  # the later end wins
        ("Invoices are due by the end of next month", end_of(2024, 6, 30)),
        ("The dentist appointment moved to Friday at 10am", end_of(2024, 5, 17)),  # rescheduled
        ("My last exam is on Friday", end_of(2024, 5, 17)),
        ("I'm getting married on 3 June", end_of(2024, 6, 3)),
    ],
)
def test_time_bound_memories_expire_at_the_end_of_the_period_they_name(
    text: str, until: datetime
) -> None:
    result = enrich(text, REF)
    assert result.memory_type == "temporal"
    assert result.valid_until == until


def test_an_appointment_lasts_at_least_until_its_time_that_day() -> None:
    result = enrich("Dentist appointment tomorrow at 3pm", REF)
    assert result.memory_type == "temporal"
    assert result.valid_until is not None
    assert result.valid_until.date().isoformat() == "2024-05-16"
    assert result.valid_until >= datetime(2024, 5, 16, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "I'm feeling really stressed",  # an undated state: a few days
        "I'm currently reading Dune",  # 'currently': about a week
    ],
)
def test_undated_states_are_temporal_for_a_short_while(text: str) -> None:
    result = enrich(text, REF)
    assert result.memory_type == "temporal"
    assert result.valid_until is not None
    assert REF < result.valid_until <= REF + timedelta(days=8)


@pytest.mark.parametrize(
    "text",
    [
        "I was born in 1990",  # a date, but a biographical one
        "Alice prefers tea",
        "I play football every Friday",  # recurring, not expiring
        "My birthday is on 3 July",
        "I moved to Berlin in March",  # history, though 'March' alone reads as next March
        "I may go to the gym",  # 'may' the modal, not the month
        "I sleep 8 hours a night",  # a habit, not a span
        "My PIN is 1234",  # a number, not the year 1234
        "I've lived here for 5 years",
        "Bob is allergic to peanuts",
        "I've been working in the industry for five years",  # how long so far
        "I've been using basil and mint in my cooking lately",  # history, however recent
        "I watched 4 films in the last 3 months",
        "My insurance premium is around $80 a month",  # a price, not the year 2080
        "I'm building a 1/72 scale model of a B-29",  # a scale, not 1 July
    ],
)
def test_lasting_facts_are_persistent_with_no_expiry(text: str) -> None:
    result = enrich(text, REF)
    assert result.memory_type == "persistent"
    assert result.valid_until is None


def test_a_naive_reference_is_read_as_utc() -> None:
    naive = enrich("I'm in Paris through Friday", REF.replace(tzinfo=None))
    assert naive.valid_until == enrich("I'm in Paris through Friday", REF).valid_until


def test_an_aware_reference_in_another_zone_is_resolved_in_utc() -> None:
    new_york = timezone(timedelta(hours=-4))
    reference = datetime(2024, 5, 15, 23, 30, tzinfo=new_york)  # 03:30 UTC on the 16th
    result = enrich("I'm sick today", reference)
    assert result.valid_until == end_of(2024, 5, 16)
    assert result.valid_until.utcoffset() == timedelta(0)


# --- enrich: importance and categories -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("Remember: Bob is allergic to peanuts!", 9, 10),
        ("My API key for the staging server is in the vault", 8, 10),
        ("My daughter Mia starts school in September", 6, 10),
        ("Alice prefers aisle seats", 4, 6),
        ("It's sunny today", 1, 3),
        ("ok", 1, 3),
    ],
)
def test_importance_ranks_safety_above_preferences_above_small_talk(
    text: str, low: int, high: int
) -> None:
    assert low <= enrich(text, REF).importance <= high


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bob is allergic to peanuts", {"health"}),
        ("Alice is vegetarian and loves spicy food", {"food_preference"}),
        ("Alice prefers aisle seats on long flights", {"travel"}),
        ("My sister works as a nurse", {"family", "work"}),
        ("Dentist appointment tomorrow at 3pm", {"schedule", "health"}),
        ("The weather is lovely", {"small_talk"}),
        ("Zorblax quuxes the frobnicator", {"general"}),
    ],
)
def test_categories_come_from_the_vocabulary(text: str, expected: set[str]) -> None:
    categories = enrich(text, REF).categories
    assert expected <= set(categories)
    assert 1 <= len(categories) <= 4


@settings(deadline=None, max_examples=150)
@given(
    text=st.text(max_size=300),
    reference=st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
)
def test_enrich_never_raises_and_keeps_its_invariants(text: str, reference: datetime) -> None:
    result = enrich(text, reference)
    assert 1 <= result.importance <= 10
    assert 1 <= len(result.categories) <= 4
    assert all(SNAKE.match(c) for c in result.categories)
    if result.memory_type == "temporal":
        assert result.valid_until is not None
        assert result.valid_until > reference
        assert result.valid_until.utcoffset() == timedelta(0)
    else:
        assert result.valid_until is None


def test_enrich_reads_a_very_long_memory() -> None:
    # How fast is bench/text_speed.py's business; here, that it copes at all.
    result = enrich("I moved to Lisbon on 3 June and like it there. " * 700, REF)
    assert result.importance is not None


# --- decide_duplicate ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("I have 2 cats", "I have 3 cats"),
        ("Lukas is 34 years old", "Lukas is thirty-five years old"),
        ("The weekly sync is on Monday", "The weekly sync is on Wednesday"),
        ("I like sushi", "I don't like sushi anymore"),
        ("I love olives", "I hate olives"),
        ("Ben drinks alcohol", "Ben no longer drinks alcohol"),
        ("I live in Berlin", "I moved to Munich"),
        ("Tom works at Acme Corp", "Tom works at Globex now"),
        ("My favourite colour is blue", "My favourite colour is green"),
        ("Raj uses vim", "Raj switched from vim to VS Code"),
        ("Dentist appointment tomorrow at 3pm", "Dentist appointment moved to Friday at 10am"),
    ],
)
def test_an_update_to_the_same_fact_replaces_it(existing: str, new: str) -> None:
    decision = decide_duplicate(existing, new, 0.9)
    assert decision.action == "replace", decision.reason
    assert decision.reason


@pytest.mark.parametrize(
    ("existing", "new", "merged"),
    [
        ("Alice likes tea", "Alice likes green tea in the morning", "new"),
        ("Bob has a dog called Rufus", "Bob has a dog", "existing"),
        ("Priya works at a bank", "Priya works at a bank in Singapore as a risk analyst", "new"),
        ("I'm vegetarian", "I am vegetarian", "either"),
        ("Lena's favourite film is Amelie", "Lena's favorite film is Amelie", "either"),
    ],
)
def test_added_detail_merges_into_the_more_informative_text(
    existing: str, new: str, merged: str
) -> None:
    decision = decide_duplicate(existing, new, 0.9)
    assert decision.action == "merge", decision.reason
    expected = {"new": {new}, "existing": {existing}, "either": {existing, new}}[merged]
    assert decision.merged_text in expected


def test_compatible_details_on_both_sides_merge_into_both_when_nearly_the_same() -> None:
    existing, new = "Alice likes green tea", "Alice likes tea with honey in the morning"
    decision = decide_duplicate(existing, new, 0.96)
    assert decision.action == "merge"
    assert decision.merged_text is not None
    assert "green" in decision.merged_text
    assert "morning" in decision.merged_text
    # …but never when they are not that close, nor for a one-for-one swap of a word.
    assert decide_duplicate(existing, new, 0.85).action == "keep_both"
    assert decide_duplicate("Fatima is left-handed", "Fatima is right-handed", 0.99).action == (
        "keep_both"
    )


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("Alice's meeting is on Monday", "Bob's meeting is on Monday"),
        ("My sister lives in Paris", "My brother lives in Paris"),
        ("Alice has 2 cats", "Bob has 3 cats"),  # a different number, but another person
        ("Ben supports Arsenal", "Ben's father supports Arsenal"),
        ("Alice likes tea", "Alice likes coffee"),  # both can be true
        ("Hannah speaks French", "Hannah speaks German"),
        ("I visited Rome in 2019", "I visited Paris in 2019"),
        ("Lars has a daughter called Freya", "Lars has a son called Erik"),
        ("I like sushi", "I don't like olives"),  # a negation, but about something else
        ("Mei bought a new bike", "Mei bought a new laptop"),
    ],
)
def test_similar_wording_about_different_things_keeps_both(existing: str, new: str) -> None:
    decision = decide_duplicate(existing, new, 0.9)
    assert decision.action == "keep_both", decision.reason
    assert decision.merged_text is None


@settings(deadline=None, max_examples=200)
@given(
    existing=st.text(max_size=200),
    new=st.text(max_size=200),
    similarity=st.floats(min_value=0.7, max_value=0.98),
)
def test_decide_duplicate_never_raises_and_never_loses_text(
    existing: str, new: str, similarity: float
) -> None:
    decision = decide_duplicate(existing, new, similarity)
    assert decision.action in ("merge", "replace", "keep_both")
    if decision.action == "merge":
        merged = decision.merged_text
        assert merged is not None
        assert merged in (existing.strip(), new.strip()) or (
            existing.strip() in merged and new.strip() in merged
        )
    else:
        assert decision.merged_text is None


# --- normalise_category ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Food Preferences", "food_preference"),
        ("food-preference", "food_preference"),
        ("food_prefs", "food_preference"),
        ("FoodPreferences", "food_preference"),
        ("food_preferance", "food_preference"),  # a near-spelling
        ("Diet", "food_preference"),
        ("HEALTH", "health"),
        ("helth", "health"),
        ("wealth", "wealth"),  # close to 'health', but another word
        ("Hobbies", "hobby"),
        ("Job", "work"),
        ("Career", "work"),
        ("Work/Life", "work"),
        ("  travel ", "travel"),
        ("Trips", "travel"),
        ("personal info", "personal_info"),
        ("Pets", "pet"),
        ("Café Culture", "cafe_culture"),
        ("", "general"),
        ("日本", "general"),
    ],
)
def test_category_spellings_cluster(raw: str, expected: str) -> None:
    assert normalise_category(raw) == expected


@given(st.text(max_size=120))
def test_normalise_category_is_snake_case_ascii_and_idempotent(raw: str) -> None:
    once = normalise_category(raw)
    assert SNAKE.match(once)
    assert once.isascii()
    assert len(once) <= 64
    assert normalise_category(once) == once


@pytest.mark.parametrize(
    "text",
    [
        "card [REDACTED:credit_card], exp 12/27",  # as the PII stage leaves it
        "My visa expires 11/2026",
        "Company card valid thru 08/25, use it for travel",
        "card [REDACTED:credit_card] 12/27 [REDACTED:card_security_code]",
    ],
)
def test_a_cards_expiry_is_not_the_memorys_expiry(text: str) -> None:
    result = enrich(text, REF)
    assert result.valid_until is None and result.memory_type == "persistent"


def test_a_card_expiry_beside_a_real_deadline_keeps_the_deadline() -> None:
    result = enrich("My card expires 12/27 and I'm in Rome until Friday", REF)
    assert result.valid_until == end_of(2024, 5, 17)
    assert enrich("I'm in Paris until 12/27", REF).valid_until is not None  # no card: a date
