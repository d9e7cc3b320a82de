"""The dashboard's own defences, over HTTP on a real store: sign-in throttled per client address
and per key prefix, a new sign-in ending the old session, every /ui answer (errors included) an
HTML page with the security headers, a tenant's admin kept to its tenant while an operator sees
the server, and user text that cannot reorder the page around it (bidi controls)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from tests.test_ui import make_key, sign_in

WRONG = "mv_abcdefabcdef_" + "x" * 43


@pytest.fixture
def secured(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(
        create_app(make_settings(auth="required")), raise_server_exceptions=False
    ) as client:
        yield client


def from_address(client: TestClient, host: str) -> TestClient:
    """Another browser, at another address, on the same running app (and its event loop)."""
    other = TestClient(client.app, client=(host, 50000), raise_server_exceptions=False)
    other.portal = client.portal
    return other


def test_wrong_keys_from_one_address_are_throttled_with_retry_after(secured: TestClient) -> None:
    right = make_key(secured, "acme", "read")
    for _ in range(7):  # right keys cost nothing: only failures count
        assert sign_in(secured, right).status_code == 303
    for _ in range(5):
        assert sign_in(secured, WRONG).status_code == 401
    refused = sign_in(secured, WRONG)
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert "Too many sign-in attempts" in refused.text
    assert refused.headers["x-frame-options"] == "DENY"
    # Throttled before the key is checked: a right key from here waits too (no oracle).
    assert sign_in(secured, right).status_code == 429
    assert sign_in(from_address(secured, "10.0.0.9"), right).status_code == 303


def test_one_key_prefix_guessed_from_many_addresses_is_throttled(secured: TestClient) -> None:
    for n in range(5):
        assert sign_in(from_address(secured, f"10.0.1.{n}"), WRONG).status_code == 401
    elsewhere = from_address(secured, "10.0.1.99")
    assert sign_in(elsewhere, WRONG).status_code == 429
    other_prefix = "mv_123456123456_" + "y" * 43
    assert sign_in(elsewhere, other_prefix).status_code == 401


def test_signing_in_again_ends_the_session_held_before(secured: TestClient) -> None:
    sign_in(secured, make_key(secured, "acme", "read"))
    old = secured.cookies["memvault_ui"]
    assert secured.get("/ui/", follow_redirects=False).status_code == 200
    assert sign_in(secured, make_key(secured, "globex", "read")).status_code == 303
    assert secured.cookies["memvault_ui"] != old
    assert "globex" in secured.get("/ui/").text
    stale = from_address(secured, "10.0.2.1")
    stale.cookies.set("memvault_ui", old, path="/ui")
    assert stale.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
