"""Dashboard sessions behind several API processes: signed in on one app, the browser is
signed in on another over the same store (PostgreSQL, or Redis when configured); signing out
or switching user on one holds on the other; what is stored holds neither the session id nor
the API key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
import redis
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from memvault.ui.sessions import COOKIE
from tests.test_ui import make_key, sign_in


@pytest.fixture(params=["postgres", "redis"])
def two_processes(
    request: pytest.FixtureRequest, make_settings: Callable[..., Settings], redis_url: str
) -> Iterator[tuple[TestClient, TestClient]]:
    shared = {"redis_url": redis_url} if request.param == "redis" else {}
    settings = make_settings(auth="required", **shared)
    with ExitStack() as stack:
        apps = [
            stack.enter_context(TestClient(create_app(settings), raise_server_exceptions=False))
            for _ in range(2)
        ]
        yield apps[0], apps[1]


def as_browser(session_id: str) -> dict[str, str]:
    return {"cookie": f"{COOKIE}={session_id}"}


def test_signed_in_on_one_process_the_browser_is_signed_in_on_another(
    two_processes: tuple[TestClient, TestClient],
) -> None:
    one, other = two_processes
    assert sign_in(one, make_key(one, "acme", "read,write")).status_code == 303
    session_id = one.cookies[COOKIE]
    page = other.get("/ui/", headers=as_browser(session_id), follow_redirects=False)
    assert page.status_code == 200 and "acme" in page.text
    switched = other.get("/ui/user", params={"user_id": "maya"}, headers=as_browser(session_id))
    assert switched.status_code == 200
    assert "User <strong>maya</strong>" in one.get("/ui/").text  # the switch holds on both
    token = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    out = other.post(
        "/ui/logout", data={"csrf": token}, headers=as_browser(session_id), follow_redirects=False
    )
    assert out.status_code == 303
    assert one.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"


def test_a_made_up_session_id_is_no_session(
    two_processes: tuple[TestClient, TestClient],
) -> None:
    one, _ = two_processes
    for made_up in ("x" * 43, "y" * 500, ""):
        page = one.get("/ui/", headers=as_browser(made_up), follow_redirects=False)
        assert page.headers["location"] == "/ui/login"


def test_what_is_stored_holds_neither_the_session_id_nor_the_key(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any], redis_url: str
) -> None:
    for shared in ({}, {"redis_url": redis_url}):
        settings = make_settings(auth="required", **shared)
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            key = make_key(client, "acme", "read")
            sign_in(client, key)
            session_id = client.cookies[COOKIE]
            if shared:
                stored = redis.Redis.from_url(redis_url)
                names = stored.keys("memvault:ui:session:*")
                values = [n + (stored.get(n) or b"") for n in names]
                stored.close()
            else:
                rows = raw.execute("SELECT digest, payload FROM ui_sessions").fetchall()
                values = [bytes(d) + bytes(p) for d, p in rows]
            assert values
            for value in values:
                assert key.encode() not in value and session_id.encode() not in value


def test_a_session_in_use_lasts_and_an_idle_one_ends(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    with TestClient(
        create_app(make_settings(auth="required")), raise_server_exceptions=False
    ) as client:
        sign_in(client, make_key(client, "acme", "read"))
        raw.execute("UPDATE ui_sessions SET expires_at = now() + interval '1 minute'")
        assert client.get("/ui/").status_code == 200
        (pushed,) = raw.execute(
            "SELECT bool_and(expires_at > now() + interval '7 hours') FROM ui_sessions"
        ).fetchone() or (None,)
        assert pushed  # a page view pushed the idle timeout on
        raw.execute("UPDATE ui_sessions SET expires_at = now() - interval '1 second'")
        assert client.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
