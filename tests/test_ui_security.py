"""The dashboard's own defences, over HTTP on a real store: sign-in throttled per client address
and per key prefix, a new sign-in ending the old session, every /ui answer (errors included) an
HTML page with the security headers, a tenant's admin kept to its tenant while an operator sees
the server, and user text that cannot reorder the page around it (bidi controls)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from memvault.ui.user_text import BIDI_CONTROLS
from tests.conftest import KEY
from tests.test_ui import csrf_of, make_key, on_app, sign_in

WRONG = "mv_abcdefabcdef_" + "x" * 43


def prefix(key: str) -> str:
    return key.split("_")[1]


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


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/ui/no-such-page", 404),
        ("GET", "/ui/memories/x/y/z", 404),
        ("POST", "/ui/nowhere", 404),
        ("GET", "/ui/static/missing.css", 404),
        ("GET", "/ui/logout", 405),
        ("GET", "/ui/erase", 405),
        ("GET", "/ui/admin/keys/revoke", 405),
        ("DELETE", "/ui/memories", 405),
        ("GET", "/ui/user", 422),
    ],
)
def test_every_ui_answer_is_an_html_page_with_the_headers(
    client: TestClient, method: str, path: str, status: int
) -> None:
    page = client.get("/ui/")
    answer = client.request(method, path, headers={"Authorization": "Bearer " + WRONG})
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")
    for header in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert answer.headers[header] == page.headers[header], header
    assert answer.text.startswith("<!doctype html>") and 'role="alert"' in answer.text
    assert "Traceback" not in answer.text and '{"error"' not in answer.text
    assert WRONG not in answer.text and "x" * 43 not in answer.text
    if status == 405:
        assert answer.headers["allow"]


def test_a_tenant_admin_sees_its_tenant_and_an_operator_the_server(secured: TestClient) -> None:
    admin = secured.app.state.admin  # type: ignore[attr-defined]
    job = on_app(secured, admin.schedule)[0].name
    on_app(secured, admin.run_scheduled, job, dry_run=True)  # a run whose counts span tenants
    acme, globex = make_key(secured, "acme", "admin"), make_key(secured, "globex", "admin")
    for mine, theirs in ((acme, globex), (globex, acme)):
        sign_in(secured, mine)
        jobs = secured.get("/ui/jobs").text
        assert "This tenant's embedding jobs" in jobs and "Last runs" not in jobs
        settings = secured.get("/ui/admin").text
        assert prefix(mine) in settings and prefix(theirs) not in settings
        assert "MEMVAULT_ENCRYPTION_KEY" not in settings
        form = {"csrf": csrf_of(settings), "job": job, "dry_run": "1"}
        assert secured.post("/ui/jobs/run", data=form).status_code == 403
    # The operator scope is granted where the CLI grants it (`api-keys create --scopes operator`).
    operator = make_key(secured, "ops", "operator")
    sign_in(secured, operator)
    jobs = secured.get("/ui/jobs").text
    assert "Last runs" in jobs and "(dry run)" in jobs
    settings = secured.get("/ui/admin").text
    assert "MEMVAULT_ENCRYPTION_KEY" in settings and KEY not in settings  # masked
    assert prefix(acme) not in settings  # still its own tenant's keys only
    form = {"csrf": csrf_of(settings), "scope_admin": "on", "scope_operator": "on"}
    assert secured.post("/ui/admin/keys", data=form).status_code == 200
    scopes = [k.scopes for k in on_app(secured, admin.list_api_keys, "ops")]
    assert sorted(scopes) == [["admin"], ["operator"]]  # the dashboard grants no operator


def test_user_text_is_isolated_and_labels_carry_no_bidi_controls(
    make_settings: Callable[..., Settings],
) -> None:
    hostile = "Hooli\u202e evil corp"
    settings = make_settings(graph_contradiction_policy="flag_review")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for employer in ("Initech", hostile):
            fact = {"user_id": "default", "subject": "Ann", "predicate": "works_for"}
            assert client.post("/v1/facts", json={**fact, "object": employer}).status_code == 201
        for page in (client.get("/ui/graph").text, client.get("/ui/graph?q=Hooli").text):
            assert "<bdi>" in page and hostile in page  # shown as written, inside an isolate
            outside = re.sub(r"<bdi>.*?</bdi>", "", page, flags=re.S)
            assert not set(BIDI_CONTROLS) & set(outside), "user text outside an isolate"
        page = client.get("/ui/graph").text
        labels = re.findall(r"<button[^>]*>(.*?)</button>", page, flags=re.S)
        labels += re.findall(r'(?:aria-label|title)="([^"]*)"', page)
        assert any("evil corp" in label for label in labels)
        assert not any(set(BIDI_CONTROLS) & set(label) for label in labels)
