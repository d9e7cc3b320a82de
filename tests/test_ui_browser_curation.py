"""Curation in a real browser (Debian's Chromium, Playwright), with authentication on and off:
pick a user from the list, create, edit and undo, bulk delete on a filtered list (confirmed,
one receipt), receipts listed and downloaded, a user's export downloaded, a fact retired and
another corrected, entities merged and split again, a conversation deleted, a refused filter
named on the page and an erasure of a user who holds nothing answered as such. Each action's
audit row (and receipt, where something went) is checked on the page it answers with, and
axe-core finds nothing serious on the new pages.

Screenshots go where ``UI_SCREENSHOTS_DIR`` says, as in test_ui_browser.py."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from memvault.api import create_app
from memvault.config import Settings
from tests.conftest import KEY, TemplateCopies, _template_copy
from tests.serving import serving
from tests.test_ui_browser import ARGS, Watched, _keys, axe_violations, chromium, shot

USER = "maya"


@dataclass
class Site:
    url: str
    key: str | None

    def api(self, method: str, path: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        answer = httpx.request(method, self.url + path, headers=headers, timeout=60, **kw)
        assert answer.status_code < 300, answer.text
        return answer.json() if answer.content else None


def served_site(
    auth_param: str,
    copies: TemplateCopies,
    data_dir: Path,
    seed: Callable[[Site], None],
    **overrides: Any,
) -> Iterator[Site]:
    """A served store on a copy of the template database, auth on or off, seeded: the browser
    suites' module-wide site."""
    auth = "required" if auth_param == "auth-on" else "off"
    for url in _template_copy(copies):
        settings = Settings(
            database_url=url,
            encryption_key=KEY,
            data_dir=data_dir,
            auth=auth,
            rate_limit_per_s=0,
            embedding_provider="hash",
            **overrides,
        )
        key = None
        if auth == "required":
            with ThreadPoolExecutor(1) as pool:
                key, _ = pool.submit(asyncio.run, _keys(settings)).result()
        with serving(create_app(settings)) as served:
            made = Site(served, key)
            seed(made)
            yield made


@pytest.fixture(scope="module", params=["auth-on", "auth-off"])
def site(
    request: pytest.FixtureRequest,
    template_copies: TemplateCopies,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Site]:
    yield from served_site(
        request.param, template_copies, tmp_path_factory.mktemp("ui-curation"), _seed
    )


def _seed(site: Site) -> None:
    for i in range(3):
        site.api(
            "POST",
            "/v1/memories",
            json={"user_id": USER, "content": f"Old flat viewing note {i}", "tags": ["flats"],
                  "infer": False},
        )  # fmt: skip
    site.api("POST", "/v1/memories", json={"user_id": "rui", "content": "Rui drinks green tea"})
    for subject, predicate, obj in (
        ("Rui", "lives_in", "Porto"),
        ("Rui", "works_for", "Feedzai"),
        ("Ana", "lives_in", "Alfama"),
        ("Silva", "works_for", "Unbabel"),
    ):
        site.api(
            "POST",
            "/v1/facts",
            json={"user_id": USER, "subject": subject, "predicate": predicate, "object": obj},
        )
    site.api(
        "POST",
        "/v1/messages",
        params={"wait": "true"},
        json={"user_id": USER, "conversation_id": "flat-hunt",
              "messages": [{"role": "user", "content": "Find me a flat in Alfama"}]},
    )  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def view(browser: Browser, site: Site) -> Iterator[Watched]:
    watched = Watched(browser, site.url, accept_downloads=True)
    try:
        if site.key:
            watched.sign_in(site.key)  # lands on the user list
        else:
            watched.open("/users")
        yield watched
    finally:
        watched.close()


def _shot(site: Site, page: Page, name: str, tmp: Path) -> None:
    """The documentation's screenshots are the signed-in ones (no local-mode banner)."""
    if site.key:
        shot(page, name, tmp)


