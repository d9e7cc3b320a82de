"""The dashboard through HTTP: sign-in, sessions, CSRF, scopes, prefix, and every page on a real
store (the browser tests in test_ui_browser.py drive the same pages in Chromium)."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from memvault.service import AsyncMemory

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page carries no CSRF token"
    return found[1]


def on_app(client: TestClient, call: Callable[..., Awaitable[Any]], *args: Any, **kw: Any) -> Any:
    """Run a library call on the app's own event loop (its store's pool lives there)."""
    return client.portal.call(functools.partial(call, *args, **kw))  # type: ignore[union-attr]


def store(client: TestClient) -> AsyncMemory:
    memory: AsyncMemory = client.app.state.memory  # type: ignore[attr-defined]
    return memory


def make_key(client: TestClient, tenant: str, scopes: str) -> str:
    admin = client.app.state.admin  # type: ignore[attr-defined]
    return str(on_app(client, admin.create_api_key, tenant, scopes).key)


def sign_in(client: TestClient, key: str) -> Any:
    form = client.get("/ui/login")
    return client.post(
        "/ui/login", data={"csrf": csrf_of(form.text), "api_key": key}, follow_redirects=False
    )


def test_with_auth_off_the_dashboard_opens_with_a_banner_and_strict_headers(
    client: TestClient,
) -> None:
    page = client.get("/ui/")
    assert page.status_code == 200
    assert "Local, no authentication" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    cookie = page.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    assert "<script>" not in page.text and " style=" not in page.text


def test_a_key_signs_in_and_out_and_a_wrong_key_is_refused(secured: TestClient) -> None:
    assert secured.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
    assert sign_in(secured, "mv_000000000000_" + "x" * 43).status_code == 401
    key = make_key(secured, "acme", "read,write")
    signed = sign_in(secured, key)
    assert signed.status_code == 303
    assert key not in signed.headers["set-cookie"]  # the browser holds a session id only
    page = secured.get("/ui/")
    assert page.status_code == 200 and "acme" in page.text
    assert "Local, no authentication" not in page.text
    out = secured.post("/ui/logout", data={"csrf": csrf_of(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    assert secured.get("/ui/", follow_redirects=False).status_code == 303
    _revocation(secured)


def _csrf_refusal(client: TestClient) -> None:
    on_app(client, store(client).add, "Coffee, black, no sugar", user_id="default", wait=True)
    client.get("/ui/")
    refused = client.post("/ui/health/action", data={"action": "consolidate"})
    assert refused.status_code == 403
    assert "security token" in refused.text and "Traceback" not in refused.text


def _revocation(secured: TestClient) -> None:
    key = make_key(secured, "acme", "read")
    sign_in(secured, key)
    assert secured.get("/ui/").status_code == 200
    on_app(secured, secured.app.state.admin.revoke_api_key, key)  # type: ignore[attr-defined]
    assert secured.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"


def _proxy_prefix(client: TestClient) -> None:
    page = client.get("/ui/memories", headers={"X-Forwarded-Prefix": "/tools/memvault"})
    assert 'href="/tools/memvault/ui/static/app.css"' in page.text
    assert 'action="/tools/memvault/ui/user"' in page.text
    assert "path=/tools/memvault/ui" in page.headers["set-cookie"].lower()
    hostile = client.get("/ui/", headers={"X-Forwarded-Prefix": '/"><script>'})
    assert 'href="/ui/static/app.css"' in hostile.text


def test_memories_list_search_and_a_memory_page(client: TestClient) -> None:
    memory = store(client)
    added = on_app(client, memory.add, "Maya is allergic to peanuts", user_id="maya", wait=True)
    on_app(
        client,
        memory.update,
        added.id,
        user_id="maya",
        content="Maya is allergic to peanuts and shellfish",
    )
    client.get("/ui/user", params={"user_id": "maya"})
    listed = client.get("/ui/memories")
    assert "allergic to peanuts and shellfish" in listed.text
    searched = client.get("/ui/memories", params={"q": "shellfish", "recipe": "keyword"})
    assert "allergic" in searched.text and "keyword" in searched.text
    page = client.get(f"/ui/memories/{added.id}")
    assert page.status_code == 200
    assert "+Maya is allergic to peanuts and shellfish" in page.text  # the history as a diff
    assert client.get("/ui/memories/00000000-0000-0000-0000-000000000000").status_code == 404


def _recall_debugger(client: TestClient) -> None:
    for text in ("Sam lives in Lisbon", "Sam works at a bakery", "Lisbon has trams"):
        on_app(client, store(client).add, text, user_id="sam", wait=True)
    page = client.get(
        "/ui/recall",
        params={
            "q": "where does Sam live",
            "user_id": "sam",
            "a_recipe": "vector",
            "b_recipe": "keyword",
        },
    )
    assert page.status_code == 200
    assert "A: vector" in page.text and "B: keyword" in page.text
    assert "similarity" in page.text or "vector" in page.text
    assert "Sam lives in Lisbon" in page.text
    both = client.get(
        "/ui/recall",
        params={
            "q": "where does Sam live",
            "user_id": "sam",
            "mode": "remember",
            "b_budget_tokens": "16",
            "b_include": "episodic",
        },
    )
    assert both.status_code == 200, both.text[-500:]
    assert "A: remember()" in both.text and "B: remember() · budget_tokens=16" in both.text
    assert "Sam lives in Lisbon" in both.text
    assert "not in B" in both.text  # the small budget left some of A's items out


PAGES = (
    "/ui/",
    "/ui/memories",
    "/ui/recall",
    "/ui/conversations",
    "/ui/graph",
    "/ui/goals",
    "/ui/health",
    "/ui/audit",
    "/ui/jobs",
    "/ui/webhooks",
    "/ui/admin",
)


def seed(client: TestClient, user: str = "default") -> None:
    """A little of every kind: a conversation (turns, facts, entities), memories, a goal."""
    body = {
        "user_id": user,
        "conversation_id": "trip",
        "messages": [
            {"role": "user", "content": "I moved to Lisbon in May and I work at Feedzai."},
            {"role": "assistant", "content": "Noted: Lisbon, Feedzai."},
        ],
    }
    assert client.post("/v1/messages", json=body, params={"wait": True}).status_code < 300
    for text in ("Prefers window seats", "Prefers window seats!", "Allergic to cats"):
        added = client.post("/v1/memories", json={"content": text, "user_id": user})
        assert added.status_code == 201, added.text
    goal = {"user_id": user, "description": "Find a flat in Lisbon"}
    assert client.post("/v1/goals", json=goal).status_code < 300


def test_every_page_answers_on_a_seeded_store(client: TestClient) -> None:
    seed(client)
    for path in PAGES:
        page = client.get(path)
        assert page.status_code == 200, (path, page.text[-500:])
        assert "Traceback" not in page.text
    graph = client.get("/ui/graph", params={"q": "Lisbon"})
    entity = re.search(r"/ui/graph\?entity=([0-9a-f-]{36})", graph.text)
    assert entity, "the graph page finds the entity the conversation named"
    drawn = client.get("/ui/graph", params={"entity": entity[1], "depth": "2"})
    assert drawn.status_code == 200 and 'id="graph-data"' in drawn.text
    # The as-of control sets the drawing too: as known long ago, no link was known yet.
    params = {"entity": entity[1], "depth": "2", "known_at": "2000-01-01T00:00"}
    past = client.get("/ui/graph", params=params)
    assert past.status_code == 200 and "0 links, as of" in past.text, past.text[-500:]
    assert client.get("/ui/conversations/trip").status_code == 200


def test_a_read_only_key_sees_no_action_and_is_refused_one(secured: TestClient) -> None:
    key = make_key(secured, "acme", "read")
    sign_in(secured, key)
    for path in ("/ui/health", "/ui/audit", "/ui/admin"):
        page = secured.get(path)
        assert page.status_code == 200
        assert (
            'method="post"'
            not in page.text.replace('action="/ui/logout"', "").split("</header>")[1]
        ), path
    token = csrf_of(secured.get("/ui/").text)
    for path, form in (
        ("/ui/health/action", {"action": "consolidate"}),
        ("/ui/health/merges/undo", {"merge_id": "00000000-0000-4000-8000-000000000000"}),
        ("/ui/erase", {"user_id": "default", "confirm": "default"}),
        ("/ui/admin/keys", {"scope_read": "on"}),
    ):
        refused = secured.post(path, data={"csrf": token, **form})
        assert refused.status_code == 403, path
        assert "scope" in refused.text


def test_a_health_action_changes_the_store_and_shows_its_audit_row(client: TestClient) -> None:
    for _ in range(2):  # infer off: stored as given, so the twins are a finding, not one row
        body = {"content": "Lives in Porto", "user_id": "default", "infer": False}
        assert client.post("/v1/memories", json=body).status_code == 201
    health = client.get("/ui/health")
    assert "Merge this cluster" in health.text, health.text[-2000:]
    form = re.search(
        r'name="action" value="merge">\s*<input type="hidden" name="memory_ids" value="([^"]+)"',
        health.text,
    )
    assert form
    done = client.post(
        "/ui/health/action",
        data={"csrf": csrf_of(health.text), "action": "merge", "memory_ids": form[1]},
    )
    assert done.status_code == 200
    assert "Receipt" in done.text and "audit-row" in done.text and "merge" in done.text
    left = client.get("/v1/memories", params={"user_id": "default"}).json()["results"]
    assert len(left) == 1
    # The answer offers the undo: one click puts the copy back.
    merge_id = re.search(r'name="merge_id" value="([0-9a-f-]{36})"', done.text)
    assert merge_id and "Undo this merge" in done.text
    undone = client.post(
        "/ui/health/merges/undo", data={"csrf": csrf_of(done.text), "merge_id": merge_id[1]}
    )
    assert undone.status_code == 200 and "Merge undone: 1 memory back" in undone.text
    back = client.get("/v1/memories", params={"user_id": "default"}).json()["results"]
    assert sorted(m["id"] for m in back) == sorted(form[1].split(","))


def _erasure(client: TestClient) -> None:
    client.post("/v1/memories", json={"content": "Secret plan", "user_id": "gone"})
    token = csrf_of(client.get("/ui/audit").text)
    wrong = client.post("/ui/erase", data={"csrf": token, "user_id": "gone", "confirm": "gon"})
    assert wrong.status_code == 422
    done = client.post("/ui/erase", data={"csrf": token, "user_id": "gone", "confirm": "gone"})
    assert done.status_code == 200 and "Receipt" in done.text
    assert client.get("/v1/memories", params={"user_id": "gone"}).json()["results"] == []


def test_keys_are_created_and_revoked_within_the_tenant_only(secured: TestClient) -> None:
    sign_in(secured, make_key(secured, "acme", "admin"))
    other = make_key(secured, "globex", "read")
    page = secured.get("/ui/admin")
    assert other.split("_")[1] not in page.text  # another tenant's keys stay out of view
    assert "MEMVAULT_ENCRYPTION_KEY" not in page.text  # the server's settings: an operator's
    token = csrf_of(page.text)
    created = secured.post("/ui/admin/keys", data={"csrf": token, "scope_read": "on"})
    assert created.status_code == 200 and re.search(r"mv_[0-9a-f]{12}_", created.text)
    probe = secured.post(
        "/ui/admin/keys/revoke", data={"csrf": token, "prefix": other.split("_")[1]}
    )
    assert probe.status_code == 404
    assert sign_in(secured, other).status_code == 303  # still valid
    acme = store(secured).for_tenant("acme")
    secret = on_app(secured, acme.add, "Acme's launch is on Friday", user_id="default", wait=True)
    # Signed in as globex: acme's memory is neither listed, found nor opened.
    assert "launch" not in secured.get("/ui/memories").text
    found = secured.get("/ui/memories", params={"q": "launch Friday"}).text
    assert "0 hits" in found and "Acme&#39;s launch" not in found
    assert secured.get(f"/ui/memories/{secret.id}").status_code == 404


def test_csrf_and_the_proxy_prefix(client: TestClient) -> None:
    _proxy_prefix(client)  # first: it reads the cookie a new session is given
    _csrf_refusal(client)


def test_the_recall_debugger_and_erasure(client: TestClient) -> None:
    """Scores and what moved between two settings; then a user erased with the typed
    confirmation, answered with a receipt."""
    _recall_debugger(client)
    _erasure(client)


def test_a_contradiction_is_resolved_from_the_graph_page(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(auth="required", graph_contradiction_policy="flag_review")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        writer = make_key(client, "acme", "read,write")
        for employer in ("Initech", "Hooli"):
            fact = {"user_id": "default", "subject": "Ann", "predicate": "works_for"}
            answer = client.post(
                "/v1/facts",
                json={**fact, "object": employer},
                headers={"Authorization": f"Bearer {writer}"},
            )
            assert answer.status_code == 201
        sign_in(client, make_key(client, "acme", "read"))
        page = client.get("/ui/graph")
        assert "Ann works for Hooli" in page.text and "graph/reviews/resolve" not in page.text
        review_id = on_app(
            client, store(client).for_tenant("acme").fact_reviews, user_id="default"
        )[0].id
        form = {"csrf": csrf_of(page.text), "review_id": str(review_id), "keep": "fact"}
        assert client.post("/ui/graph/reviews/resolve", data=form).status_code == 403
        sign_in(client, make_key(client, "globex", "read,write"))
        token = csrf_of(client.get("/ui/graph").text)
        probe = client.post("/ui/graph/reviews/resolve", data={**form, "csrf": token})
        assert probe.status_code == 404  # another tenant's review is as unknown as none
        sign_in(client, writer)
        page = client.get("/ui/graph")
        assert "graph/reviews/resolve" in page.text
        refused = client.post("/ui/graph/reviews/resolve", data={**form, "csrf": "forged"})
        assert refused.status_code == 403
        done = client.post("/ui/graph/reviews/resolve", data={**form, "csrf": csrf_of(page.text)})
        assert done.status_code == 200
        assert "Contradiction resolved" in done.text and "resolve_review" in done.text
        after = client.get("/ui/graph").text
        assert "conflicts with" not in after


def test_a_memory_page_lists_the_facts_read_from_it_and_no_other(client: TestClient) -> None:
    said = ["I work at Feedzai in Lisbon.", "My sister Ana lives in Porto."]
    body = {
        "user_id": "default",
        "conversation_id": "two",
        "messages": [{"role": "user", "content": text} for text in said],
    }
    assert client.post("/v1/messages", json=body, params={"wait": True}).status_code < 300
    every = client.get("/v1/facts", params={"user_id": "default", "limit": 1000}).json()
    sources = {m for f in every["results"] for m in f["memory_ids"]}
    assert len(sources) == 2, every  # each turn said something
    for memory_id in sources:
        params = {"user_id": "default", "memory_id": memory_id, "include_superseded": "true"}
        read = client.get("/v1/facts", params=params).json()["results"]
        mine = [f for f in every["results"] if memory_id in f["memory_ids"]]
        assert read and {f["id"] for f in read} == {f["id"] for f in mine}
        page = client.get(f"/ui/memories/{memory_id}").text
        derived = html.unescape(page.split("Facts derived from it", 1)[1].split("</ul>", 1)[0])
        others = [f for f in every["results"] if memory_id not in f["memory_ids"]]
        assert all(f["claim"] in derived for f in mine), derived
        assert not any(f["claim"] in derived for f in others), derived
