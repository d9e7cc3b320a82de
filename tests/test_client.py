"""One behaviour suite, four faces: ``Memory`` and ``AsyncMemory`` in-process, ``MemoryClient``
and ``AsyncMemoryClient`` against a real server (uvicorn in a thread, on 127.0.0.1) over the
same kind of store. Every face must pass the same assertions; then the client's error mapping
against a tiny real HTTP server that answers what the test asks for."""

from __future__ import annotations

import asyncio
import inspect
import socket
import typing
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from memvault import (
    AsyncMemory,
    AsyncMemoryClient,
    ConfigurationError,
    ContentTooLong,
    InvalidInput,
    Memory,
    MemoryClient,
    MemvaultError,
    NotFound,
    PIIRejected,
    RateLimited,
    ServerError,
    ServerUnreachable,
    Settings,
    StoreUnavailable,
    Unauthorized,
)
from memvault.admin import AsyncAdmin
from memvault.api import create_app
from memvault.errors import Conflict
from memvault.lifecycle.reports import (
    AuditPage,
    DeletionReceipt,
    HealthActionRequest,
    HealthActionResult,
    MemoryHealth,
)
from memvault.models import AddResult, MemoryRecord, SearchResult
from memvault.operations import client_operations
from tests.conftest import TemplateCopies, _template_copy, backend_of, settings_for
from tests.lossy import LosesConnections, LosesTheFirstAnswer
from tests.serving import serving
from tests.test_client_cognitive import COGNITIVE_METHODS

# Every operation the table gives a service method has its client method; the cognitive ones
# have their own tests (tests/test_client_cognitive.py).
DATA_METHODS = sorted(
    {op.service for op in client_operations() if op.service} - set(COGNITIVE_METHODS)
)
FACES = ["Memory", "AsyncMemory", "MemoryClient", "AsyncMemoryClient"]
LIMIT = 2_000  # max_content_chars for every face, so ContentTooLong stays cheap


class Awaiting:
    """A sync face whose methods can be awaited, so one suite drives all four faces."""

    def __init__(self, face: Any) -> None:
        self._face = face

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._face, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


@pytest.fixture(scope="module", params=FACES)
async def mem(
    request: pytest.FixtureRequest,
    template_copies: TemplateCopies,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Any]:
    """One store (and server) on a database of its own per face, for the module: each test
    of the suite takes users of its own, so none reads what another wrote. A store and a
    server for each of the 60 cases cost a third of the module's time."""
    for url in _template_copy(template_copies):
        settings = settings_for(url, tmp_path_factory.mktemp("client"), max_content_chars=LIMIT)
        async for face in _face(request.param, settings):
            yield face


async def _face(face: str, settings: Settings) -> AsyncIterator[Any]:
    if face == "Memory":
        with Memory(settings) as memory:
            yield Awaiting(memory)
    elif face == "AsyncMemory":
        async with await AsyncMemory.open(settings) as async_memory:
            yield async_memory
    else:
        # Auth is off here, so no key: a key sent to such a server is still checked.
        with serving(create_app(settings)) as url:
            if face == "MemoryClient":
                with MemoryClient(url) as client:
                    yield Awaiting(client)
            else:
                async with AsyncMemoryClient(url) as async_client:
                    yield async_client


# --- the behaviour suite --------------------------------------------------------------------


async def test_add_answers_with_the_memory_and_how_it_was_stored(mem: Any) -> None:
    text = "Rita's phone is +44 20 7946 0958, she prefers texts"
    first = await mem.add(text, user_id="rita", tags=["contact"], metadata={"via": "chat"})
    assert isinstance(first, AddResult)
    assert first.dedup.action == "stored_new" and first.embedded
    assert first.pii.found == {"phone": 1} and first.pii.redacted
    assert "7946" not in first.content and first.tags == ["contact"]
    again = await mem.add(text, user_id="rita")
    assert again.dedup.action == "duplicate_exact" and again.dedup.existing_id == first.id
    assert again.id == first.id