def _done(page: Page, message: str, operation: str, target: str | None = None) -> None:
    """The answer to an action: its sentence and its audit row (naming its target)."""
    page.wait_for_selector("main [role=status]")
    assert message in page.locator("main [role=status]").inner_text()
    rows = page.locator("tr.audit-row", has_text=operation)
    if target is not None:
        rows = rows.filter(has_text=target)
    assert rows.count() >= 1, (operation, target)


def test_memories_created_edited_undone_and_bulk_deleted(
    view: Watched, site: Site, tmp_path: Path
) -> None:
    page = view.page
    assert axe_violations(page) == []
    page.get_by_role("link", name=USER, exact=True).click()
    page.wait_for_url("**/ui/")
    assert f'value="{USER}"' in page.locator("#user-switch").evaluate("e => e.outerHTML")

    page = view.open("/memories/new")
    page.get_by_label("Content").fill("Maya wants a balcony facing the river")
    page.get_by_label("Tags (comma-separated)").fill("flats, wishes")
    page.get_by_label("Importance (1 to 10)").fill("8")
    page.get_by_label("Metadata (a JSON object)").fill('{"origin": "dashboard"}')
    page.get_by_role("button", name="Store").click()
    _done(page, "Memory stored.", "store")
    page.get_by_role("link", name="Open it").click()
    memory_id = page.url.rsplit("/", 1)[1]
    record = site.api("GET", f"/v1/memories/{memory_id}", params={"user_id": USER})
    assert (record["tags"], record["importance"], record["metadata"]) == (
        ["flats", "wishes"], 8, {"origin": "dashboard"},
    )  # fmt: skip

    page.get_by_role("link", name="Edit").click()
    assert axe_violations(page) == []
    page.get_by_label("Tags (comma-separated)").fill("flats")
    page.get_by_role("button", name="Save").click()
    _done(page, "Memory updated: tags.", "update", f"memory:{memory_id}")
    assert axe_violations(page) == []
    page.get_by_role("button", name="Undo").click()
    _done(page, "Memory updated: tags.", "update", f"memory:{memory_id}")
    record = site.api("GET", f"/v1/memories/{memory_id}", params={"user_id": USER})
    assert record["tags"] == ["flats", "wishes"]

    # Bulk delete on a filtered list: the button waits for a selection, then asks first.
    page = view.open("/memories?tags=flats")
    delete = page.get_by_role("button", name="Delete selected…")
    assert delete.is_disabled()
    page.get_by_label("Select every memory on this page").check()
    assert page.locator("input[name=memory_ids]:checked").count() == 4
    _shot(site, page, "memories-select", tmp_path)
    delete.click()
    page.wait_for_selector("form.confirm")
    assert "Delete 4 memories?" in page.locator("h1").inner_text()
    assert axe_violations(page) == []
    _shot(site, page, "confirm-delete", tmp_path)
    assert site.api("GET", "/v1/memories/count", params={"user_id": USER, "tags": "flats"}) == {
        "count": 4
    }
    page.get_by_role("button", name="Delete for good").click()
    _done(page, "Deleted 4 memories.", "delete")
    assert page.locator(".receipt").count() == 1
    request_id = page.locator(".receipt code").first.inner_text()
    assert axe_violations(page) == []
    _shot(site, page, "curated-receipt", tmp_path)
    assert site.api("GET", "/v1/memories/count", params={"user_id": USER, "tags": "flats"}) == {
        "count": 0
    }

    page = view.open("/receipts")
    row = page.locator("tr.receipt-row", has_text=request_id[:12])
    assert row.count() == 1
    assert axe_violations(page) == []
    _shot(site, page, "receipts", tmp_path)
    with page.expect_download() as download:
        row.get_by_role("link").click()
    saved = json.loads(Path(download.value.path()).read_text())
    assert (saved["request_id"], saved["memories"]) == (request_id, 4)
    assert view.problems == []


