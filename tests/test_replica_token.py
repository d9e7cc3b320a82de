"""Read-your-writes across API processes (``memvault.consistency``): two apps over one primary
and its hot standby (replay paused, so what the standby serves is visibly stale). A write
through one names the primary's position in ``Memvault-Written-Lsn``; a read through the
other that carries it back in ``Memvault-Read-After`` shows the write, the same read without
it does not — proof it went to the standby. The HTTP client carries the token by itself."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memvault import MemoryClient
from memvault.api import create_app
from memvault.config import Settings
from memvault.consistency import READ_AFTER_HEADER, WRITTEN_HEADER, position
from memvault.service import AsyncMemory
from tests import test_replicas
from tests.conftest import backend_of
from tests.serving import serving
from tests.test_replicas import Replicated, replay_paused
from tests.waiting import wait_for

# test_replicas' fixtures: the suite's server with a hot standby of it, and settings on both.
replicated = test_replicas.replicated
database_url = test_replicas.database_url
read_settings = test_replicas.read_settings


def _word() -> str:
    return f"zq{uuid.uuid4().hex[:10]}"


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:8]}"


def _store(app: FastAPI) -> AsyncMemory:
    memory: AsyncMemory = app.state.memory
    return memory


def _sees(client: TestClient, word: str, user: str, token: str | None = None) -> dict[str, bool]:
    """Whether a search and a list (both routed reads) through ``client`` show ``word``."""
    headers = {READ_AFTER_HEADER: token} if token is not None else {}
    found = client.post(
        "/v1/memories/search",
        json={"query": word, "user_id": user, "recipe": "keyword"},
        headers=headers,
    )
    listed = client.get("/v1/memories", params={"user_id": user}, headers=headers)
    assert found.status_code == 200, found.text
    assert listed.status_code == 200, listed.text
    return {
        "search": any(word in hit["content"] for hit in found.json()["results"]),
        "list": any(word in record["content"] for record in listed.json()["results"]),
    }


def _add(client: TestClient, word: str, user: str) -> str:
    """A write through ``client``; the token its answer carries."""
    added = client.post(
        "/v1/memories",
        json={"content": f"the vault code word is {word}", "user_id": user},
        params={"wait": "true"},
    )
    assert added.status_code in (200, 201), added.text
    token = added.headers.get(WRITTEN_HEADER)
    assert token is not None, dict(added.headers)
    position(token)  # a position as PostgreSQL writes it
    return token


@contextmanager
def _two_processes(settings: Settings) -> Iterator[tuple[TestClient, TestClient]]:
    with (
        TestClient(create_app(settings), raise_server_exceptions=False) as first,
        TestClient(create_app(settings), raise_server_exceptions=False) as second,
    ):
        yield first, second


async def test_a_token_from_one_process_makes_another_read_the_write(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """Process A takes the write; process B, knowing nothing of it, reads the paused standby
    and misses it — unless the request carries A's token, when B waits the bounded time for
    the standby to replay it and then reads the primary."""
    word, user = _word(), _user()
    with _two_processes(read_settings(database_read_max_lag_s=600)) as (a, b):
        async with replay_paused(replicated, _store(a.app), _store(b.app)):
            token = _add(a, word, user)
            assert _sees(b, word, user) == {"search": False, "list": False}
            assert _sees(b, word, user, token) == {"search": True, "list": True}
            # The token made the difference, not a note B took: without it, still stale.
            assert _sees(b, word, user) == {"search": False, "list": False}
            assert replicated.on_replica("SELECT pg_is_wal_replay_paused()") is True
        # Replay resumed: the token is soon past, and the read shows the write either way.
        assert _sees(b, word, user, token) == {"search": True, "list": True}


async def test_a_token_the_replica_has_replayed_costs_no_wait_and_reads_there(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """A token at or below what the standby has replayed sends the read to the standby as
    any read: with replay paused, a write made after the token is not seen through it."""
    early, late, user = _word(), _word(), _user()
    with _two_processes(read_settings(database_read_max_lag_s=600)) as (a, b):
        token = _add(a, early, user)
        reads = backend_of(_store(b.app)).reads
        assert reads is not None
        # B's own watcher (on B's loop) sees the standby replay the token.
        await wait_for(
            lambda: reads.replayed >= position(token), 30, "the standby never replayed it"
        )
        async with replay_paused(replicated, _store(b.app)):
            _add(a, late, user)
            assert _sees(b, early, user, token) == {"search": True, "list": True}
            assert _sees(b, late, user, token) == {"search": False, "list": False}


async def test_the_http_client_carries_the_token_to_whichever_process_answers(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """One MemoryClient behind a balancer of two live servers: its write goes to A, its reads
    to B, and they show the write with B's standby paused; a bare request to B does not."""
    word, user = _word(), _user()
    settings = read_settings(database_read_max_lag_s=600)
    first, second = create_app(settings), create_app(settings)
    with serving(first) as a_url, serving(second) as b_url:
        balancer = _Balancer(a_url, b_url)
        async with replay_paused(replicated, _store(first), _store(second)):
            with MemoryClient(a_url, transport=balancer) as client:
                balancer.to = 0
                added = client.add(f"the cellar code word is {word}", user_id=user, wait=True)
                written = balancer.answered[-1]
                assert written is not None
                balancer.to = 1
                found = client.search(word, user_id=user, recipe="keyword")
                listed = client.list(user_id=user)
            assert [hit.id for hit in found.results][:1] == [added.id]
            assert added.id in {record.id for record in listed.results}
            assert balancer.sent[1:] == [written, written]  # the write's token, on each read
            bare = httpx.get(f"{b_url}/v1/memories", params={"user_id": user})
            assert bare.status_code == 200, bare.text
            assert all(word not in r["content"] for r in bare.json()["results"])