async def test_get_update_delete_and_history_round_trip(mem: Any) -> None:
    added = await mem.add("Ana likes tea", user_id="ana", metadata={"topic": "drink"})
    got = await mem.get(str(added.id), user_id="ana")
    assert isinstance(got, MemoryRecord) and got.content == "Ana likes tea"
    assert got.model_dump() == MemoryRecord.model_validate(added.model_dump()).model_dump()
    changed = await mem.update(added.id, user_id="ana", content="Ana likes coffee")
    assert changed.content == "Ana likes coffee"
    merged = await mem.update(added.id, user_id="ana", metadata={"topic": None, "mood": "calm"})
    assert merged.metadata == {"mood": "calm"}
    history = await mem.history(added.id, user_id="ana")
    assert history[1].old_content == "Ana likes tea"
    assert history[1].new_content == "Ana likes coffee"
    assert await mem.delete(added.id, user_id="ana") is None
    with pytest.raises(NotFound):
        await mem.get(added.id, user_id="ana")
    history = await mem.history(added.id, user_id="ana")
    assert [h.action for h in history] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    # Deleted means deleted: the history keeps a tombstone, not the text.
    assert {h.old_content for h in history} | {h.new_content for h in history} == {None}


async def test_list_pages_with_a_cursor_and_filters(mem: Any) -> None:
    for i in range(5):
        await mem.add(
            f"note {i}",
            user_id="nia",
            tags=["even"] if i % 2 == 0 else [],
            metadata={"i": i},
            occurred_at=datetime(2024, 1, 1 + i, tzinfo=UTC),
            infer=False,
        )
    await mem.add("someone else's note", user_id="other", infer=False)
    page = await mem.list(user_id="nia", limit=2)
    assert [m.content for m in page.results] == ["note 4", "note 3"]
    second = await mem.list(user_id="nia", limit=2, cursor=page.next_cursor)
    assert [m.content for m in second.results] == ["note 2", "note 1"]
    last = await mem.list(user_id="nia", limit=2, cursor=second.next_cursor)
    assert [m.content for m in last.results] == ["note 0"] and last.next_cursor is None
    tagged = await mem.list(user_id="nia", tags=["even"])
    assert [m.content for m in tagged.results] == ["note 4", "note 2", "note 0"]
    by_meta = await mem.list(user_id="nia", metadata={"i": 3})
    assert [m.content for m in by_meta.results] == ["note 3"]
    recent = await mem.list(user_id="nia", occurred_after=datetime(2024, 1, 4, tzinfo=UTC))
    assert {m.content for m in recent.results} == {"note 3", "note 4"}


async def test_count_answers_how_many_match_the_filters_without_a_page(mem: Any) -> None:
    for i in range(4):
        await mem.add(f"entry {i}", user_id="cato", tags=["odd"] if i % 2 else [],
                      metadata={"i": i}, infer=False)  # fmt: skip
    await mem.add("another user's entry", user_id="not-cato", tags=["odd"], infer=False)
    assert await mem.count(user_id="cato") == 4
    assert await mem.count(user_id="cato", tags=["odd"]) == 2
    assert await mem.count(user_id="cato", metadata={"i": 3}) == 1
    assert await mem.count(user_id="nobody") == 0
    first = (await mem.list(user_id="cato", limit=1)).results[0]
    await mem.delete(first.id, user_id="cato")
    assert await mem.count(user_id="cato") == 3
    with pytest.raises(InvalidInput):
        await mem.count(user_id="cato", limit=5)  # a page size means nothing to a count
    with pytest.raises(InvalidInput):
        await mem.count(user_id="")


async def test_search_finds_by_meaning_and_by_keyword(mem: Any) -> None:
    facts = [
        "Erin's favourite drink is green tea",
        "Erin drives a red bicycle to work",
        "Erin's sister lives in Madrid",
    ]
    stored = await mem.add_many([{"content": f, "user_id": "erin"} for f in facts])
    assert [r.content for r in stored] == facts
    by_meaning = await mem.search("what does Erin like to drink?", user_id="erin", recipe="vector")
    assert isinstance(by_meaning, SearchResult) and not by_meaning.degraded
    top = by_meaning.results[0]
    assert top.content == facts[0] and 0 < top.similarity <= 1
    assert top.score > 0 and top.scores["vector"] == top.similarity
    by_word = await mem.search("Madrid", user_id="erin", recipe="keyword", limit=1)
    assert [h.content for h in by_word.results] == [facts[2]]
    assert by_word.recipe == "keyword" and by_word.results[0].scores["keyword"] > 0
    assert (await mem.search("Madrid", user_id="someone-else")).results == []