def test_users_listed_and_a_user_exported(view: Watched, site: Site, tmp_path: Path) -> None:
    page = view.open("/users")
    rows = page.locator("tr.user-row")
    assert rows.filter(has_text="rui").count() == 1 and rows.filter(has_text=USER).count() == 1
    assert axe_violations(page) == []
    _shot(site, page, "users", tmp_path)
    with page.expect_download() as download:
        page.get_by_label("Export rui as JSON lines").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert any("Rui drinks green tea" in line for line in lines)
    assert not any("Alfama" in line for line in lines)  # maya's, not rui's
    assert view.problems == []


def test_facts_retired_and_corrected_entities_merged_and_split(
    view: Watched, site: Site, tmp_path: Path
) -> None:
    view.open("/user?user_id=" + USER)
    page = view.open("/graph?q=Rui")
    page.locator("a[href*='graph?entity=']", has_text="Rui").first.click()
    page.wait_for_selector("tr.fact-row")
    _shot(site, page, "graph-curate", tmp_path)
    lives = page.locator("tr.fact-row", has_text="lives in Porto")
    lives.get_by_role("textbox").fill("Braga")
    lives.get_by_role("button", name="Correct").click()
    _done(page, "Corrected to “Rui lives in Braga”", "update", "fact:")
    page.get_by_role("link", name="Back to the graph").click()
    works = page.locator("tr.fact-row", has_text="works for Feedzai").filter(has_not_text="retired")
    works.get_by_role("button", name=re.compile("Retire")).click()
    _done(page, "Retired “Rui works for Feedzai”", "update", "fact:")
    current = site.api("GET", "/v1/facts", params={"user_id": USER, "entity": "Rui"})["results"]
    assert sorted(f["claim"] for f in current) == ["Rui lives in Braga"]

    page = view.open("/graph?q=Silva")
    page.locator("a[href*='graph?entity=']", has_text="Silva").first.click()
    page.get_by_label("Merge this entity into").select_option(label="Ana")
    page.get_by_role("button", name="Merge", exact=True).click()
    _done(page, "Merged into “Ana”", "merge", "entity:")
    assert axe_violations(page) == []
    page.get_by_role("button", name="Undo").click()
    _done(page, "split off again", "update", "entity:")
    assert view.problems == []


def test_a_conversation_deleted_with_its_receipt(view: Watched, site: Site) -> None:
    view.open("/user?user_id=" + USER)
    page = view.open("/conversations/flat-hunt")
    page.get_by_role("button", name="Delete this conversation…").click()
    page.wait_for_selector("form.confirm")
    page.get_by_role("button", name="Delete for good").click()
    _done(page, "Conversation deleted", "delete")
    assert page.locator(".receipt").count() == 1
    assert view.problems == []


def test_honest_messages(view: Watched, site: Site, tmp_path: Path) -> None:
    view.open("/user?user_id=" + USER)
    page = view.open("/memories")
    page.locator("summary", has_text="Filters").click()
    page.get_by_label("min importance").fill("abc")
    page.get_by_role("button", name="Show").last.click()
    alert = page.locator("#rows [role=alert]")
    alert.wait_for()
    assert "min importance" in alert.inner_text()
    assert page.locator("#rows tbody a").count() == 0  # no rows of the last good filter
    _shot(site, page, "memories-refused-filter", tmp_path)

    page = view.open("/audit")
    page.get_by_label("User to erase").fill("alcie")
    erase = page.get_by_role("button", name="Erase this user")
    assert erase.is_disabled()
    colour = erase.evaluate("b => getComputedStyle(b).backgroundColor")
    assert colour == "rgb(233, 236, 240)"  # looks disabled, not like the live red button
    page.get_by_label("Type the user id again to confirm").fill("alcie")
    erase.click()
    page.wait_for_selector("#erase-empty")
    assert "holds nothing" in page.locator("#erase-empty").inner_text()
    assert site.api("GET", "/v1/deletions", params={"user_id": "alcie"}) == {"results": []}
    assert view.problems == []
