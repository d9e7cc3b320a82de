"""The dashboard in a real browser: Debian's Chromium driven by Playwright, against a served
store seeded through the API. Every page loads with no console error and no serious or
critical axe-core violation; sign-in and sign-out, CSRF refusal, a read-only key, a path
prefix, a health action and a contradiction resolved end to end (the change, the audit row,
the receipt).

Screenshots of every page go to a temporary folder, or to ``UI_SCREENSHOTS_DIR`` when set
(``UI_SCREENSHOTS_DIR=docs/img/dashboard`` refreshes the documentation's)."""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from memvault.admin import AsyncAdmin
from memvault.api import create_app
from memvault.config import Settings
from memvault.db.embedded import EmbeddedPostgres
from tests.conftest import KEY, TEMPLATE
from tests.debian import install_when_missing
from tests.serving import serving
from tests.ui_seed import USER, seed

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = Path(__file__).parent / "ui_vendor" / "axe-core" / "axe.min.js"
SHOTS = os.environ.get("UI_SCREENSHOTS_DIR")
PAGES = {
    "overview": "/",
    "memories": "/memories",
    "recall": "/recall?q=where+does+Maya+live&a_recipe=vector&b_recipe=keyword",
    "recall-remember": "/recall?q=where+does+Maya+live&mode=remember&b_recency=0.9",
    "conversations": "/conversations",
    "conversation": "/conversations/move-to-lisbon",
    "graph": "/graph?q=Lisbon",
    "goals": "/goals?task=find+a+flat",
    "health": "/health",
    "audit": "/audit",
    "jobs": "/jobs",
    "admin": "/admin",
    "users": "/users",
    "memory-new": "/memories/new",
}


def chromium() -> str:
    """Debian's chromium (Playwright's own browser builds are not reachable from CI)."""
    if not install_when_missing("chromium", CHROMIUM):
        pytest.fail("chromium is missing: apt-get install -y chromium")
    return CHROMIUM


@dataclass
class Site:
    url: str
    admin_key: str
    read_key: str
    twins: list[str]