async def test_add_messages_stores_each_turn(mem: Any) -> None:
    turns = await mem.add_messages(
        [
            {"role": "user", "content": "My sister lives in Porto"},
            {"role": "assistant", "content": "Porto is lovely in spring", "name": "Ava"},
        ],
        user_id="lea",
        session_id="chat-7",
    )
    assert [t.content for t in turns] == ["My sister lives in Porto", "Porto is lovely in spring"]
    assert [t.metadata["turn"] for t in turns] == [0, 1]
    assert turns[1].metadata["speaker"] == "Ava" and turns[0].metadata["session_id"] == "chat-7"
    assert {t.source for t in turns} == {"conversation"}


async def test_delete_all_counts_and_keeps_to_the_app(mem: Any) -> None:
    await mem.add("one", user_id="max", app_id="x", infer=False)
    await mem.add("two", user_id="max", app_id="y", infer=False)
    assert await mem.delete_all(user_id="max", app_id="x") == 1
    assert [m.content for m in (await mem.list(user_id="max")).results] == ["two"]
    assert await mem.delete_all(user_id="max") == 1


async def test_errors_are_typed_and_carry_no_content(mem: Any) -> None:
    missing = uuid.uuid4()
    for call in (
        mem.get(missing, user_id="u"),
        mem.update(missing, user_id="u", content="new text"),
        mem.delete(missing, user_id="u"),
        mem.history(missing, user_id="u"),
    ):
        with pytest.raises(NotFound):
            await call
    with pytest.raises(InvalidInput) as empty:
        await mem.add("   ", user_id="u")
    assert type(empty.value) is InvalidInput and empty.value.code == "invalid_input"
    with pytest.raises(InvalidInput):
        await mem.get("not-a-uuid", user_id="u")
    with pytest.raises(ContentTooLong) as too_long:
        await mem.add("quokka " * 400, user_id="u")
    assert too_long.value.details["limit"] == LIMIT and "quokka" not in str(too_long.value)
    with pytest.raises(PIIRejected) as rejected:
        await mem.add("my password is Hunter2-Correct-Horse", user_id="u", pii_policy="reject")
    assert rejected.value.details["found"] == {"password": 1}
    assert "Hunter2" not in str(rejected.value)
    assert (await mem.list(user_id="u")).results == []


async def test_the_audit_log_records_writes_and_filters_them(mem: Any) -> None:
    stored = await mem.add("Ada audits the ledger", user_id="aud", infer=False)
    page = await mem.audit_log(user_id="aud", operation="store")
    assert isinstance(page, AuditPage)
    assert [e.memory_ids for e in page.results] == [[stored.id]]
    assert page.results[0].success and page.results[0].user_id == "aud"
    assert "ledger" not in page.model_dump_json()  # the writes level keeps no text
    # A datetime travels in the query string and is read back as the same instant.
    after = page.results[0].at
    assert (await mem.audit_log(user_id="aud", since=after)).results == page.results
    later = datetime(2999, 1, 1, tzinfo=UTC)
    assert (await mem.audit_log(user_id="aud", since=later)).results == []
    with pytest.raises(InvalidInput):
        await mem.audit_log(limit=0)


async def test_erase_answers_with_a_receipt_and_refuses_a_missing_id(mem: Any) -> None:
    kept = await mem.add("Bo keeps this", user_id="bo", app_id="x", infer=False)
    gone = await mem.add("Bo drops this", user_id="bo", app_id="y", infer=False)
    with pytest.raises(InvalidInput):
        await mem.erase(None, user_id="bo")  # never "every memory of bo"
    receipt = await mem.erase(gone.id, user_id="bo")
    assert isinstance(receipt, DeletionReceipt)
    assert (receipt.scope, receipt.memories, receipt.user_id) == ("memory", 1, "bo")
    with pytest.raises(NotFound):
        await mem.erase(gone.id, user_id="bo")
    assert [m.id for m in (await mem.list(user_id="bo")).results] == [kept.id]
    by_app = await mem.erase_user(user_id="bo", app_id="y")
    assert (by_app.scope, by_app.memories) == ("user", 0)
    assert (await mem.erase_user(user_id="bo")).memories == 1
    assert (await mem.list(user_id="bo")).results == []


