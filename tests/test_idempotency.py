"""Writes sent with an ``Idempotency-Key``: a retry gets the first answer and nothing is stored
twice, on any API host (the claim is in PostgreSQL); the key names one request, is private to
its tenant, held on a lease while its request runs, kept sealed, and goes with its user."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

import memvault.api.routes
import memvault.idempotency
from memvault import AsyncMemoryClient, Settings, auth
from memvault.api import create_app
from memvault.db import idempotency as idempotency_db
from memvault.db import store
from memvault.errors import RequestDoneAnswerLost, StoreUnavailable
from memvault.lifecycle import deletion, jobs
from memvault.memories import Memories
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.lossy import LosesTheFirstAnswer
from tests.serving import serving
from tests.waiting import wait_until

KEY = "Idempotency-Key"


@pytest.fixture
def api(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    settings = make_settings(auth="required", embedding_provider="hash")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def key_of(client: TestClient, tenant: str) -> dict[str, str]:
    engine = backend_of(client.app.state.memory).engine  # type: ignore[attr-defined]
    created = client.portal.call(auth.create_key, engine, tenant, "read,write,admin", None)  # type: ignore[union-attr]
    return {"Authorization": f"Bearer {created.key}"}


def add(client: TestClient, who: dict[str, str], key: str | None, **body: Any) -> Any:
    sent = {"content": "I moved to York in September", "user_id": "ada", **body}
    headers = {**who, **({KEY: key} if key else {})}
    return client.post("/v1/memories", json=sent, headers=headers)


def stored(client: TestClient, who: dict[str, str], user: str = "ada") -> list[str]:
    page = client.get("/v1/memories", params={"user_id": user}, headers=who).json()
    return [m["content"] for m in page["results"]]


def test_a_keyed_write_sent_again_answers_the_first_answer_and_stores_once(
    api: TestClient,
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    first = add(api, who, key, infer=False)
    again = add(api, who, key, infer=False)
    assert first.status_code == again.status_code == 201, (first.text, again.text)
    assert again.json() == first.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert stored(api, who) == ["I moved to York in September"]
    # Without a key the same request is a new write (infer off: no duplicate check).
    assert add(api, who, None, infer=False).json()["id"] != first.json()["id"]
    assert len(stored(api, who)) == 2


def test_the_key_names_one_request(api: TestClient) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    assert add(api, who, key).status_code == 201
    other = add(api, who, key, content="I moved to Leeds")
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert other.json()["error"]["details"] == {"field": KEY}
    elsewhere = api.post(
        "/v1/goals",
        json={"description": "Renew the visa", "user_id": "ada"},
        headers={**who, KEY: key},
    )
    assert elsewhere.status_code == 422, elsewhere.text
    assert stored(api, who) == ["I moved to York in September"]


def test_a_key_is_its_tenants_alone(api: TestClient) -> None:
    acme, globex, key = key_of(api, "acme"), key_of(api, "globex"), str(uuid.uuid4())
    mine = add(api, acme, key, content="acme's secret plan")
    theirs = add(api, globex, key, content="acme's secret plan")
    assert mine.status_code == theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs.headers
    assert theirs.json()["id"] != mine.json()["id"]
    assert stored(api, globex) == ["acme's secret plan"]


@pytest.mark.parametrize("bad", ["", "é" * 3, "x" * 256, "tab\there"])
def test_a_malformed_key_is_refused_before_anything_is_written(api: TestClient, bad: str) -> None:
    who = key_of(api, "acme")
    answer = api.post(
        "/v1/memories",
        json={"content": "hello", "user_id": "ada"},
        headers={**who, KEY: bad.encode()},
    )
    assert answer.status_code == 422, answer.text
    assert stored(api, who) == []


def test_a_retry_while_the_first_still_runs_waits_and_a_dead_servers_claim_lapses(
    api: TestClient, raw: psycopg.Connection[Any]
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    assert add(api, who, key).status_code == 201
    # As if the first request were still at work on another host: claimed, nothing written
    # yet, no answer yet.
    raw.execute(
        "UPDATE idempotent_writes SET status = NULL, ciphertext = NULL, nonce = NULL, "
        "key_id = NULL, committed_at = NULL, lease_until = now() + interval '8 seconds' "
        "WHERE key = %s",
        (key,),
    )
    waiting = add(api, who, key)
    assert waiting.status_code == 409, waiting.text
    assert waiting.json()["error"]["code"] == "request_in_progress"
    assert 1 <= int(waiting.headers["Retry-After"]) <= 10
    # Its server died: the lease is not renewed and lapses; the retry then does the work.
    raw.execute(
        "UPDATE idempotent_writes SET lease_until = now() - interval '1 second' WHERE key = %s",
        (key,),
    )
    retried = add(api, who, key)
    assert retried.status_code == 201, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    assert add(api, who, key).headers.get("Idempotent-Replayed") == "true"


async def _server_stops_before_keeping(*_: Any, **__: Any) -> None:
    # The last step of a keyed write after its commit: a server that dies here keeps nothing.
    raise StoreUnavailable("the server stopped before keeping the answer")


def test_a_write_that_committed_is_not_run_again_when_its_answer_was_lost(
    api: TestClient, raw: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    monkeypatch.setattr(idempotency_db, "keep", _server_stops_before_keeping)
    first = add(api, who, key, infer=False)
    assert first.status_code == 201, first.text  # the write was done, and says so
    monkeypatch.undo()
    # While the claim's lease holds, its request might still answer: the retry waits.
    waiting = add(api, who, key, infer=False)
    assert waiting.status_code == 409, waiting.text
    assert waiting.json()["error"]["code"] == "request_in_progress"
    # No server renews it: the lease lapses. The claim was marked by the write's own commit,
    # so the retry is told the request was done, and nothing is written again.
    raw.execute(
        "UPDATE idempotent_writes SET lease_until = now() - interval '1 second' WHERE key = %s",
        (key,),
    )
    for _ in range(2):
        retried = add(api, who, key, infer=False)
        assert retried.status_code == 409, retried.text
        assert retried.json()["error"]["code"] == "request_done_answer_lost"
        assert retried.json()["error"]["details"] == {"field": KEY}
    assert [
        m["id"]
        for m in api.get("/v1/memories", params={"user_id": "ada"}, headers=who).json()["results"]
    ] == [first.json()["id"]]


def test_a_request_that_wrote_and_then_failed_is_not_run_again(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())

    def shaping_fails(*_: Any) -> Any:
        raise RuntimeError("the answer could not be made")

    # The write commits; the answer made after it fails (500): the claim is not freed.
    monkeypatch.setattr(memvault.api.routes, "_answer", shaping_fails)
    assert add(api, who, key, infer=False).status_code == 500
    monkeypatch.undo()
    retried = add(api, who, key, infer=False)
    assert retried.status_code == 409, retried.text  # at once: the failed request is over
    assert retried.json()["error"]["code"] == "request_done_answer_lost"
    assert stored(api, who) == ["I moved to York in September"]


def test_a_write_cut_off_by_the_deadline_after_it_committed_is_not_run_again(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    adding = AsyncMemory.add
    never = asyncio.Event()
    committed: list[bool] = []

    async def stalls_after_the_commit(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        done = await adding(self, *args, **kwargs)
        committed.append(True)
        await never.wait()  # the request task is cancelled here, its write committed
        return done

    monkeypatch.setattr(AsyncMemory, "add", stalls_after_the_commit)
    # Long enough that the write itself commits before the cut on a loaded machine (CI at
    # load 5 once took over half a second, so the write was cut before it committed and its
    # retry rightly stored it).
    quick = make_settings(auth="required", embedding_provider="hash", request_timeout_s=2.0)
    with TestClient(create_app(quick), raise_server_exceptions=False) as api:
        who, key = key_of(api, "acme"), str(uuid.uuid4())
        cut = add(api, who, key, infer=False)
        assert cut.status_code == 503 and cut.json()["error"]["code"] == "request_timeout"
        assert committed, "the write was cut before it committed: not the case under test"
        monkeypatch.undo()
        answers: list[str] = []

        def told_it_was_done() -> bool:
            # The cut request frees its claim in a shielded step that may still be running when
            # its 503 has gone back: a retry then is told to wait, as any retry of a running
            # request is, and a later one that the write was done. Never a second run.
            # On a loaded machine a retry can itself outlast the deadline: that try
            # is cut too, and the next one is asked again.
            retried = add(api, who, key, infer=False)
            assert retried.status_code in (409, 503), retried.text
            answers.append(retried.json()["error"]["code"])
            return answers[-1] == "request_done_answer_lost"

        wait_until(told_it_was_done, 30, "the retry was never told the write was done")
        assert set(answers) <= {
            "request_in_progress",
            "request_timeout",
            "request_done_answer_lost",
        }
        assert stored(api, who) == ["I moved to York in September"]


async def test_the_client_raises_a_done_request_whose_answer_was_lost_and_stops_sending_it(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server dies after the commit: its answer is neither kept nor delivered, and its
    # claim lapses (on a short lease here) while the client waits to send the write again.
    monkeypatch.setattr(idempotency_db, "keep", _server_stops_before_keeping)
    monkeypatch.setattr(memvault.idempotency, "LEASE_S", 0.5)
    with serving(create_app(make_settings(embedding_provider="hash"))) as url:
        lossy = LosesTheFirstAnswer()
        async with AsyncMemoryClient(url, transport=lossy) as client:
            with pytest.raises(RequestDoneAnswerLost) as lost:
                await client.add("Ada keeps bees on the roof", user_id="ada", infer=False)
            # Sent again after the lost answer: told to wait while the claim's lease runs (not
            # at all when the retry's backoff outlasts the half-second lease, as on a loaded
            # machine), then told it was done, and never sent again.
            assert lossy.tries in (2, 3)
            assert lost.value.status_code == 409
            assert [m.content for m in (await client.list(user_id="ada")).results] == [
                "Ada keeps bees on the roof"
            ]


def test_a_request_that_failed_before_it_wrote_is_run_again(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    who, key, chat = key_of(api, "acme"), str(uuid.uuid4()), str(uuid.uuid4())
    turns = {"messages": [{"role": "user", "content": "I moved to York"}], "user_id": "ada"}

    async def store_gone(*_: Any, **__: Any) -> Any:
        raise StoreUnavailable("the database went away")

    # An add's duplicate check reads in transactions of its own, and add_messages reserves its
    # turn indices in one, before the write that fails here: neither counts as having written.
    monkeypatch.setattr(store, "lock_content", store_gone)
    monkeypatch.setattr(Memories, "store_turns", store_gone)
    assert add(api, who, key).status_code == 503
    told = api.post("/v1/messages", json=turns, headers={**who, KEY: chat})
    assert told.status_code == 503, told.text
    monkeypatch.undo()
    retried = add(api, who, key)
    assert retried.status_code == 201, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    told = api.post("/v1/messages", json=turns, headers={**who, KEY: chat})
    assert told.status_code == 201, told.text
    assert "Idempotent-Replayed" not in told.headers
    assert sorted(stored(api, who)) == ["I moved to York", "I moved to York in September"]


def test_a_keyed_deletion_that_failed_before_deleting_is_run_again(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    memory_id = add(api, who, None, infer=False).json()["id"]
    gone = {"user_id": "ada", "memory_ids": [memory_id]}

    async def store_gone(*_: Any, **__: Any) -> Any:
        raise StoreUnavailable("the database went away")

    # Before its own transaction fails here, the deletion has committed work of its own: the
    # targets' row locks, the caches' entries and working memory's turns dropped. None of it
    # deletes the memory, so its retry must delete it, not be told it was done.
    monkeypatch.setattr(deletion, "_delete_rows", store_gone)
    failed = api.post("/v1/memories/delete", json=gone, headers={**who, KEY: key})
    assert failed.status_code == 503, failed.text
    monkeypatch.undo()
    assert stored(api, who) == ["I moved to York in September"]
    retried = api.post("/v1/memories/delete", json=gone, headers={**who, KEY: key})
    assert retried.status_code == 200, retried.text
    assert retried.json()["memories"] == 1
    assert stored(api, who) == []


def test_a_failed_request_frees_its_key(api: TestClient) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    goal = f"/v1/goals/{uuid.uuid4()}/complete"
    refused = api.post(goal, json={"user_id": "ada"}, headers={**who, KEY: key})
    assert refused.status_code == 404, refused.text
    # Not a kept answer: the same request is run again (and refused again, for its reason).
    again = api.post(goal, json={"user_id": "ada"}, headers={**who, KEY: key})
    assert again.status_code == 404, again.text
    assert "Idempotent-Replayed" not in again.headers


def test_the_kept_answer_is_sealed_and_goes_with_its_user(
    api: TestClient, raw: psycopg.Connection[Any]
) -> None:
    who, key = key_of(api, "acme"), str(uuid.uuid4())
    assert add(api, who, key, content="my passport number is in the blue drawer").status_code == 201
    assert add(api, who, str(uuid.uuid4()), user_id="bob").status_code == 201
    row = raw.execute(
        "SELECT user_id, ciphertext FROM idempotent_writes WHERE key = %s", (key,)
    ).fetchone()
    assert row is not None and row[0] == "ada"
    assert b"blue drawer" not in bytes(row[1])
    erased = api.post("/v1/deletions", json={"user_id": "ada"}, headers=who)
    assert erased.status_code < 300, erased.text
    owners = [r[0] for r in raw.execute("SELECT user_id FROM idempotent_writes")]
    assert owners == ["bob"]


async def test_cleanup_takes_the_answers_past_their_time(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    for n, when in enumerate(["now() - interval '1 hour'", "now() + interval '1 hour'"]):
        raw.execute(
            "INSERT INTO idempotent_writes (tenant_id, key, fingerprint, lease_until, expires_at)"
            f" VALUES ('default', %s, '\\x00', now(), {when})",
            (f"k{n}",),
        )
    run = await jobs.run_job(backend_of(memory), "cleanup")
    assert run.counts["idempotent_writes.deleted"] == 1
    assert [r[0] for r in raw.execute("SELECT key FROM idempotent_writes")] == ["k1"]