@pytest.fixture(scope="module")
def site(pg_server: EmbeddedPostgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    settings = Settings(
        database_url=pg_server.admin_url(name),
        encryption_key=KEY,
        data_dir=tmp_path_factory.mktemp("ui-data"),
        auth="required",
        rate_limit_per_s=0,
        # The page tests need no meaning; the hash embedder spares loading the model.
        embedding_provider="hash",
        # Contradictions wait for a person, so the graph page has one to resolve.
        graph_contradiction_policy="flag_review",
    )
    # In a thread of its own: the suite's event loop may be running in this one.
    with ThreadPoolExecutor(1) as pool:
        admin_key, read_key = pool.submit(asyncio.run, _keys(settings)).result()
    try:
        with serving(behind_proxy(create_app(settings))) as url:
            made = seed(url, admin_key)
            yield Site(url, admin_key, read_key, made["twins"])
    finally:
        with psycopg.connect(pg_server.admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


PREFIX = "/tools/memvault"


def behind_proxy(app: Any) -> Any:
    """The app as a reverse proxy serves it: requests under PREFIX arrive with the prefix
    stripped and ``X-Forwarded-Prefix`` set; others pass as they are."""

    async def proxied(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX + "/"):
            path = scope["path"][len(PREFIX) :]
            headers = [*scope["headers"], (b"x-forwarded-prefix", PREFIX.encode())]
            scope = {**scope, "path": path, "raw_path": path.encode(), "headers": headers}
        await app(scope, receive, send)

    return proxied


async def _keys(settings: Settings) -> tuple[str, str]:
    admin = await AsyncAdmin.open(settings)
    try:
        full = await admin.create_api_key("acme", "admin", "dashboard admin")
        read = await admin.create_api_key("acme", "read", "dashboard viewer")
    finally:
        await admin.close()
    return full.key, read.key


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=ARGS)
        yield launched
        launched.close()


class Watched:
    """A page with its console errors, page errors and failed requests collected."""

    def __init__(self, browser: Browser, base: str, **options: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 860}, **options)
        self.page: Page = self.context.new_page()
        self.base = base
        self.problems: list[str] = []
        self.page.on(
            "console", lambda m: self.problems.append(m.text) if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on(
            "response",
            lambda r: self.problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )

    def open(self, path: str) -> Page:
        self.page.goto(self.base + "/ui" + path)
        return self.page

    def sign_in(self, key: str) -> None:
        self.open("/login")
        self.page.get_by_label("API key").fill(key)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url("**/ui/users")  # whose memory to show is the first choice

    def sign_in_to_the_seeded_user(self, key: str) -> None:
        self.sign_in(key)
        self.open("/user?user_id=" + USER)

    def close(self) -> None:
        self.context.close()


def axe_violations(page: Page) -> list[str]:
    # evaluate() runs outside the page's CSP, which (rightly) refuses injected script tags.
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    found = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length}))"
    )
    return [
        f"{v['id']} ({v['impact']}, {v['nodes']})"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def shot(page: Page, name: str, tmp: Path) -> None:
    folder = Path(SHOTS) if SHOTS else tmp
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_every_page_loads_clean_and_accessible(
    browser: Browser, site: Site, tmp_path: Path
) -> None:
    view = Watched(browser, site.url)
    try:
        view.sign_in_to_the_seeded_user(site.admin_key)
        for name, path in PAGES.items():
            page = view.open(path)
            assert page.locator("h1").count() == 1, name
            assert axe_violations(page) == [], name
            shot(page, name, tmp_path)
        page = view.open("/graph?q=Lisbon")
        page.locator("a[href*='graph?entity=']").first.click()
        page.wait_for_selector("#graph[data-ready]")
        assert page.locator("#graph canvas").count() > 0
        assert axe_violations(page) == []
        shot(page, "graph-entity", tmp_path)
        _a_large_graph_is_drawn_on_a_canvas_and_a_click_opens_a_node(page)
        page.set_viewport_size({"width": 390, "height": 844})
        for name in ("overview", "memories"):
            shot(view.open(PAGES[name]), f"{name}-phone", tmp_path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{name} scrolls sideways on a phone ({width}px)"
        assert view.problems == []
    finally:
        view.close()


def _a_large_graph_is_drawn_on_a_canvas_and_a_click_opens_a_node(page: Page) -> None:
    """Past the page's threshold the script draws on a plain canvas: here 401 nodes around
    the entity on show, drawn beside its own graph, and a click on the centre opens it."""
    centre = page.evaluate(
        """() => new Promise((done) => {
            const shown = JSON.parse(document.getElementById('graph-data').textContent);
            const centre = shown.nodes.find((n) => n.centre);
            const others = Array.from({length: 400}, (_, i) =>
                ({id: 'n' + i, label: 'n' + i, depth: 1 + (i % 2), centre: false}));
            const edges = others.map((n) => ({source: centre.id, target: n.id, label: 'knows'}));
            const probe = document.createElement('div');
            probe.className = 'probe';
            probe.dataset.base = document.getElementById('graph').dataset.base;
            probe.style.height = '400px';
            document.querySelector('main').appendChild(probe);
            drawLarge(probe, {nodes: [centre, ...others], edges}, () => done(centre.id));
        })"""
    )
    page.locator(".probe canvas").click()
    page.wait_for_url(f"**/graph?entity={centre}")


def test_sign_in_out_csrf_read_only_and_prefix(browser: Browser, site: Site) -> None:
    view = Watched(browser, site.url)
    try:
        page = view.open("/")
        assert page.url.endswith("/ui/login")
        page.get_by_label("API key").fill("mv_000000000000_" + "x" * 43)
        page.get_by_role("button", name="Sign in").click()
        assert "was not accepted" in page.locator("[role=alert]").inner_text()
        view.problems.clear()  # the refused sign-in answered 401, as it should

        view.sign_in(site.read_key)
        for path in ("/health", "/audit", "/admin", "/jobs", "/graph"):
            main = view.open(path).locator("main")
            assert main.locator("form[method=post]").count() == 0, path
        token = page.locator("input[name=csrf]").first.get_attribute("value")
        forced = page.request.post(
            site.url + "/ui/erase", form={"csrf": token, "user_id": USER, "confirm": USER}
        )
        assert forced.status == 403
        no_token = page.request.post(site.url + "/ui/logout", form={})
        assert no_token.status == 403
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url("**/ui/login")
        assert view.open("/memories").url.endswith("/ui/login")
        assert view.problems == []
    finally:
        view.close()

    # Behind a proxy that serves the app under a prefix and says so.
    proxied = Watched(browser, site.url + PREFIX)
    try:
        proxied.sign_in(site.read_key)
        assert proxied.page.url == f"{site.url}{PREFIX}/ui/users"
        proxied.page.get_by_role("link", name="Memories").click()
        proxied.page.wait_for_url(f"**{PREFIX}/ui/memories")
        assert proxied.problems == []
    finally:
        proxied.close()


def test_a_health_recommendation_applied_end_to_end(
    browser: Browser, site: Site, tmp_path: Path
) -> None:
    view = Watched(browser, site.url)
    try:
        view.sign_in_to_the_seeded_user(site.admin_key)
        page = view.open("/health")
        # The preview says which memory stays (the original) and which is folded in.
        cluster = page.locator("article.cluster").first
        assert cluster.locator("tr.kept").count() == 1
        assert cluster.locator("tr.folded").count() == 1
        assert axe_violations(page) == []
        page.get_by_role("button", name=re.compile("Merge all")).click()
        page.wait_for_selector(".receipt")
        assert "Merge: 1 changed" in page.locator("main").inner_text()
        assert page.locator("tr.audit-row", has_text="merge").count() >= 1
        assert axe_violations(page) == []
        shot(page, "health-merged", tmp_path)
        found = [
            httpx.get(
                f"{site.url}/v1/memories/{twin}",
                params={"user_id": USER},
                headers={"Authorization": f"Bearer {site.admin_key}"},
            )
            for twin in site.twins
        ]
        # The first stored stays, and names the copy it took in.
        assert [r.status_code for r in found] == [200, 404]
        assert found[0].json()["metadata"]["merged_from"] == [site.twins[1]]
        # One click undoes it: the copy is back and the memory that stayed is as it was.
        page.get_by_role("button", name="Undo this merge").click()
        page.wait_for_selector("text=Merge undone")
        assert axe_violations(page) == []
        shot(page, "health-merge-undone", tmp_path)
        back = [
            httpx.get(
                f"{site.url}/v1/memories/{twin}",
                params={"user_id": USER},
                headers={"Authorization": f"Bearer {site.admin_key}"},
            )
            for twin in site.twins
        ]
        assert [r.status_code for r in back] == [200, 200]
        assert "merged_from" not in back[0].json()["metadata"]
        assert view.problems == []
    finally:
        view.close()


def test_a_contradiction_resolved_from_the_graph_page(browser: Browser, site: Site) -> None:
    view = Watched(browser, site.url)
    try:
        view.sign_in_to_the_seeded_user(site.admin_key)
        page = view.open("/graph")
        review = page.locator("li.review", has_text="Unbabel")
        review.get_by_role("button", name=re.compile("Keep .*Unbabel")).click()
        page.wait_for_selector("[role=status]")
        assert "Contradiction resolved" in page.locator("main").inner_text()
        assert page.locator("tr.audit-row", has_text="resolve_review").count() == 1
        current = httpx.get(
            f"{site.url}/v1/facts",
            params={"user_id": USER, "predicate": "works_for"},
            headers={"Authorization": f"Bearer {site.admin_key}"},
        ).json()["results"]
        assert [f["object"] for f in current] == ["Unbabel"]
        assert view.open("/graph").locator("li.review", has_text="Unbabel").count() == 0
        assert view.problems == []
    finally:
        view.close()