class _Balancer(httpx.AsyncBaseTransport):
    """Sends each request to the server ``to`` names, and notes the token each request sent
    and each answer carried."""

    def __init__(self, *urls: str) -> None:
        self.urls = [httpx.URL(url) for url in urls]
        self.to = 0
        self.sent: list[str | None] = []
        self.answered: list[str | None] = []
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = self.urls[self.to]
        request.url = request.url.copy_with(host=target.host, port=target.port)
        self.sent.append(request.headers.get(READ_AFTER_HEADER))
        response = await self._inner.handle_async_request(request)
        self.answered.append(response.headers.get(WRITTEN_HEADER))
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["details"]) == ("invalid_input", {"field": READ_AFTER_HEADER})
    assert READ_AFTER_HEADER in error["message"]
    assert response.headers.get("x-request-id")  # answered inside the request's plumbing


MALFORMED = ["soon", "16", "16/", "/B374D848", "1/2/3", "123456789/0", "16/B374D848x", "0x16/0x1"]


def test_a_malformed_token_is_refused_with_the_envelope(
    read_settings: Callable[..., Settings],
) -> None:
    """A 422 in the error envelope, on a read and on a write (which stores nothing), never a
    500; an empty header is no token."""
    user = _user()
    with TestClient(create_app(read_settings()), raise_server_exceptions=False) as client:
        for token in [*MALFORMED, "9" * 500]:
            headers = {READ_AFTER_HEADER: token}
            _assert_refused(client.get("/v1/memories", params={"user_id": user}, headers=headers))
            written = client.post(
                "/v1/memories", json={"content": "never stored", "user_id": user}, headers=headers
            )
            _assert_refused(written)
        empty = {READ_AFTER_HEADER: ""}
        listed = client.get("/v1/memories", params={"user_id": user}, headers=empty)
        assert listed.status_code == 200, listed.text
        assert listed.json()["results"] == []


async def test_a_token_far_ahead_of_the_primary_costs_the_bounded_wait_then_the_primary(
    read_settings: Callable[..., Settings], replicated: Replicated
) -> None:
    """A position no write has reached is waited for as the primary's own: the replica
    (paused) never shows it, so after the bounded wait the primary answers — well inside a
    request deadline that a hang would run into (503 request_timeout)."""
    word, user = _word(), _user()
    settings = read_settings(database_read_max_lag_s=600, request_timeout_s=5)
    with _two_processes(settings) as (a, b):
        async with replay_paused(replicated, _store(a.app), _store(b.app)):
            _add(a, word, user)
            assert _sees(b, word, user) == {"search": False, "list": False}
            assert _sees(b, word, user, "FFFFFFFF/FFFFFFFF") == {"search": True, "list": True}


def test_without_a_read_url_no_token_is_given_and_none_is_asked(
    make_settings: Callable[..., Settings],
) -> None:
    """One pool, as before: no header on a write, a token sent is taken (and checked) but
    changes nothing, and no statement asks for a WAL position."""
    word, user = _word(), _user()
    with TestClient(create_app(make_settings(embedding_provider="hash"))) as client:
        backend = backend_of(_store(client.app))
        assert backend.reads is None
        asked: list[str] = []

        def seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            if "wal_lsn" in statement or "wal_replay" in statement:
                asked.append(statement)

        sa.event.listen(backend.engine.sync_engine, "before_cursor_execute", seen)
        try:
            added = client.post(
                "/v1/memories",
                json={"content": f"the loft code word is {word}", "user_id": user},
                params={"wait": "true"},
            )
            assert added.status_code in (200, 201), added.text
            assert WRITTEN_HEADER.lower() not in {name.lower() for name in added.headers}
            assert _sees(client, word, user, "16/B374D848") == {"search": True, "list": True}
            bad = client.get(
                "/v1/memories", params={"user_id": user}, headers={READ_AFTER_HEADER: "soon"}
            )
            _assert_refused(bad)
        finally:
            sa.event.remove(backend.engine.sync_engine, "before_cursor_execute", seen)
        assert asked == []
