"""A user's overview (`GET /v1/overview`, the dashboard's first page): every kind counted
exactly by the store, however many there are, and the growth charts over every memory."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from tests.test_ui import make_key

# The old overview listed a page of each kind to count it: with pages of 3, every count
# below past 3 was wrong, and the growth chart saw only the newest 3 memories.
PAGE = 3


@pytest.fixture
def small_pages(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    app = create_app(make_settings(max_page_size=PAGE))
    with TestClient(app, raise_server_exceptions=False) as api:
        yield api


SAID = (
    "I work at Feedzai in Lisbon.",
    "My sister Ana lives in Porto.",
    "My manager Rui drives a Tesla.",
    "I am allergic to peanuts.",
    "My dog Bolt loves Sintra beach.",
)


def _ok(answer: Any) -> Any:
    assert answer.status_code < 300, (answer.status_code, answer.text[:2000])
    return answer.json()


def _seed(api: TestClient, user: str) -> None:
    for n, said in enumerate(SAID):
        body = {
            "user_id": user,
            "conversation_id": f"chat-{n}",
            "messages": [{"role": "user", "content": said}],
        }
        _ok(api.post("/v1/messages", json=body, params={"wait": True}))
    for text in ("Prefers window seats", "Allergic to cats", "Drinks green tea", "Runs daily"):
        _ok(api.post("/v1/memories", json={"content": text, "user_id": user, "infer": False}))
    for n in range(4):
        _ok(api.post("/v1/goals", json={"user_id": user, "description": f"Goal {n}"}))


def _dated(api: TestClient, user: str, ages: dict[str, timedelta]) -> None:
    """Rewrite when some of the user's memories were written (export, erase, import): the
    memories whose content is a key of ``ages`` are that much older."""
    lines = _ok(api.get("/v1/export", params={"user_id": user}))["results"]
    now = datetime.now(UTC)
    for line in lines:
        age = ages.get(line.get("content", "")) if line["kind"] == "memory" else None
        if age is not None:
            at = (now - age).isoformat()
            line.update(created_at=at, updated_at=at, occurred_at=at)
    _ok(api.delete("/v1/memories", params={"user_id": user}))
    _ok(api.post("/v1/import", json={"memories": lines}))


def test_every_count_is_exact_past_a_page(small_pages: TestClient) -> None:
    _seed(small_pages, "ann")
    seen = _ok(small_pages.get("/v1/overview", params={"user_id": "ann"}))
    memories = _ok(small_pages.get("/v1/memories/count", params={"user_id": "ann"}))["count"]
    assert memories == seen["memories"] == 5 + 4  # every turn is a memory too
    assert (seen["conversations"], seen["turns"], seen["goals"]) == (5, 5, 4)
    # The graph's lists take up to 1,000 whatever the page size: what they list is the count.
    wide = {"user_id": "ann", "limit": 1000}
    facts = _ok(small_pages.get("/v1/facts", params=wide))["results"]
    entities = _ok(small_pages.get("/v1/entities", params=wide))["results"]
    assert (seen["facts"], seen["entities"]) == (len(facts), len(entities))
    assert seen["entities"] > PAGE, entities
    small_pages.get("/ui/user", params={"user_id": "ann"})
    page = small_pages.get("/ui/")
    stat = r'<span class="n">([^<]*)</span><span class="k">(\w+)<'
    counts = {label: n for n, label in re.findall(stat, page.text)}
    assert counts == {
        "Memories": "9",
        "Conversations": "5",
        "Turns": "5",
        "Facts": str(seen["facts"]),
        "Entities": str(seen["entities"]),
        "Goals": "4",
    }, page.text
    assert "+</span>" not in page.text


def test_the_growth_charts_count_every_memory_by_day_and_week(small_pages: TestClient) -> None:
    user = "bea"
    texts = [f"Memory number {n} about the garden" for n in range(8)]
    for text in texts:
        body = {"content": text, "user_id": user, "infer": False}  # no dedup: 8 rows
        _ok(small_pages.post("/v1/memories", json=body))
    ages = {texts[0]: timedelta(days=3), texts[1]: timedelta(days=40)}
    _dated(small_pages, user, ages)
    seen = _ok(small_pages.get("/v1/overview", params={"user_id": user, "days": 7, "weeks": 10}))
    days, weeks = seen["per_day"], seen["per_week"]
    assert len(days) == 7 and len(weeks) == 10
    today = datetime.now(UTC).date().isoformat()
    by_day = {d["start"][:10]: d["memories"] for d in days}
    three_ago = (datetime.now(UTC) - timedelta(days=3)).date().isoformat()
    assert by_day[today] == 6 and by_day[three_ago] == 1, by_day
    assert sum(by_day.values()) == 7  # the 40-day-old one is past the daily chart
    assert sum(w["memories"] for w in weeks) == 8  # and within the weekly one
    assert all(datetime.fromisoformat(w["start"]).weekday() == 0 for w in weeks)
    assert days[-1]["start"][:10] == today and days == sorted(days, key=lambda d: d["start"])

    small_pages.get("/ui/user", params={"user_id": user})
    page = small_pages.get("/ui/").text
    assert f"<title>{today}: 6</title>" in page and f"<title>{three_ago}: 1</title>" in page
    assert "Memories added per week" in page


def test_the_overview_is_refused_bad_periods_and_sees_only_its_tenant(
    secured: TestClient,
) -> None:
    acme = {"Authorization": f"Bearer {make_key(secured, 'acme', 'read,write')}"}
    globex = {"Authorization": f"Bearer {make_key(secured, 'globex', 'read')}"}
    body = {"content": "Acme's secret", "user_id": "ann"}
    assert secured.post("/v1/memories", json=body, headers=acme).status_code == 201
    mine = _ok(secured.get("/v1/overview", params={"user_id": "ann"}, headers=acme))
    theirs = _ok(secured.get("/v1/overview", params={"user_id": "ann"}, headers=globex))
    assert mine["memories"] == 1 and theirs["memories"] == 0
    assert sum(d["memories"] for d in theirs["per_day"]) == 0
    for bad in ({"days": 0}, {"weeks": 521}, {"days": "x"}, {"user_id": ""}):
        refused = secured.get("/v1/overview", params={"user_id": "ann", **bad}, headers=acme)
        assert refused.status_code == 422, (bad, refused.text)
        assert "Traceback" not in refused.text