async def test_memory_health_and_its_actions(mem: Any) -> None:
    first = await mem.add("Cy likes hiking", user_id="cyd", infer=False)
    await mem.add("Cy owns a red bike", user_id="cyd", infer=False)
    health = await mem.memory_health(user_id="cyd")
    assert isinstance(health, MemoryHealth) and (health.user_id, health.total) == ("cyd", 2)
    archive = {"user_id": "cyd", "action": "archive", "memory_ids": [str(first.id)]}
    done = await mem.health_action(archive)
    assert isinstance(done, HealthActionResult) and (done.action, done.changed) == ("archive", 1)
    assert (await mem.get(first.id, user_id="cyd")).tier == "cold"
    again = HealthActionRequest.model_validate(archive)
    assert (await mem.health_action(again)).changed == 0  # cold already
    with pytest.raises(InvalidInput):
        await mem.health_action({"user_id": "cyd", "action": "archive"})  # names no memory


async def test_export_and_import_round_trip(mem: Any) -> None:
    stored = await mem.add("Dee was born in Lyon", user_id="deb", tags=["bio"], infer=False)
    await mem.update(stored.id, user_id="deb", content="Dee was born in Nantes")
    lines = await mem.export_memories(user_id="deb")
    memories = [line for line in lines if line["kind"] == "memory"]
    assert [line["id"] for line in memories] == [str(stored.id)]
    assert memories[0]["content"] == "Dee was born in Nantes" and memories[0]["tags"] == ["bio"]
    await mem.erase_user(user_id="deb")
    counts = await mem.import_memories(lines)
    assert (counts["imported"], counts["skipped"], counts["memories"]) == (len(lines), 0, 1)
    back = await mem.get(stored.id, user_id="deb")
    assert back.content == "Dee was born in Nantes" and back.tags == ["bio"]
    assert [h.new_content for h in await mem.history(stored.id, user_id="deb")][-1] == (
        "Dee was born in Nantes"
    )
    assert (await mem.import_memories(lines))["skipped"] == len(lines)  # it can run twice
    with pytest.raises(InvalidInput):
        await mem.import_memories([{"memvault_export": 1}])


async def test_the_knowledge_graph_round_trip(mem: Any) -> None:
    works = await mem.add_fact("Ada", "works_for", object="Hooli", user_id="ada", channel="p")
    await mem.add_fact("Hooli", "based_in", object="Palo Alto", user_id="ada")
    assert works.claim and works.channel == "p" and works.object == "Hooli"
    facts = await mem.facts(user_id="ada", entity="Ada")
    assert [f.id for f in facts] == [works.id]
    assert await mem.facts(user_id="bob") == []
    (ada,) = await mem.entities(user_id="ada", q="Ada")
    assert (await mem.entity(ada.id, user_id="ada")).name == "Ada"
    view = await mem.entity_graph(ada.id, user_id="ada", depth=2)
    assert {n.name for n in view.nodes} == {"Ada", "Hooli", "Palo Alto"}
    assert {e.type for e in view.edges} == {
        "works_for",
        "lives_in",
    }  # based_in is canonical lives_in
    assert view.reached_nodes == 3
    cut = await mem.entity_graph(ada.id, user_id="ada", depth=2, limit=2)
    assert (len(cut.nodes), cut.reached_nodes, cut.limit) == (2, 3, 2)
    whole = await mem.user_graph(user_id="ada", limit=2)
    assert (len(whole.nodes), whole.reached_nodes) == (2, 3)
    assert await mem.fact_reviews(user_id="ada", offset=5) == []
    assert await mem.fact_reviews(user_id="ada") == []
    copy = await mem.promote(works.id, user_id="ada", reason="true everywhere")
    assert copy.channel == "_global" and copy.claim == works.claim
    assert (await mem.promote(works.id, user_id="ada", reason="again")).id == copy.id
    (hooli,) = await mem.entities(user_id="ada", q="Hooli")
    await mem.merge_entities(hooli.id, into=ada.id, user_id="ada")
    assert (await mem.entity(hooli.id, user_id="ada")).merged_into == ada.id
    assert (await mem.split_entity(hooli.id, user_id="ada")).merged_into is None
    with pytest.raises(NotFound):
        await mem.entity(ada.id, user_id="bob")
    with pytest.raises(NotFound):
        await mem.promote(works.id, user_id="bob", reason="not mine")


