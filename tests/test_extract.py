"""Extraction of entities, facts and relations: the offline rules on their own, and the LLM path
against a real local server speaking the OpenAI and Anthropic APIs (good answers, malformed
answers, timeouts and refusals, each of the failures answered by the offline rules)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.graph import patterns
from memvault.graph.claims import (
    CONFIDENCE,
    SELF,
    Extraction,
    FactClaim,
    canonical_predicate,
    is_functional,
)
from memvault.graph.extract import extract
from memvault.graph.extract_llm import (
    EntityAnswer,
    ExtractionAnswer,
    FactAnswer,
    RelationAnswer,
    normalise_answer,
)
from memvault.graph.extract_rules import extract_offline
from memvault.llm import LLM, AnthropicMessages, OpenAIChat, strict_schema
from tests.llm_fakes import (
    LLMServer,
    Reply,
    anthropic_tool_reply,
    error_reply,
    llm_server,
    openai_reply,
)
from tests.test_llm import assert_strict

NOW = datetime(2024, 6, 15, 12, 0, tzinfo=UTC)


def offline(text: str, speaker: str | None = "Sam") -> Extraction:
    return extract_offline(text, speaker=speaker, reference_time=NOW)


def triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    return {(f.subject, f.predicate, f.object or f.value or "") for f in extraction.facts}


def only_fact(text: str, speaker: str | None = "Sam") -> FactClaim:
    facts = offline(text, speaker).facts
    assert len(facts) == 1, facts
    return facts[0]


# --- offline: the shapes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Caroline is my sister.", ("Sam", "sister", "Caroline")),
        ("My brother is called Tom.", ("Sam", "brother", "Tom")),
        ("Maria is Dana's wife.", ("Dana", "married_to", "Maria")),
        ("I work at Acme Corp.", ("Sam", "works_for", "Acme Corp")),
        ("I work for Initech.", ("Sam", "works_for", "Initech")),
        ("I started a new job at Globex last month.", ("Sam", "works_for", "Globex")),
        ("Dana joined Hooli in May 2023.", ("Dana", "works_for", "Hooli")),
        ("I work as a nurse.", ("Sam", "job_title", "nurse")),
        ("Dana got promoted to senior designer three weeks ago.",
         ("Dana", "job_title", "senior designer")),
        ("I moved to Lisbon in March 2023.", ("Sam", "lives_in", "Lisbon")),
        ("I live in New York.", ("Sam", "lives_in", "New York")),
        ("Dana relocated to São Paulo.", ("Dana", "lives_in", "São Paulo")),
        ("Dana's birthday is May 3rd.", ("Dana", "birthday", "05-03")),
        ("My birthday is on 12 October.", ("Sam", "birthday", "10-12")),
        ("I was born on 3 May 1990.", ("Sam", "birthday", "1990-05-03")),
        ("I'm 34 years old.", ("Sam", "age", "34")),
        ("My favourite colour is green.", ("Sam", "favourite_colour", "green")),
        ("My favorite food is pad thai.", ("Sam", "favourite_food", "pad thai")),
        ("We use Postgres for project Falcon.", ("Falcon", "uses_database", "Postgres")),
        ("Project Orion runs on MySQL.", ("Orion", "uses_database", "MySQL")),
        ("The Atlas team migrated from MySQL to PostgreSQL.",
         ("Atlas", "uses_database", "PostgreSQL")),
    ],
)  # fmt: skip
def test_each_shape_states_its_fact(text: str, expected: tuple[str, str, str]) -> None:
    assert expected in triples(offline(text))


def test_a_birthday_is_never_past() -> None:
    assert only_fact("I was born on 3 May 1990.").temporal == "current"


def test_kinship_takes_no_tense_or_date_from_what_else_the_sentence_tells() -> None:
    fact = only_fact("My cousin Emma had a baby girl in August.")  # August is ahead of NOW
    assert (fact.predicate, fact.temporal, fact.valid_from) == ("cousin", "current", None)


def test_a_done_deed_dated_ahead_happened_a_year_earlier() -> None:
    fact = only_fact("Sara was promoted to principal designer in August.")
    assert fact.temporal == "current"
    assert fact.valid_from is not None and (fact.valid_from.year, fact.valid_from.month) == (
        2023,
        8,
    )


@pytest.mark.parametrize(
    "text", ["Tom became a father in May.", "I am a regular at Café Luna.", "I got a job."]
)
def test_life_roles_are_not_job_titles(text: str) -> None:
    assert offline(text).facts == ()


def test_abbreviations_neither_end_sentences_nor_names() -> None:
    extraction = offline("Dr. Chen lives in Oslo. She works at St. Mary's Hospital.")
    assert triples(extraction) == {
        ("Chen", "lives_in", "Oslo"),
        ("Chen", "works_for", "St. Mary's Hospital"),
    }


def test_a_job_at_a_place_says_both_title_and_employer() -> None:
    found = triples(offline("I'm a data engineer at Globex."))
    assert found == {("Sam", "job_title", "data engineer"), ("Sam", "works_for", "Globex")}


@pytest.mark.parametrize(
    "text",
    [
        "I got a job offer but turned it down.",
        "Moving to Lyon was hard.",
        "I do not live in Paris.",
        "Dana doesn't work at Acme.",
        "The weather in Paris was lovely.",
        "Falcon uses Slack for chat.",
    ],
)
def test_sentences_that_state_no_such_fact_give_none(text: str) -> None:
    assert offline(text).facts == ()


# --- offline: who, when, how sure ------------------------------------------------------------


@pytest.mark.parametrize(("speaker", "who"), [(None, SELF), ("user", SELF), ("Priya", "Priya")])
def test_the_first_person_is_the_speaker_or_the_owner(speaker: str | None, who: str) -> None:
    fact = only_fact("I work at Acme.", speaker)
    assert fact.subject == who


def test_an_assistants_first_person_and_its_guesses_are_no_facts_its_restatements_are() -> None:
    assert offline("I work at Acme.", "assistant").facts == ()
    assert offline("You live in Lyon, right?", "assistant").facts == ()
    assert only_fact("You said you live in Lyon.", "assistant").subject == SELF


def test_a_pronoun_is_the_person_named_before_it() -> None:
    found = triples(offline("My friend Dana just moved to Lyon. She works at Airbus."))
    assert ("Dana", "works_for", "Airbus") in found
    assert ("Sam", "friend", "Dana") in found


def test_a_dated_change_starts_when_the_text_says() -> None:
    # A month dates its event at its middle, as ``retrieval.when.event_time`` reads it.
    assert only_fact("I moved to Lisbon in March 2023.").valid_from == datetime(
        2023, 3, 16, 12, tzinfo=UTC
    )
    started = only_fact("I started a new job at Globex last month.").valid_from
    assert started is not None and (started.year, started.month) == (2024, 5)
    since = only_fact("I have lived in Rome since 2019.")
    assert (since.temporal, since.valid_from) == ("current", datetime(2019, 1, 1, tzinfo=UTC))


def test_an_undated_change_starts_when_it_was_said_and_a_state_has_no_start() -> None:
    assert only_fact("I just moved to Lyon.").valid_from == NOW
    assert only_fact("I live in Lyon.").valid_from is None


@pytest.mark.parametrize(
    ("text", "temporal", "ends_now"),
    [
        ("I used to work at Umbrella.", "past", False),
        ("I no longer live in Paris.", "past", True),
        ("I left Initech.", "past", True),
        ("I lived in Oslo for three years.", "past", False),
        ("I will start at Hooli next month.", "future", False),
        ("I'm moving to Berlin next week.", "future", False),
        ("I've worked at Acme since 2020.", "current", False),
    ],
)
def test_tense_says_past_current_or_future(text: str, temporal: str, ends_now: bool) -> None:
    fact = only_fact(text)
    assert fact.temporal == temporal
    assert (fact.valid_until == NOW) is ends_now


def test_a_future_start_is_dated_ahead() -> None:
    fact = only_fact("I will start at Hooli next month.")
    assert fact.valid_from is not None and (fact.valid_from.year, fact.valid_from.month) == (
        2024,
        7,
    )


@pytest.mark.parametrize(
    ("text", "certainty"),
    [
        ("Dana works at Acme.", "explicit"),
        ("I think Dana works at Acme.", "implied"),
        ("Dana probably works at Acme.", "implied"),
    ],
)
def test_hedges_lower_the_certainty(text: str, certainty: str) -> None:
    fact = only_fact(text)
    assert fact.certainty == certainty
    assert fact.confidence == CONFIDENCE[fact.certainty]


def test_what_is_only_maybe_so_is_not_written() -> None:
    assert offline("Maybe Dana works at Acme.").facts == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Actually, Dana lives in Lyon, not Paris.", ("Dana", "lives_in", "Lyon")),
        ("No, I meant Bob works for Initech.", ("Bob", "works_for", "Initech")),
        ("Bob lives not in Paris but in Lyon.", ("Bob", "lives_in", "Lyon")),
        ("Correction: the Falcon team switched to PostgreSQL.",
         ("Falcon", "uses_database", "PostgreSQL")),
        ("Sorry, my mistake. I work at Globex.", ("Sam", "works_for", "Globex")),
    ],
)  # fmt: skip
def test_correction_phrasing_marks_the_corrected_fact(
    text: str, expected: tuple[str, str, str]
) -> None:
    extraction = offline(text)
    assert triples(extraction) == {expected}  # never the wrong value it replaces
    assert all(f.corrects for f in extraction.facts)


def test_a_plain_statement_corrects_nothing() -> None:
    assert not only_fact("Dana lives in Lyon.").corrects


# --- offline: entities and relations ---------------------------------------------------------


def test_entities_carry_the_types_their_context_tells() -> None:
    extraction = offline(
        "Yesterday Dana told me that Dr Okafor moved from Nairobi. We use Redis for project "
        "Kite, and Dana works for Umbrella Health."
    )
    types = {e.name: e.type for e in extraction.entities}
    assert types == {
        "Sam": "person",
        "Dana": "person",
        "Okafor": "person",
        "Nairobi": "place",
        "Redis": "tool",
        "Kite": "project",
        "Umbrella Health": "organisation",
    }


def test_work_and_home_are_also_relations() -> None:
    extraction = offline("Dana works at Acme and lives in Lyon. Maria is my sister.")
    assert {(r.source, r.type, r.target) for r in extraction.relations} == {
        ("Dana", "WORKS_FOR", "Acme"),
        ("Dana", "LOCATED_IN", "Lyon"),
        ("Sam", "KNOWS", "Maria"),
    }


def test_extraction_is_deterministic() -> None:
    text = "Actually I moved to Lyon last month; my sister Maria works at Acme."
    assert offline(text) == offline(text)


# --- offline: properties ---------------------------------------------------------------------

_VOCABULARY = (
    "I my Dana Acme Lyon is works at in moved to actually not but sister lives the a nurse "
    "last month maybe used no longer will next 3 years old birthday May project Falcon uses "
    "Postgres and she , . ' ! ? : — \n"
)
_WORDS = st.sampled_from(_VOCABULARY.split(" "))
_SENTENCES = st.lists(_WORDS, max_size=40).map(" ".join)


def assert_consistent(extraction: Extraction) -> None:
    names = {e.name for e in extraction.entities} | {SELF}
    for fact in extraction.facts:
        assert fact.subject in names
        assert fact.object is None or fact.object in names
        assert (fact.object is None) != (fact.value is None)
        assert fact.predicate == canonical_predicate(fact.predicate)
        assert fact.claim
    for relation in extraction.relations:
        assert {relation.source, relation.target} <= names


@settings(deadline=None, max_examples=300)
@given(
    st.one_of(st.text(max_size=300), _SENTENCES),
    st.one_of(st.none(), st.sampled_from(["Sam", "user", "assistant", "", "Dana"]), st.text()),
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
)
def test_offline_never_raises_and_every_fact_is_about_a_known_entity(
    text: str, speaker: str | None, reference: datetime
) -> None:
    assert_consistent(extract_offline(text, speaker=speaker, reference_time=reference))


@pytest.mark.parametrize(
    "text",
    [
        "A" * 50_000,  # one "word": once a quadratic scan that ran for minutes
        " ".join(["Dana"] * 5_000),
        "I " + "am not still now just " * 2_000 + "live in Lyon",
        "my favourite " + "x " * 10_000 + "is",
    ],
    ids=["one-long-word", "many-names", "many-auxiliaries", "long-favourite"],
)
def test_pathological_text_is_extracted_consistently(text: str) -> None:
    # Its time (once minutes, when a scan was quadratic) is measured by bench/text_speed.py.
    assert_consistent(offline(text))


# --- predicates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("Works At", "works_for"),
        ("worksFor", "works_for"),
        ("lives-in", "lives_in"),
        ("favorite_color", "favourite_color"),
        ("JOB TITLE", "job_title"),
        ("sister", "sister"),
    ],
)
def test_predicates_have_one_spelling(raw: str, canonical: str) -> None:
    assert canonical_predicate(raw) == canonical


def test_favourites_are_functional_per_thing() -> None:
    assert is_functional("favourite_colour") and is_functional("lives_in")
    assert not is_functional("sister")


# --- the LLM path ----------------------------------------------------------------------------

GOOD = {
    "entities": [
        {"name": "Dana", "type": "person", "aliases": ["Dee", "Dana"], "description": None},
        {"name": "Initech", "type": "organization", "aliases": [], "description": "a company"},
        {"name": "Lyon", "type": "spaceship", "aliases": [], "description": None},
    ],
    "facts": [
        {
            "subject": "Dana",
            "predicate": "Works At",
            "object": "Initech",
            "value": None,
            "certainty": "explicit",
            "temporal": "current",
            "valid_from": "2024-05-01T00:00:00Z",
            "valid_until": None,
            "corrects": True,
            "claim": "Dana works for Initech",
        },
        {
            "subject": "I",
            "predicate": "lives_in",
            "object": "Lyon",
            "value": None,
            "certainty": "probably",
            "temporal": "someday",
            "valid_from": "last May",
            "valid_until": None,
            "corrects": False,
            "claim": "",
        },
        {
            "subject": "Initech Labs",
            "predicate": "uses_database",
            "object": None,
            "value": "PostgreSQL",
            "certainty": "uncertain",
            "temporal": "future",
            "valid_from": "2024-08-01",
            "valid_until": None,
            "corrects": False,
            "claim": "Initech Labs will use PostgreSQL",
        },
        {
            "subject": "Dana",
            "predicate": "likes",
            "object": None,
            "value": None,
            "certainty": "explicit",
            "temporal": "current",
            "valid_from": None,
            "valid_until": None,
            "corrects": False,
            "claim": "",
        },
    ],
    "relations": [
        {
            "source": "Dana",
            "type": "works for",
            "target": "Initech",
            "valid_from": None,
            "valid_until": None,
        }
    ],
}
TEXT = "Actually Dana works at Initech now, not Globex. I'm in Lyon."
KEY = "sk-test-key-0123456789"


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with llm_server() as running:
        yield running


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_llm(provider: str, server: LLMServer) -> AsyncIterator[Callable[..., LLM]]:
    built: list[LLM] = []

    def build(**overrides: Any) -> LLM:
        options: dict[str, Any] = {
            "model": "test-model",
            "api_key": KEY,
            "timeout_s": 5.0,
            "attempts": 1,
            "retry_base_s": 0.01,
            **overrides,
        }
        llm: LLM = (
            OpenAIChat(base_url=server.url + "/v1", **options)
            if provider == "openai"
            else AnthropicMessages(base_url=server.url, **options)
        )
        built.append(llm)
        return llm

    yield build
    for llm in built:
        await llm.aclose()


def answer(provider: str, payload: dict[str, Any]) -> Reply:
    return (
        openai_reply(json.dumps(payload)) if provider == "openai" else anthropic_tool_reply(payload)
    )


def malformed(provider: str) -> Reply:
    if provider == "openai":
        return openai_reply('{"entities": [')
    return anthropic_tool_reply({"entities": "Dana"})


async def test_a_good_answer_is_normalised_to_the_contract(
    provider: str, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(answer(provider, GOOD))
    result = await extract(TEXT, speaker="Sam", reference_time=NOW, llm=make_llm())

    assert (result.extractor, result.prompt_version) == (f"llm:{provider}/test-model", 1)
    assert_consistent(result)
    types = {e.name: e.type for e in result.entities}
    assert types == {
        "Dana": "person",
        "Initech": "organisation",
        "Lyon": "other",
        "Sam": "person",
        "Initech Labs": "other",
    }
    dana = next(e for e in result.entities if e.name == "Dana")
    assert dana.aliases == ("Dee",)
    works, lives, uses = result.facts  # the fact with neither object nor value is dropped
    assert (works.subject, works.predicate, works.object, works.corrects) == (
        "Dana",
        "works_for",
        "Initech",
        True,
    )
    assert works.valid_from == datetime(2024, 5, 1, tzinfo=UTC)
    assert (lives.subject, lives.certainty, lives.temporal, lives.valid_from) == (
        "Sam",
        "inferred",
        "current",
        None,
    )
    assert lives.claim == "Sam lives in Lyon"
    assert (uses.value, uses.temporal, uses.confidence) == ("PostgreSQL", "future", 0.50)
    assert uses.valid_from == datetime(2024, 8, 1, tzinfo=UTC)
    assert [(r.source, r.type, r.target) for r in result.relations] == [
        ("Dana", "WORKS_FOR", "Initech")
    ]


async def test_the_request_is_one_versioned_schema_call_with_the_text_fenced(
    provider: str, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(answer(provider, {"entities": [], "facts": [], "relations": []}))
    result = await extract(TEXT, speaker=None, reference_time=NOW, llm=make_llm())
    assert result.empty and result.extractor.startswith("llm:")

    (request,) = server.requests
    body = request.body
    user = body["messages"][-1]["content"]
    assert f"<text>\n{TEXT}\n</text>" in user
    assert NOW.isoformat() in user and SELF in user
    if provider == "openai":
        schema = body["response_format"]["json_schema"]
        assert schema["name"] == "graph_extract" and schema["strict"] is True
        assert "corrects" in json.dumps(schema["schema"])
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "graph_extract"}
        assert "certainty" in json.dumps(body["tools"][0]["input_schema"])


async def test_a_malformed_answer_twice_falls_back_to_the_offline_rules(
    provider: str, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(malformed(provider), malformed(provider))
    result = await extract(TEXT, speaker="Sam", reference_time=NOW, llm=make_llm())
    assert server.calls == 2
    assert result.extractor == f"offline (llm:{provider}/test-model failed: llm_invalid_answer)"
    assert result.facts == offline(TEXT).facts
    assert ("Dana", "works_for", "Initech") in triples(result)


async def test_a_malformed_answer_once_is_retried_and_used(
    provider: str, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(malformed(provider), answer(provider, GOOD))
    result = await extract(TEXT, speaker="Sam", reference_time=NOW, llm=make_llm())
    assert result.extractor.startswith("llm:") and len(result.facts) == 3


async def test_a_timeout_falls_back_to_the_offline_rules(
    provider: str, server: LLMServer, make_llm: Callable[..., LLM]
) -> None:
    server.script(replace(answer(provider, GOOD), delay_s=1.0))
    # The answer comes after the timeout: the rules' facts, labelled with why.
    result = await extract(TEXT, speaker="Sam", reference_time=NOW, llm=make_llm(timeout_s=0.2))
    assert result.extractor == f"offline (llm:{provider}/test-model failed: llm_unavailable)"
    assert ("Dana", "works_for", "Initech") in triples(result)


@pytest.mark.parametrize(("status", "code"), [(503, "llm_unavailable"), (401, "llm_rejected")])
async def test_a_failing_service_falls_back_to_the_offline_rules(
    provider: str,
    server: LLMServer,
    make_llm: Callable[..., LLM],
    status: int,
    code: str,
) -> None:
    server.script(error_reply(status))
    result = await extract(TEXT, speaker="Sam", reference_time=NOW, llm=make_llm())
    assert result.extractor.endswith(f"failed: {code})")
    assert result.facts == offline(TEXT).facts


def test_the_answer_schema_is_strict_mode_clean() -> None:
    assert_strict(strict_schema(ExtractionAnswer.model_json_schema()))


_NAMES = st.one_of(st.sampled_from(["Dana", "dana", "I", "@user", "", "null", " Lyon "]), st.text())


@settings(deadline=None, max_examples=200)
@given(
    st.builds(
        ExtractionAnswer,
        entities=st.lists(st.builds(EntityAnswer, name=_NAMES, type=st.text()), max_size=5),
        facts=st.lists(
            st.builds(
                FactAnswer,
                subject=_NAMES,
                predicate=st.text(),
                object=st.none() | _NAMES,
                value=st.none() | st.text(),
                certainty=st.text(),
                temporal=st.text(),
                valid_from=st.none() | st.text(),
            ),
            max_size=5,
        ),
        relations=st.lists(
            st.builds(RelationAnswer, source=_NAMES, type=st.text(), target=_NAMES), max_size=3
        ),
    ),
    st.sampled_from([SELF, "Sam"]),
)
def test_any_valid_answer_normalises_to_a_consistent_extraction(
    answer: ExtractionAnswer, owner: str
) -> None:
    assert_consistent(normalise_answer(answer, owner=owner))


def test_a_month_still_running_dates_the_change_within_it_so_far() -> None:
    fact = only_fact("I started a new job at Globex in June 2024.")
    assert fact.valid_from is not None
    assert datetime(2024, 6, 1, tzinfo=UTC) < fact.valid_from < NOW


# --- the knowledge-updates data set ----------------------------------------------------------

DATA_DIR = Path(__file__).resolve().parents[1] / "bench" / "data"


def test_the_committed_knowledge_updates_set_is_what_its_generator_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_knowledge_updates", DATA_DIR / "make_knowledge_updates.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, generator)  # its dataclasses look it up
    spec.loader.exec_module(generator)
    built = generator.build()
    assert json.loads((DATA_DIR / "knowledge_updates.json").read_text()) == built

    assert len(built["subjects"]) >= 100
    assert all(2 <= len(s["timeline"]) <= 5 for s in built["subjects"])
    turns = built["turns"]
    assert [t["timestamp"] for t in turns] == sorted(t["timestamp"] for t in turns)
    assert sum(t["corrects"] for t in turns) >= 20
    assert {t["date_form"] for t in turns} == {"none", "relative", "absolute"}
    current = {s["id"]: s["timeline"][-1]["value"] for s in built["subjects"]}
    for question in built["questions"]:
        if question["kind"] == "current":
            assert question["answer"] == current[question["subject"]]


# Words the shapes' cues are made of, and their beginnings and endings.
_CUE_WORDS = sorted(
    {w for s in patterns.SHAPES for w in s.cue_words.split("|") if w.isalpha()}
    | {w[:3] for s in patterns.SHAPES for w in s.cue_words.split("|") if w.isalpha()}
    | {"am on", "been to", "was in", "favourite", "favorite", "I am", "hi, I am", "goes hiking"}
)
_CUE_TEXTS = [
    "My best friend Dana and my co-worker Sam moved up to Lyon.",
    "I LIVE in a flat; livestreams are my thing.",
    "She has a Ph.D and an MBA, ma and ba aside.",
    "Been to Rome? I was in Paris, then off to Oslo with my labradoodle.",
    "I'm allergic to peanuts and colour-blind, and I'm on metformin.",
    "Call me Jo! My native language is Welsh; I speak French fluently.",
    "nothing here to see",
    "İ LİVE İN İSTANBUL and \u017ftudy in Kyiv",
    "",
]


@pytest.mark.parametrize("text", _CUE_TEXTS)
def test_one_scan_finds_the_shapes_each_cue_search_finds(text: str) -> None:
    # The extractor reads a sentence with only the shapes one scan finds: exactly those
    # whose own cue search matches, in their order, or it would miss or invent facts.
    assert patterns.cues().shapes(text) == [s for s in patterns.SHAPES if s.cue.search(text)]


@given(st.lists(st.sampled_from([*_CUE_WORDS, " ", ", ", "-", "X", "ing", "'s"]), max_size=12))
@settings(max_examples=200, deadline=None)
def test_one_scan_agrees_with_the_cue_searches_on_any_words(parts: list[str]) -> None:
    text = "".join(parts)
    assert patterns.cues().shapes(text) == [s for s in patterns.SHAPES if s.cue.search(text)]
