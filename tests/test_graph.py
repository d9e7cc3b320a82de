"""The knowledge graph: facts stated directly and derived from memories, entity resolution,
merges and splits, each contradiction policy, corrections, valid and system time, walks and
their limits, facts and entities in search, and key rotation of every sealed graph column.

The extractor is scripted here (what a text claims is given per text), so these tests pin the
store's behaviour whatever the offline rules or the LLM later read from a text."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from memvault import AsyncMemory
from memvault.admin import AsyncAdmin
from memvault.config import Settings
from memvault.crypto.envelope import generate_key
from memvault.db import sealed_columns
from memvault.db.tenancy import all_tenants
from memvault.errors import InvalidInput, NotFound
from memvault.graph import derive
from memvault.graph.claims import SELF, EntityMention, Extraction, FactClaim, RelationClaim
from tests.conftest import backend_of

Y2020, Y2021, Y2023, Y2024 = (datetime(y, 1, 1, tzinfo=UTC) for y in (2020, 2021, 2023, 2024))


@pytest.fixture
def claims(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Extraction]]:
    """What each text claims, as the extractor will say it."""
    scripted: dict[str, Extraction] = {}

    async def scripted_extract(text: str, **_: Any) -> Extraction:
        return scripted.get(text, Extraction())

    monkeypatch.setattr(derive, "extract", scripted_extract)
    yield scripted


def lives_in(subject: str, place: str, **extra: Any) -> FactClaim:
    return FactClaim(subject, "lives_in", f"{subject} lives in {place}", object=place, **extra)


async def current(memory: AsyncMemory, entity: str, **query: Any) -> list[str | None]:
    return [f.object or f.value for f in await memory.facts(user_id="u", entity=entity, **query)]


# --- facts, supersession, time --------------------------------------------------------------


async def test_a_new_functional_value_supersedes_the_old_and_keeps_it(
    memory: AsyncMemory,
) -> None:
    paris = await memory.add_fact("Caroline", "lives_in", object="Paris", user_id="u")
    berlin = await memory.add_fact("Caroline", "lives in", object="Berlin", user_id="u")
    assert berlin.predicate == "lives_in" and berlin.claim == "Caroline lives in Berlin"
    assert await current(memory, "caroline") == ["Berlin"]
    history = await memory.facts(user_id="u", entity="Caroline", include_superseded=True)
    old = next(f for f in history if f.id == paris.id)
    assert old.superseded_by == berlin.id
    assert old.superseded_at is not None and old.valid_until is not None
    # A predicate that holds many values at once supersedes nothing.
    await memory.add_fact("Caroline", "likes", value="tea", user_id="u")
    await memory.add_fact("Caroline", "likes", value="chess", user_id="u")
    assert sorted(await current(memory, "Caroline", predicate="likes")) == ["chess", "tea"]


async def test_valid_time_and_system_time_answer_different_questions(
    memory: AsyncMemory,
) -> None:
    await memory.add_fact("Bob", "works_for", object="Acme", valid_from=Y2020, user_id="u")
    await asyncio.sleep(0.01)
    learned_acme = datetime.now(UTC)
    await asyncio.sleep(0.01)
    await memory.add_fact("Bob", "works_for", object="Globex", valid_from=Y2023, user_id="u")
    assert await current(memory, "Bob") == ["Globex"]
    assert await current(memory, "Bob", valid_at=Y2021) == ["Acme"]
    assert await current(memory, "Bob", valid_at=Y2024) == ["Globex"]
    assert await current(memory, "Bob", valid_at=Y2020 - timedelta(days=1)) == []
    # What the store believed before it heard of Globex, whatever the valid time.
    assert await current(memory, "Bob", known_at=learned_acme) == ["Acme"]
    assert await current(memory, "Bob", known_at=Y2020) == []


async def test_valid_time_and_system_time_answer_together(memory: AsyncMemory) -> None:
    """A fact superseded later: as known before the supersession it is current (valid then
    and now); as known after it, the old value is not valid now but is valid at the old time."""
    berlin = await memory.add_fact(
        "Bob", "lives_in", object="Berlin", valid_from=Y2020, user_id="u"
    )
    munich = await memory.add_fact(
        "Bob", "lives_in", object="Munich", valid_from=Y2024, user_id="u"
    )
    # The moments each was recorded: as known at the first, the second was not yet.
    before, after = berlin.recorded_at, munich.recorded_at
    assert before < after
    now = after + timedelta(seconds=1)
    expected = {
        (Y2021, before): ["Berlin"],
        (now, before): ["Berlin"],  # its end was not known yet
        (Y2021, after): ["Berlin"],
        (now, after): ["Munich"],
        (Y2020 - timedelta(days=1), after): [],  # before either held
        (Y2024, Y2020): [],  # before either was recorded
    }
    for (valid_at, known_at), facts in expected.items():
        found = await current(memory, "Bob", valid_at=valid_at, known_at=known_at)
        assert found == facts, (valid_at, known_at)
    assert await current(memory, "Bob", known_at=before) == ["Berlin"]
    assert await current(memory, "Bob", known_at=after) == ["Munich"]


async def test_older_news_is_recorded_as_past_without_replacing_the_current_value(
    memory: AsyncMemory,
) -> None:
    await memory.add_fact("Bob", "lives_in", object="Oslo", valid_from=Y2023, user_id="u")
    await memory.add_fact("Bob", "lives_in", object="Rome", valid_from=Y2020, user_id="u")
    assert await current(memory, "Bob") == ["Oslo"]
    assert await current(memory, "Bob", valid_at=Y2021) == ["Rome"]


async def test_prefer_old_keeps_the_current_value_and_records_the_rejected_one(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(graph_contradiction_policy="prefer_old"))
    try:
        kept = await memory.add_fact("Ann", "lives_in", object="Lyon", user_id="u")
        rejected = await memory.add_fact("Ann", "lives_in", object="Nice", user_id="u")
        assert await current(memory, "Ann") == ["Lyon"]
        assert rejected.superseded_by == kept.id
        assert await current(memory, "Ann", valid_at=datetime.now(UTC)) == ["Lyon"]
        history = await memory.facts(user_id="u", entity="Ann", include_superseded=True)
        assert {f.object for f in history} == {"Lyon", "Nice"}
    finally:
        await memory.close()


async def test_flag_review_keeps_both_and_lists_a_review_item(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(graph_contradiction_policy="flag_review"))
    try:
        first = await memory.add_fact("Ann", "works_for", object="Initech", user_id="u")
        second = await memory.add_fact("Ann", "works_for", object="Hooli", user_id="u")
        assert sorted(await current(memory, "Ann")) == ["Hooli", "Initech"]
        (review,) = await memory.fact_reviews(user_id="u")
        assert (review.fact.id, review.conflicts_with.id) == (second.id, first.id)
        assert await memory.fact_reviews(user_id="someone-else") == []
        # Paged one by one, newest first, every review is reached once.
        await memory.add_fact("Ann", "works_for", object="Globex", user_id="u")
        every = await memory.fact_reviews(user_id="u")
        pages = [await memory.fact_reviews(user_id="u", limit=1, offset=i) for i in range(4)]
        assert len(every) == 3 and [r.id for p in pages for r in p] == [r.id for r in every]
    finally:
        await memory.close()


async def test_a_correction_supersedes_what_it_corrects_and_says_it_never_held(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    claims["My sister is called Maria."] = Extraction(
        facts=(FactClaim(SELF, "sister", "My sister is Maria", object="Maria"),)
    )
    claims["No, I meant my sister is called Marta."] = Extraction(
        facts=(FactClaim(SELF, "sister", "My sister is Marta", object="Marta", corrects=True),)
    )
    await memory.add("My sister is called Maria.", user_id="u", occurred_at=Y2021)
    await memory.add("No, I meant my sister is called Marta.", user_id="u", occurred_at=Y2024)
    assert await current(memory, SELF) == ["Marta"]
    # Marta was the sister all along; Maria never was, at any time.
    assert await current(memory, SELF, valid_at=Y2023) == ["Marta"]
    history = await memory.facts(user_id="u", entity=SELF, include_superseded=True)
    assert {f.object for f in history} == {"Maria", "Marta"}


async def test_a_fact_said_twice_is_one_fact_with_two_sources(
    make_settings: Callable[..., Settings], claims: dict[str, Extraction]
) -> None:
    memory = await AsyncMemory.open(make_settings(dedup_similar_threshold=0.999))
    try:
        for text in ("Caroline moved to Paris.", "Caroline lives in Paris now."):
            claims[text] = Extraction(facts=(lives_in("Caroline", "Paris"),))
        one = await memory.add("Caroline moved to Paris.", user_id="u")
        two = await memory.add("Caroline lives in Paris now.", user_id="u")
        assert one.id != two.id
        (fact,) = await memory.facts(user_id="u", entity="Paris")
        assert sorted(fact.memory_ids) == sorted([one.id, two.id])
        # Without infer nothing is extracted.
        claims["Dave lives in Rome."] = Extraction(facts=(lives_in("Dave", "Rome"),))
        await memory.add("Dave lives in Rome.", user_id="u", infer=False)
        assert await memory.facts(user_id="u", entity="Dave") == []
    finally:
        await memory.close()


async def test_bad_fact_input_is_refused_and_stores_nothing(memory: AsyncMemory) -> None:
    for bad in (
        {"object": "Paris", "value": "Paris"},
        {},
        {"object": "Paris", "confidence": 2.0},
        {"object": "  "},
    ):
        with pytest.raises(InvalidInput):
            await memory.add_fact("Bob", "lives_in", user_id="u", **bad)
    with pytest.raises(InvalidInput):
        await memory.add_fact("Bob", "lives in Paris!", object="Paris", user_id="u")
    assert await memory.facts(user_id="u", include_superseded=True) == []


# --- entities: resolution, merge, split -----------------------------------------------------


async def test_mentions_resolve_by_normalised_name_and_alias(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    claims["a"] = Extraction(
        entities=(EntityMention("The Acme Corporation", "organisation", aliases=("ACME",)),)
    )
    claims["b"] = Extraction(facts=(FactClaim("acme corporation", "based_in", "x", value="Ohio"),))
    claims["c"] = Extraction(facts=(FactClaim("Acme", "founded", "y", value="1990"),))
    for text in ("a", "b", "c"):
        await memory.add(text, user_id="u")
    (acme,) = await memory.entities(user_id="u", q="acme")
    assert acme.name == "The Acme Corporation" and acme.type == "organisation"
    assert {f.value for f in (await memory.entity(acme.id, user_id="u")).facts} == {
        "Ohio",
        "1990",
    }
    assert [e.id for e in await memory.entities(user_id="u", q="ACME")] == [acme.id]
    assert await memory.entities(user_id="other", q="acme") == []


async def test_a_batch_names_one_entity_once_and_each_memory_mentions_it(
    memory: AsyncMemory, claims: dict[str, Extraction], raw: psycopg.Connection[Any]
) -> None:
    texts = ["The weather report for Ohio", "Founded long before the war", "Corporate aliases"]
    claims[texts[0]] = Extraction(facts=(FactClaim("Acme", "based_in", "based", value="Ohio"),))
    claims[texts[1]] = Extraction(facts=(FactClaim("Acme", "founded", "founded", value="1990"),))
    claims[texts[2]] = Extraction(
        entities=(EntityMention("Acme", "organisation", aliases=("ACME Corp",)),)
    )
    results = await memory.add_many([{"content": t, "user_id": "u"} for t in texts])
    (acme,) = await memory.entities(user_id="u", q="acme")
    # The alias a later memory of the batch gave is learned, though the name was resolved.
    assert [e.id for e in await memory.entities(user_id="u", q="ACME Corp")] == [acme.id]
    mentioned = raw.execute(
        "SELECT memory_id FROM entity_mentions WHERE entity_id = %s", (acme.id,)
    ).fetchall()
    assert {row[0] for row in mentioned} == {r.id for r in results}


async def test_a_batch_writes_its_claims_in_order_as_one_memory_at_a_time_would(
    memory: AsyncMemory, make_settings: Callable[..., Settings], claims: dict[str, Extraction]
) -> None:
    """A bulk write resolves a batch's names and reads its subjects' facts up front: what a
    later memory of the batch claims still meets what an earlier one wrote."""
    texts = ["Paris then", "Berlin now", "Berlin again", "Initech", "Hooli", "IBM", "IBM Corp"]
    claims[texts[0]] = Extraction(facts=(lives_in("Caroline", "Paris"),))
    claims[texts[1]] = claims[texts[2]] = Extraction(facts=(lives_in("Caroline", "Berlin"),))
    for text in texts[3:5]:
        claims[text] = Extraction(facts=(FactClaim("Ann", "works_for", text, object=text),))
    ibm = "International Business Machines"
    claims[texts[5]] = Extraction(facts=(FactClaim(ibm, "hq", "hq", value="NY"),))
    claims[texts[6]] = Extraction(facts=(FactClaim(f"{ibm} Corp", "ceo", "ceo", value="X"),))
    results = await memory.add_many([{"content": t, "user_id": "u"} for t in texts])
    (berlin,) = await memory.facts(user_id="u", entity="Caroline")
    assert berlin.object == "Berlin"
    assert sorted(berlin.memory_ids) == sorted([results[1].id, results[2].id])
    history = await memory.facts(user_id="u", entity="Caroline", include_superseded=True)
    (paris,) = [f for f in history if f.object == "Paris"]
    assert paris.superseded_by == berlin.id
    assert await current(memory, "Ann") == ["Hooli"]
    flagging = await AsyncMemory.open(
        make_settings(graph_contradiction_policy="flag_review", graph_entity_match_threshold=0.5)
    )
    try:
        await flagging.add_many([{"content": t, "user_id": "v"} for t in texts[3:]])
        (review,) = await flagging.fact_reviews(user_id="v")
        assert (review.fact.object, review.conflicts_with.object) == ("Hooli", "Initech")
        # The second name joins the entity the first created in the same batch.
        named = [e for e in await flagging.entities(user_id="v") if ibm in e.name]
        assert len(named) == 1
    finally:
        await flagging.close()


async def test_embedding_similarity_joins_above_the_threshold_only(
    make_settings: Callable[..., Settings],
) -> None:
    probe = await AsyncMemory.open(make_settings())
    embedded = await backend_of(probe).embeddings.embed_batch(
        ["International Business Machines", "International Business Machines Corp"]
    )
    await probe.close()
    a, b = embedded.vectors
    similarity = sum(x * y for x, y in zip(a, b, strict=True))
    for threshold, joined in ((similarity - 0.02, True), (min(similarity + 0.02, 1.0), False)):
        memory = await AsyncMemory.open(make_settings(graph_entity_match_threshold=threshold))
        user = f"u{threshold}"
        await memory.add_fact("International Business Machines", "hq", value="NY", user_id=user)
        await memory.add_fact(
            "International Business Machines Corp", "ceo", value="X", user_id=user
        )
        names = {e.name for e in await memory.entities(user_id=user)}
        assert (len(names) == 1) is joined, (threshold, names)
        await memory.close()


async def test_merge_moves_facts_and_names_and_split_moves_them_back(
    memory: AsyncMemory,
) -> None:
    await memory.add_fact("Bob", "lives_in", object="Leeds", user_id="u")
    await memory.add_fact("Robert", "works_for", object="Acme", user_id="u")
    await memory.add_fact("Alice", "knows", object="Bob", user_id="u")
    (bob,) = await memory.entities(user_id="u", q="Bob")
    (robert,) = await memory.entities(user_id="u", q="Robert")
    merged = await memory.merge_entities(bob.id, into=robert.id, user_id="u")
    assert merged.id == robert.id and merged.merged == [bob.id]
    assert {f.predicate for f in merged.facts} == {"lives_in", "works_for", "knows"}
    assert sorted(await current(memory, "Bob")) == sorted(await current(memory, "Robert"))
    # A new mention of Bob now resolves to Robert.
    await memory.add_fact("Bob", "age", value="41", user_id="u")
    assert "41" in await current(memory, "Robert")
    assert bob.id not in {e.id for e in await memory.entities(user_id="u")}
    assert [e.id for e in await memory.entities(user_id="u", q="Bob")] == [robert.id]
    with pytest.raises(InvalidInput):
        await memory.merge_entities(bob.id, into=robert.id, user_id="u")

    restored = await memory.split_entity(bob.id, user_id="u")
    assert {f.predicate for f in restored.facts} == {"lives_in", "knows"}
    assert sorted(await current(memory, "Robert")) == ["41", "Acme"]
    # The name came back whole: it did not stay behind as an alias of Robert.
    assert sorted(await current(memory, "Bob")) == ["Bob", "Leeds"]
    assert [e.id for e in await memory.entities(user_id="u", q="Bob")] == [bob.id]
    with pytest.raises(InvalidInput):
        await memory.split_entity(bob.id, user_id="u")
    with pytest.raises(NotFound):
        await memory.merge_entities(bob.id, into=robert.id, user_id="someone-else")


# --- walks ----------------------------------------------------------------------------------


async def test_the_walk_honours_depth_and_its_limits(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(graph_max_nodes=50))
    try:
        chain = ["A0", "B1", "C2", "D3", "E4"]
        for left, right in itertools.pairwise(chain):
            await memory.add_fact(left, "knows", object=right, user_id="u")
        await memory.add_fact("A0", "age", value="30", user_id="u")  # literals are no edges
        (start,) = await memory.entities(user_id="u", q="A0")
        for depth in (1, 2, 3):
            view = await memory.entity_graph(start.id, user_id="u", depth=depth)
            assert [n.name for n in view.nodes] == chain[: depth + 1]
            assert [n.depth for n in view.nodes] == list(range(depth + 1))
            assert len(view.edges) == depth and {e.kind for e in view.edges} == {"fact"}
        for bad in (0, 4):
            with pytest.raises(InvalidInput):
                await memory.entity_graph(start.id, user_id="u", depth=bad)
        with pytest.raises(NotFound):
            await memory.entity_graph(start.id, user_id="other", depth=1)
    finally:
        await memory.close()


async def test_a_hub_is_cut_by_the_fanout_and_node_limits(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(graph_fanout=5, graph_max_nodes=8))
    try:
        for i in range(12):
            await memory.add_fact("Hub", "knows", object=f"Spoke{i}", user_id="u")
            await memory.add_fact(f"Spoke{i}", "knows", object=f"Leaf{i}", user_id="u")
        (hub,) = await memory.entities(user_id="u", q="Hub")
        view = await memory.entity_graph(hub.id, user_id="u", depth=2)
        assert len([n for n in view.nodes if n.depth == 1]) == 5
        assert len(view.nodes) <= 8
    finally:
        await memory.close()


async def test_a_cut_view_says_how_much_it_left_and_a_higher_limit_gets_the_rest(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(graph_max_nodes=8, graph_max_edges=20))
    try:
        for i in range(12):
            await memory.add_fact("Hub", "knows", object=f"Spoke{i}", user_id="u")
        (hub,) = await memory.entities(user_id="u", q="Hub")
        cut = await memory.entity_graph(hub.id, user_id="u", depth=1)
        assert (len(cut.nodes), cut.reached_nodes, cut.limit) == (8, 13, 8)
        assert len(cut.edges) == cut.reached_edges == 7  # the edges among the nodes kept
        whole = await memory.entity_graph(hub.id, user_id="u", depth=1, limit=20)
        assert (len(whole.nodes), whole.reached_nodes, len(whole.edges)) == (13, 13, 12)
        user = await memory.user_graph(user_id="u", limit=5)
        assert (len(user.nodes), user.reached_nodes) == (5, 13)
        assert len((await memory.user_graph(user_id="u", limit=13)).edges) == 12
        for bad in (0, 5_001):
            with pytest.raises(InvalidInput):
                await memory.entity_graph(hub.id, user_id="u", depth=1, limit=bad)
            with pytest.raises(InvalidInput):
                await memory.user_graph(user_id="u", limit=bad)
    finally:
        await memory.close()


async def test_the_whole_graph_of_a_user_answers_now_and_as_of(memory: AsyncMemory) -> None:
    await memory.add_fact("Ana", "lives_in", object="Porto", user_id="u", valid_from=Y2020)
    await memory.add_fact("Ana", "lives_in", object="Lisbon", user_id="u", valid_from=Y2023)
    await memory.add_fact("Ana", "works_for", object="Feedzai", user_id="u", valid_from=Y2020)
    await memory.add_fact("Bo", "knows", object="Cy", user_id="other-user")

    def links(view: Any) -> set[tuple[str, str, str]]:
        names = {n.id: n.name for n in view.nodes}
        return {(names[e.source_id], e.type, names[e.target_id]) for e in view.edges}

    now = await memory.user_graph(user_id="u")
    assert {n.name for n in now.nodes} == {"Ana", "Porto", "Lisbon", "Feedzai"}
    assert {n.depth for n in now.nodes} == {0} and now.reached_nodes == 4
    assert links(now) == {("Ana", "lives_in", "Lisbon"), ("Ana", "works_for", "Feedzai")}
    then = await memory.user_graph(user_id="u", valid_at=Y2021)
    assert links(then) == {("Ana", "lives_in", "Porto"), ("Ana", "works_for", "Feedzai")}
    # Before anything was known, nothing: not even the entities.
    before = await memory.user_graph(user_id="u", known_at=Y2020)
    assert (before.nodes, before.edges, before.reached_nodes) == ([], [], 0)
    # An entity's neighbourhood answers the same moments.
    (ana,) = await memory.entities(user_id="u", q="Ana")
    around = await memory.entity_graph(ana.id, user_id="u", depth=1, valid_at=Y2021)
    assert links(around) == links(then)
    assert {n.name for n in (await memory.user_graph(user_id="other-user")).nodes} == {"Bo", "Cy"}
    assert (await memory.for_tenant("other").user_graph(user_id="u")).nodes == []


async def test_relations_are_edges_of_the_walk(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    claims["Redis is part of the Cache project."] = Extraction(
        relations=(RelationClaim("Redis", "part of", "Cache", properties={"since": "2021"}),)
    )
    await memory.add("Redis is part of the Cache project.", user_id="u")
    (redis,) = await memory.entities(user_id="u", q="Redis")
    view = await memory.entity_graph(redis.id, user_id="u", depth=1)
    (edge,) = view.edges
    assert (edge.type, edge.kind) == ("PART_OF", "relation")


# --- search ---------------------------------------------------------------------------------


async def test_search_answers_facts_and_entities_only_when_asked(
    memory: AsyncMemory,
) -> None:
    await memory.add("We went hiking in the Alps last summer.", user_id="u")
    await memory.add_fact("Caroline", "lives_in", object="Paris", user_id="u")
    await memory.add_fact("Caroline", "lives_in", object="Berlin", user_id="u")
    await memory.add_fact("Paris", "located_in", object="France", user_id="u")
    await memory.add_fact("Berlin", "located_in", object="Germany", user_id="u")
    await memory.add_fact("Zed", "likes", value="jazz", user_id="u")
    plain = await memory.search("Tell me about Caroline", user_id="u", track_access=False)
    assert plain.facts is None and plain.entities is None
    asked = await memory.search(
        "Tell me about Caroline", user_id="u", include=["facts", "entities"], track_access=False
    )
    assert [h.id for h in asked.results] == [h.id for h in plain.results]
    assert asked.entities and asked.entities[0].name == "Caroline"
    assert asked.facts is not None
    claims = [f.claim for f in asked.facts]
    assert claims[0] == "Caroline lives in Berlin"
    assert "Caroline lives in Paris" not in claims  # superseded
    assert "Berlin located in Germany" in claims  # one hop out, through the current value
    assert all(f.scores["temporal"] == 1.2 for f in asked.facts)
    only = await memory.search("Caroline", user_id="u", include=["entities"])
    assert only.facts is None and only.entities
    # What a search returns counts an access, written in the background as memories' are,
    # for the lifecycle; it leaves salience, and with it later rankings, alone.
    (before,) = await memory.entities(user_id="u", q="Caroline")
    assert before.access_count == 0
    await backend_of(memory).access.flush()
    (after,) = await memory.entities(user_id="u", q="Caroline")
    assert after.access_count == 1 and after.salience == before.salience


async def test_a_shorter_fact_list_is_the_head_of_a_longer_one(memory: AsyncMemory) -> None:
    """A neighbourhood of more facts than the query's words and meaning find: the rest rank by
    nearness to the named entity alone, recall reads back only those that can still make the
    list, and a short list is exactly the head of a long one."""
    people = [f"Person{i}" for i in range(8)]
    for n, person in enumerate(people):
        await memory.add_fact(
            "Caroline", "knows", object=person, user_id="u", confidence=0.5 + n / 20
        )
    for n in range(112):  # one and two hops out, more than words and meaning bring (50 each)
        person = people[n % len(people)]
        if n % 4 == 0:
            await memory.add_fact(person, "lives_in", object=f"Town{n}", user_id="u")
            await memory.add_fact(f"Town{n}", "located_in", object="Norway", user_id="u")
        else:
            await memory.add_fact(
                person, "likes", value=f"hobby {n}", user_id="u", confidence=0.3 + (n % 7) / 10
            )
    asked = "Tell me about Caroline"
    long = await memory.search(asked, user_id="u", include=["facts"], limit=100, track_access=False)
    assert long.facts is not None and len(long.facts) > 90
    near_only = [f for f in long.facts if f.scores["keyword"] == 0 and f.scores["vector"] == 0]
    assert near_only  # ranked by nearness alone
    for limit in (3, 60, 85):
        short = await memory.search(
            asked, user_id="u", include=["facts"], limit=limit, track_access=False
        )
        assert short.facts is not None
        assert [f.id for f in short.facts] == [f.id for f in long.facts[:limit]]
    assert [f.scores["entity"] for f in long.facts[:8]] == [1.0] * 8  # Caroline's own first


async def test_a_past_fact_ranks_below_a_current_one(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    claims["I used to play the violin; now I play the cello."] = Extraction(
        facts=(
            FactClaim(SELF, "plays", "The user plays the violin", value="violin", temporal="past"),
            FactClaim(SELF, "plays", "The user plays the cello", value="cello"),
        )
    )
    await memory.add("I used to play the violin; now I play the cello.", user_id="u")
    found = await memory.search(
        "which instrument does the user play", user_id="u", include=["facts"]
    )
    assert found.facts is not None
    by_value = {f.value: f for f in found.facts}
    assert by_value["cello"].scores["temporal"] == 1.2
    assert by_value["violin"].scores["temporal"] == 0.7
    assert [f.value for f in found.facts][:2] == ["cello", "violin"]


async def test_a_current_fact_is_recalled_by_meaning_past_the_values_it_replaced(
    memory: AsyncMemory,
) -> None:
    # Sixty replaced values sit nearer the question than the current one and share its
    # words; the current value is found by meaning alone, and no replaced one is shown.
    for n in range(60):
        await memory.add_fact(
            "Dora", "favourite_drink", value=("coffee", "tea")[n % 2], user_id="u"
        )
    kvass = await memory.add_fact("Dora", "favourite_drink", value="kvass", user_id="u")
    found = await memory.search(
        "coffee or tea?", user_id="u", include=["facts"], track_access=False
    )
    assert found.facts is not None
    assert [f.id for f in found.facts] == [kvass.id]
    assert found.facts[0].scores["vector"] > 0 and found.facts[0].scores["keyword"] == 0


# --- key rotation ---------------------------------------------------------------------------


async def test_rotation_reseals_every_graph_column_and_rekeys_lookups(
    make_settings: Callable[..., Settings],
    raw: psycopg.Connection[Any],
    claims: dict[str, Extraction],
) -> None:
    old_key, new_key = generate_key(), generate_key()
    claims["Redis is part of Cache."] = Extraction(
        entities=(EntityMention("Redis", "tool", aliases=("redis-server",), description="a db"),),
        relations=(RelationClaim("Redis", "PART_OF", "Cache", properties={"since": "2021"}),),
    )
    before = await AsyncMemory.open(make_settings(encryption_key=old_key))
    await before.add("Redis is part of Cache.", user_id="u")
    await before.add_fact("Redis", "version", value="7.2", user_id="u")
    await before.close()

    during = await AsyncMemory.open(
        make_settings(encryption_key=new_key, encryption_old_keys=old_key)
    )
    sealed_rows = (
        sum(
            raw.execute(f"SELECT count(*) FROM {table} WHERE key_id IS NOT NULL").fetchone()[0]
            for table in ("memories", "entities", "facts", "relations")
        )
        + raw.execute("SELECT count(*) FROM memory_history").fetchone()[0]
    )
    with all_tenants():
        async with backend_of(during).engine.connect() as conn:
            active = backend_of(during).keys.current().active.key_id
            assert await sealed_columns.count_stale(conn, active) == sealed_rows
    await AsyncAdmin.of(during).rotate_encryption_key(reload_grace_s=0)
    await during.close()

    after = await AsyncMemory.open(make_settings(encryption_key=new_key))
    try:
        active = backend_of(after).keys.current().active.key_id
        for table in ("entities", "facts", "relations"):
            keys = {r[0] for r in raw.execute(f"SELECT DISTINCT key_id FROM {table}")}
            assert keys == {active}, table
        (redis,) = await after.entities(user_id="u", q="redis-server")
        assert (redis.name, redis.aliases, redis.description) == ("Redis", ["redis-server"], "a db")
        assert await current(after, "Redis") == ["7.2"]
        found = await after.search("redis version", user_id="u", include=["facts"])
        assert found.facts and found.facts[0].value == "7.2"
        exported = await after.export_graph(user_id="u")
        assert "since" in exported["graph.cypher"]
    finally:
        await after.close()


async def test_concurrent_writers_naming_the_same_entities_make_each_once(
    memory: AsyncMemory, caplog: pytest.LogCaptureFixture
) -> None:
    calls = [
        memory.add_fact(a, "knows", object=b, user_id="u")
        for _ in range(6)
        for a, b in (("Xan", "Yu"), ("Yu", "Xan"), ("Zed", "Xan"))
    ]
    with caplog.at_level(logging.WARNING):
        await asyncio.gather(*calls)
    # Caching the names' vectors in each writer's own order deadlocked them: PostgreSQL broke
    # each deadlock after a second (18 calls took 4.3 s, not 0.3) and the cache lost the write.
    assert not [r.getMessage() for r in caplog.records if "conflict" in r.getMessage()]
    names = sorted(e.name for e in await memory.entities(user_id="u"))
    assert names == ["Xan", "Yu", "Zed"]
    assert len(await memory.facts(user_id="u")) == 3  # each said six times: one fact each


async def test_concurrent_batches_naming_entities_in_opposite_orders_both_land(
    memory: AsyncMemory, claims: dict[str, Extraction]
) -> None:
    """A batch writes several memories' graph in one transaction. Locking each memory's
    names in turn, two batches naming the same people the other way round each held one
    pair while waiting for the other: PostgreSQL broke the deadlock by failing one (a 503)."""
    pairs = [("Ann", "Ben"), ("Cat", "Dan"), ("Eve", "Fay")]

    def batch(tag: str, order: list[tuple[str, str]]) -> list[dict[str, Any]]:
        items = []
        for a, b in order:
            text = f"{a} has met {b} ({tag})."
            claims[text] = Extraction(facts=(FactClaim(a, "knows", f"{a} knows {b}", object=b),))
            items.append({"content": text, "user_id": "u"})
        return items

    for round_ in range(4):
        await asyncio.gather(
            *(
                memory.add_many(batch(f"{round_}.{n}", pairs if n % 2 else pairs[::-1]))
                for n in range(6)
            )
        )
    names = sorted(e.name for e in await memory.entities(user_id="u"))
    assert names == ["Ann", "Ben", "Cat", "Dan", "Eve", "Fay"]


async def test_a_text_dedup_rewrites_is_derived_from_what_is_stored(
    make_settings: Callable[..., Settings], claims: dict[str, Extraction]
) -> None:
    """The offline extractor reads each text before embedding; when dedup then folds the text
    into a memory that already says more, what is stored is extracted, not what was sent."""
    memory = await AsyncMemory.open(make_settings(dedup_similar_threshold=0.5))
    try:
        richer, poorer = "Bob has a dog called Rufus", "Bob has a dog"
        claims[richer] = Extraction(
            facts=(FactClaim("Bob", "owns", "Bob owns Rufus", object="Rufus"),)
        )
        claims[poorer] = Extraction(
            facts=(FactClaim("Bob", "owns", "Bob owns a dog", value="a dog"),)
        )
        await memory.add(richer, user_id="u")
        folded = await memory.add(poorer, user_id="u")
        assert folded.dedup.action == "merge" and folded.content == richer
        assert [f.object or f.value for f in await memory.facts(user_id="u")] == ["Rufus"]
    finally:
        await memory.close()


async def test_a_batch_derives_every_item_with_one_embedding_call(
    make_settings: Callable[..., Settings], claims: dict[str, Extraction]
) -> None:
    memory = await AsyncMemory.open(make_settings(dedup_similar_threshold=0.999))
    try:
        texts = [f"Person{i} moved to Town{i}." for i in range(3)]
        for i, text in enumerate(texts):
            claims[text] = Extraction(facts=(lives_in(f"Person{i}", f"Town{i}"),))
        embeddings = backend_of(memory).embeddings
        calls: list[int] = []
        real = embeddings.embed_batch

        async def counted(batch: Any) -> Any:
            calls.append(len(batch))
            return await real(batch)

        embeddings.embed_batch = counted  # type: ignore[method-assign]
        await memory.add_many([{"content": t, "user_id": "u"} for t in texts])
        embeddings.embed_batch = real  # type: ignore[method-assign]
        assert sorted(await current(memory, "Town1")) == ["Town1"]
        assert len(await memory.facts(user_id="u")) == 3
        # One model call: the three memories with every name and claim they make.
        assert calls == [3 + 9]
    finally:
        await memory.close()


async def test_writers_of_one_user_in_one_transaction_share_what_they_defer(
    memory: AsyncMemory,
) -> None:
    """A deadline-bound batch derives a slice at a time, a writer a slice, and writes them
    all in one transaction: an entity one slice creates and the next teaches an alias is
    indexed once, under both names (deferred apart, its postings were inserted twice)."""
    from memvault.db.tenancy import tenant_scope
    from memvault.db.units import transaction
    from memvault.graph.writer import GraphWriter, Owner, Prepared

    backend = backend_of(memory)
    said = [await memory.add(f"Notes {n} on Dana", user_id="u", infer=False) for n in range(2)]
    owner = Owner(memory.tenant_id, "u")
    mentions = (EntityMention("Dana"), EntityMention("Dana", aliases=("Danielle Okafor",)))
    derived = [
        derive.Derivation(
            GraphWriter(backend, owner), Prepared(Extraction(entities=(m,))), datetime.now(UTC), "x"
        )
        for m in mentions
    ]
    with tenant_scope(memory.tenant_id):
        async with transaction(backend.engine) as conn:
            await derive.lock_names(conn, derived)
            await derive.write_many(conn, zip(derived, [s.id for s in said], strict=True))
    (dana,) = await memory.entities(user_id="u", q="Dana")
    assert [e.id for e in await memory.entities(user_id="u", q="Okafor")] == [dana.id]


async def test_a_name_a_bulk_write_creates_is_one_entity_for_its_later_items(
    memory: AsyncMemory,
) -> None:
    """A bulk write reads the user's entities before it writes: an entity its first item (in
    one app) creates is the one a later item (in another app: another writer) names. The
    user's own entity is found by its key only (no name embedding to fall back on)."""
    await memory.add_many(
        [
            {"content": "I live in Berlin.", "user_id": "u", "app_id": "a"},
            {"content": "I work at Acme Corporation.", "user_id": "u", "app_id": "b"},
            {"content": "I play the cello.", "user_id": "u", "app_id": "b"},
        ]
    )
    names = [e.name for e in await memory.entities(user_id="u")]
    assert names.count("@user") == 1 and len(names) == len(set(names)), names