async def test_curation_round_trip(mem: Any) -> None:
    """Edit every field, delete several with one receipt, read the receipts back, list the
    users, retire one fact and correct another: the same on every face."""
    added = [await mem.add(f"Note {i} on figs", user_id="cy", infer=False) for i in range(3)]
    edited = await mem.update(added[0].id, user_id="cy", tags=["figs"], importance=9)
    assert (edited.tags, edited.importance) == (["figs"], 9)
    receipt = await mem.erase_memories([str(a.id) for a in added[1:]], user_id="cy")
    assert (receipt.scope, receipt.memories) == ("memory", 2)
    assert [r.request_id for r in await mem.deletion_receipts(user_id="cy")] == [receipt.request_id]
    assert await mem.deletion_receipt(receipt.request_id) == receipt
    with pytest.raises(NotFound):
        await mem.deletion_receipt("no-such-request")
    with pytest.raises(NotFound):
        await mem.erase_memories([str(added[1].id)], user_id="cy")  # gone already
    (cy,) = [u for u in await mem.list_users() if u.user_id == "cy"]
    assert (cy.memories, cy.conversations, cy.facts) == (1, 0, 0)
    lives = await mem.add_fact("Cy", "lives_in", object="Porto", user_id="cy")
    likes = await mem.add_fact("Cy", "likes", value="figs", user_id="cy")
    retired = await mem.retire_fact(likes.id, user_id="cy")
    assert retired.superseded_at is not None
    fixed = await mem.correct_fact(lives.id, user_id="cy", object="Braga")
    assert fixed.object == "Braga" and fixed.valid_from == (lives.valid_from or lives.recorded_at)
    assert [f.claim for f in await mem.facts(user_id="cy")] == [fixed.claim]
    with pytest.raises(Conflict):
        await mem.correct_fact(lives.id, user_id="cy", object="Faro")
    # Both changes undone: the facts hold again as they were, the correction never held.
    back = await mem.restore_fact(lives.id, user_id="cy")
    assert (back.object, back.superseded_at, back.valid_from) == ("Porto", None, lives.valid_from)
    assert (await mem.restore_fact(likes.id, user_id="cy")).superseded_at is None
    now = sorted(f.claim for f in await mem.facts(user_id="cy"))
    assert now == sorted([lives.claim, likes.claim])
    with pytest.raises(Conflict):
        await mem.restore_fact(likes.id, user_id="cy")  # already undone
    with pytest.raises(NotFound):
        await mem.restore_fact(lives.id, user_id="bob")


async def test_a_users_overview_and_the_facts_read_from_a_memory(mem: Any) -> None:
    said = await mem.add_messages(
        [{"role": "user", "content": "I work at Feedzai in Lisbon."}],
        user_id="dee",
        conversation_id="work",
    )
    await mem.add("Dee keeps bees", user_id="dee", infer=False)
    await mem.add_goal("Find a flat", user_id="dee")
    seen = await mem.user_overview(user_id="dee", days=3, weeks=2)
    facts = await mem.facts(user_id="dee", limit=1000)
    assert (seen.memories, seen.conversations, seen.turns, seen.goals) == (2, 1, 1, 1)
    assert seen.facts == len(facts) > 0
    assert [g.memories for g in seen.per_day] == [0, 0, 2] and len(seen.per_week) == 2
    turn = said[0].id
    read = await mem.facts(user_id="dee", memory_id=turn, include_superseded=True)
    assert {f.id for f in read} == {f.id for f in facts if turn in f.memory_ids}


# --- the client's surface ---------------------------------------------------------------------


@pytest.mark.parametrize("name", DATA_METHODS)
def test_client_methods_have_the_library_signatures(name: str) -> None:
    ours, theirs = getattr(AsyncMemoryClient, name), getattr(AsyncMemory, name)
    assert inspect.iscoroutinefunction(ours)

    def shape(method: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]

    assert shape(ours) == shape(theirs)
    assert typing.get_type_hints(ours) == typing.get_type_hints(theirs)
    assert callable(getattr(MemoryClient, name))


def test_maintenance_is_not_offered_over_http() -> None:
    public = {n for n in vars(AsyncMemoryClient) if not n.startswith("_")}
    assert public == {*DATA_METHODS, *COGNITIVE_METHODS, "close"}
    assert {n for n in dir(MemoryClient) if not n.startswith("_")} == public
    # Whole-store work (keys, re-embedding, backups, jobs) stays with Admin, in process.
    maintenance = {n for n in vars(AsyncAdmin) if not n.startswith("_")} - {"close"}
    assert maintenance and not public & maintenance


def test_a_keyword_the_method_does_not_take_is_refused_before_sending(
    make_settings: Callable[..., Settings],
) -> None:
    # The server's deletion body has a memory_id; erase_user takes none, and must not let one
    # through to narrow (or, left out of erase, widen) what goes.
    with serving(create_app(make_settings())) as url, MemoryClient(url) as client:
        stored = client.add("Eli stays", user_id="eli", infer=False)
        with pytest.raises(InvalidInput) as refused:
            client.erase_user(user_id="eli", memory_id=stored.id)
        assert refused.value.details == {"field": "memory_id"}
        assert client.get(stored.id, user_id="eli").content == "Eli stays"


# --- error answers, from a real stub server ---------------------------------------------------


async def _stub(request: Request) -> Response:
    """Answers what ``user_id`` asks for; records the Authorization header it got."""
    request.app.state.seen.append(request.headers.get("authorization"))
    want = request.query_params["user_id"]
    if want == "slow":
        await asyncio.sleep(0.5)
    if want == "html":
        return PlainTextResponse("<h1>Bad Gateway</h1>", status_code=502)
    if want == "garbage":
        return PlainTextResponse("not json", status_code=200)
    status, code = {
        "unauthorized": (401, "unauthorized"),
        "rate_limited": (429, "rate_limited"),
        "internal": (500, "internal_error"),
        "teapot": (418, "teapot"),
    }[want]
    body = {"error": {"code": code, "message": f"{code} says the stub", "details": {"n": 1}}}
    headers = {"retry-after": "7"} if status == 429 else {}
    return JSONResponse(body, status_code=status, headers=headers)


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[str, list[str | None]]]:
    app = Starlette(routes=[Route("/v1/memories/{memory_id}", _stub)])
    app.state.seen = []
    with serving(app) as url:
        yield url, app.state.seen


MID = str(uuid.uuid4())


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's own backoff (where no Retry-After says how long) from 10 ms, not 250 ms:
    the tests using it count tries and read the error that surfaces, never the waits, which
    were 1 to 3 s of each."""
    import memvault.client

    monkeypatch.setattr(memvault.client, "RETRY_BASE_S", 0.01)


def test_error_envelopes_become_typed_errors(stub: tuple[str, list[str | None]]) -> None:
    url, seen = stub
    # No retries: each answer is the error it maps to (retries have their own tests below).
    with MemoryClient(url, api_key="sk-very-secret", max_retries=0) as client:
        with pytest.raises(Unauthorized) as unauthorized:
            client.get(MID, user_id="unauthorized")
        assert unauthorized.value.status_code == 401
        assert unauthorized.value.message == "unauthorized says the stub"
        assert seen[-1] == "Bearer sk-very-secret"
        with pytest.raises(RateLimited) as limited:
            client.get(MID, user_id="rate_limited")
        assert limited.value.retry_after == 7.0 and limited.value.details == {"n": 1}
        with pytest.raises(ServerError):
            client.get(MID, user_id="internal")
        with pytest.raises(MemvaultError) as unknown:
            client.get(MID, user_id="teapot")
        assert type(unknown.value) is MemvaultError
        assert (unknown.value.status_code, unknown.value.code) == (418, "teapot")
        for error in (unauthorized.value, limited.value, unknown.value):
            assert "sk-very-secret" not in str(error) and "sk-very-secret" not in repr(error)


async def test_answers_that_are_not_memvault_ones(
    stub: tuple[str, list[str | None]], quick_backoff: None
) -> None:
    url, seen = stub
    async with AsyncMemoryClient(url) as client:
        with pytest.raises(ServerUnreachable) as proxy:
            await client.get(MID, user_id="html")
        assert "Bad Gateway" not in str(proxy.value)
        with pytest.raises(MemvaultError) as garbage:
            await client.get(MID, user_id="garbage")
        assert garbage.value.code == "unexpected_response"
    assert seen[-1] is None  # no key, no header


async def test_no_answer_is_server_unreachable(
    stub: tuple[str, list[str | None]], quick_backoff: None
) -> None:
    url, _ = stub
    async with AsyncMemoryClient(url, timeout=0.1) as client:
        with pytest.raises(ServerUnreachable) as slow:
            await client.get(MID, user_id="slow")
    assert slow.value.details == {"reason": "ReadTimeout"}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with MemoryClient(closed) as client, pytest.raises(StoreUnavailable) as refused:
        client.get(MID, user_id="u")
    assert isinstance(refused.value, ServerUnreachable)
    assert refused.value.details == {"reason": "ConnectError"}
    assert refused.value.__cause__ is not None  # the httpx error, chained for debugging


class Flaky:
    """The real app behind a front that turns the first ``times`` requests away with
    ``status`` and a Retry-After, as a rate limit or a busy store does; counts every try."""

    def __init__(
        self,
        app: Any,
        status: int,
        times: int,
        retry_after: str | None = "0",
        code: str | None = None,
    ) -> None:
        self.app, self.status, self.left, self.retry_after = app, status, times, retry_after
        self.code = code or ("rate_limited" if status == 429 else "store_unavailable")
        self.tries = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        self.tries += 1
        if self.left > 0:
            self.left -= 1
            body = {"error": {"code": self.code, "message": "come back later", "details": {}}}
            headers = {"retry-after": self.retry_after} if self.retry_after is not None else {}
            await JSONResponse(body, status_code=self.status, headers=headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)


@pytest.mark.parametrize("status", [429, 503])
async def test_turned_away_requests_are_retried_after_retry_after(
    make_settings: Callable[..., Settings], status: int
) -> None:
    flaky = Flaky(create_app(make_settings(embedding_provider="hash")), status, 2, "0.2")
    with serving(flaky) as url:
        async with AsyncMemoryClient(url) as client:
            started = asyncio.get_running_loop().time()
            added = await client.add("I keep bees on the roof", user_id="ada")  # a POST, too
            waited = asyncio.get_running_loop().time() - started
            assert flaky.tries == 3 and waited >= 0.4  # two turned away, each after 0.2 s
            assert (await client.get(added.id, user_id="ada")).content == added.content


def test_retries_are_bounded_then_the_error_surfaces(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    import memvault.client

    # A server asking for an hour is waited for at most RETRY_WAIT_MAX_S (shortened here).
    monkeypatch.setattr(memvault.client, "RETRY_WAIT_MAX_S", 0.05)
    flaky = Flaky(create_app(make_settings(embedding_provider="hash")), 503, 1_000, "3600")
    with serving(flaky) as url:
        with MemoryClient(url, max_retries=2) as client, pytest.raises(StoreUnavailable):
            client.list(user_id="ada")
        assert flaky.tries == 3
        with MemoryClient(url, max_retries=0) as client, pytest.raises(StoreUnavailable):
            client.list(user_id="ada")
        assert flaky.tries == 4
        flaky.status, flaky.retry_after, flaky.code = 429, None, "rate_limited"  # own backoff
        with MemoryClient(url) as client, pytest.raises(RateLimited):
            client.list(user_id="ada")
        assert flaky.tries == 4 + 1 + memvault.client.DEFAULT_MAX_RETRIES
    with pytest.raises(ConfigurationError):
        MemoryClient("http://127.0.0.1:1", max_retries=-1)


async def test_a_keyed_write_that_ran_out_of_time_is_sent_again_and_a_hand_written_post_is_not(
    make_settings: Callable[..., Settings],
) -> None:
    flaky = Flaky(
        create_app(make_settings(embedding_provider="hash")), 503, 1, code="request_timeout"
    )
    with serving(flaky) as url:
        async with AsyncMemoryClient(url) as client:
            # A keyed write that committed as the deadline struck marked its key: its resend
            # is told so and never runs twice (tests/test_idempotency.py); this one had not.
            added = await client.add("I keep bees on the roof", user_id="ada", infer=False)
            assert flaky.tries == 2
            assert [m.id for m in (await client.list(user_id="ada")).results] == [added.id]
            # A hand-written route's POST takes no key: it may have been done, so not resent.
            flaky.left, flaky.tries = 1, 0
            with pytest.raises(MemvaultError) as stopped:
                await client.erase_user(user_id="ada")
            assert stopped.value.code == "request_timeout" and flaky.tries == 1


async def test_reads_and_keyed_writes_are_asked_again_after_a_lost_connection(
    make_settings: Callable[..., Settings], quick_backoff: None
) -> None:
    with serving(create_app(make_settings(embedding_provider="hash"))) as url:
        lossy = LosesConnections(2)
        async with AsyncMemoryClient(url, transport=lossy) as client:
            assert await client.count(user_id="ada") == 0
            assert lossy.tries == 3
            # A write the table routes carries an Idempotency-Key: resent, stored once.
            lossy.left, lossy.tries = 1, 0
            await client.add("Ada keeps bees", user_id="ada", infer=False)
            assert lossy.tries == 2
            assert await client.count(user_id="ada") == 1
            # A hand-written route's POST takes no key: not resent.
            lossy.left, lossy.tries = 1, 0
            with pytest.raises(ServerUnreachable):
                await client.erase_user(user_id="ada")
            assert lossy.tries == 1


async def test_a_write_whose_answer_was_lost_is_sent_again_and_stored_once(
    make_settings: Callable[..., Settings], quick_backoff: None
) -> None:
    with serving(create_app(make_settings(embedding_provider="hash"))) as url:
        lost = LosesTheFirstAnswer()
        async with AsyncMemoryClient(url, transport=lost) as client:
            added = await client.add("Ada keeps bees on the roof", user_id="ada", infer=False)
            assert len(lost.keys) == 2 and lost.keys[0] is not None
            assert lost.keys[0] == lost.keys[1]  # one key for every try of one call
            assert [m.id for m in (await client.list(user_id="ada")).results] == [added.id]
            await client.add("Ada keeps bees on the roof", user_id="ada", infer=False)
            assert lost.keys[-1] != lost.keys[0]  # a new call is a new write
            assert await client.count(user_id="ada") == 2


@pytest.mark.parametrize("url", ["localhost:8765", "127.0.0.1:8765", "ftp://example.org"])
def test_a_base_url_without_http_is_refused_at_once(url: str) -> None:
    with pytest.raises(ConfigurationError):
        MemoryClient(url)


def test_the_client_carries_its_key_and_raises_the_servers_auth_errors(
    make_settings: Callable[..., Settings],
) -> None:
    from memvault import Forbidden, auth

    # A token every 2 s: ten quick requests still empty the bucket (they would need 12 s to
    # outlast it), and the retries below wait 2 s each rather than the 20 s of a slower rate.
    settings = make_settings(
        auth="required", embedding_provider="hash", rate_limit_per_s=0.5, rate_limit_burst=4
    )

    async def keys() -> tuple[str, str]:
        memory = await AsyncMemory.open(settings)
        try:
            writer = await auth.create_key(backend_of(memory).engine, "acme", "read,write")
            reader = await auth.create_key(backend_of(memory).engine, "acme", "read")
            return writer.key, reader.key
        finally:
            await memory.close()

    writer, reader = asyncio.run(keys())
    with serving(create_app(settings)) as base:
        with MemoryClient(base, api_key=writer) as memory:
            stored = memory.add("the client's key names the tenant", user_id="u", infer=False)
            assert memory.get(stored.id, user_id="u").content == stored.content
        with MemoryClient(base, api_key=reader) as memory, pytest.raises(Forbidden):
            memory.add("readers cannot write", user_id="u")
        with MemoryClient(base, api_key=None) as memory, pytest.raises(Unauthorized):
            memory.list(user_id="u")
        with MemoryClient(base, api_key=writer, max_retries=0) as memory:
            with pytest.raises(RateLimited) as limited:
                for _ in range(10):
                    memory.list(user_id="u")
            assert limited.value.retry_after is not None and limited.value.retry_after >= 1
        with MemoryClient(base, api_key=writer) as memory:
            # The bucket empty, a client that retries waits out the Retry-After instead.
            for _ in range(3):
                memory.list(user_id="u")
