"""Curation from the dashboard over HTTP: each action is the service's operation, audited (the
row names its target), confirmed where it destroys, with its receipt where something went and
its undo where the service can undo (the browser test drives the same in Chromium)."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.testclient import TestClient

from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.test_ui import csrf_of, make_key, on_app, sign_in, store

USER = "default"


def _add(client: TestClient, text: str, **fields: Any) -> str:
    added = on_app(client, store(client).add, text, user_id=USER, wait=True, infer=False, **fields)
    return str(added.id)


def _post(client: TestClient, path: str, page: str, **data: Any) -> Any:
    answer = client.post(path, data={"csrf": csrf_of(page), **data})
    assert answer.status_code == 200, answer.text
    return answer


def _audit(client: TestClient, operation: str) -> list[Any]:
    memory: AsyncMemory = store(client)
    return list(on_app(client, memory.audit_log, operation=operation, limit=20).results)


def test_a_memory_created_edited_undone_and_deleted_with_its_receipt(client: TestClient) -> None:
    form = client.get("/ui/memories/new")
    assert form.status_code == 200 and 'name="content"' in form.text
    made = _post(
        client,
        "/ui/memories/new",
        form.text,
        content="Maya keeps bees on the roof",
        tags="hobby, home",
        importance="7",
        metadata='{"origin": "seed"}',
    )
    assert "Memory stored." in made.text
    (memory_id,) = re.findall(r"/ui/memories/([0-9a-f-]{36})\"", made.text)[:1]
    record = on_app(client, store(client).get, memory_id, user_id=USER)
    assert (record.tags, record.importance, record.metadata) == (
        ["hobby", "home"],
        7,
        {"origin": "seed"},
    )

    edit = client.get(f"/ui/memories/{memory_id}/edit")
    assert "Maya keeps bees on the roof" in edit.text
    saved = _post(
        client,
        f"/ui/memories/{memory_id}/edit",
        edit.text,
        content="Maya keeps two hives on the roof",
        tags="hobby",
        importance="9",
        metadata='{"origin": "dashboard"}',
    )
    assert "Memory updated: content, importance, metadata, tags." in saved.text
    edited = on_app(client, store(client).get, memory_id, user_id=USER)
    assert (edited.content, edited.tags, edited.importance, edited.metadata) == (
        "Maya keeps two hives on the roof",
        ["hobby"],
        9,
        {"origin": "dashboard"},
    )
    (row,) = [a for a in _audit(client, "update") if a.details.get("target")][:1]
    assert row.details["target"] == f"memory:{memory_id}"
    assert row.details["changed"] == ["content", "importance", "metadata", "tags"]
    assert "memory:" in saved.text  # the audit rows shown name the target

    # Undo posts the old values back through the same edit.
    undo = re.search(
        r'<form method="post" action="/ui(/memories/[^"]+/edit)" class="undo">(.*?)</form>',
        saved.text,
        re.S,
    )
    assert undo is not None
    fields = dict(re.findall(r'name="([a-z_]+)" value="([^"]*)"', undo[2]))
    fields = {k: v.replace("&#34;", '"') for k, v in fields.items()}
    client.post("/ui" + undo[1], data=fields)
    restored = on_app(client, store(client).get, memory_id, user_id=USER)
    assert (restored.content, restored.tags, restored.importance, restored.metadata) == (
        "Maya keeps bees on the roof",
        ["hobby", "home"],
        7,
        {"origin": "seed"},
    )

    page = client.get(f"/ui/memories/{memory_id}")
    asked = _post(client, "/ui/memories/delete", page.text, memory_ids=memory_id)
    assert "Delete 1 memory?" in asked.text and "Maya keeps bees" in asked.text
    assert on_app(client, store(client).count, user_id=USER) == 1  # asking deleted nothing
    done = _post(client, "/ui/memories/delete", asked.text, memory_ids=memory_id, confirmed="yes")
    assert "Deleted 1 memory." in done.text and "Receipt" in done.text
    assert on_app(client, store(client).count, user_id=USER) == 0


def test_bulk_delete_of_a_filtered_list_is_one_receipt_listed_and_downloadable(
    client: TestClient,
) -> None:
    doomed = [_add(client, f"Old note {i}", tags=["old"]) for i in range(3)]
    kept = _add(client, "Keep this one", tags=["new"])
    listed = client.get("/ui/memories?tags=old")
    assert all(i in listed.text for i in doomed) and kept not in listed.text
    asked = _post(client, "/ui/memories/delete", listed.text, memory_ids=doomed)
    assert "Delete 3 memories?" in asked.text
    done = _post(client, "/ui/memories/delete", asked.text, memory_ids=doomed, confirmed="yes")
    assert "Deleted 3 memories." in done.text
    (receipt,) = on_app(client, store(client).deletion_receipts, user_id=USER)
    assert receipt.memories == 3 and receipt.scope == "memory"
    (row,) = _audit(client, "delete")
    assert sorted(str(i) for i in row.memory_ids) == sorted(doomed)

    receipts = client.get("/ui/receipts")
    assert receipt.request_id[:12] in receipts.text
    download = client.get(f"/ui/receipts/{receipt.request_id}")
    assert download.status_code == 200
    assert "attachment" in download.headers["content-disposition"]
    assert json.loads(download.text)["memories"] == 3
    assert download.headers["content-security-policy"]
    assert on_app(client, store(client).count, user_id=USER) == 1


def test_users_listed_with_counts_and_each_exported(client: TestClient) -> None:
    _add(client, "Maya likes figs")
    on_app(client, store(client).add, "Rui likes tea", user_id="rui", wait=True, infer=False)
    on_app(client, store(client).add, "Rui runs", user_id="rui", wait=True, infer=False)
    page = client.get("/ui/users")
    rows = re.findall(r'<tr class="user-row">(.*?)</tr>', page.text, re.S)
    counts = {re.search(r"user_id=(\w+)", r)[1]: re.findall(r"<td>(\d+)</td>", r) for r in rows}  # type: ignore[index]
    assert counts["rui"][0] == "2" and counts[USER][0] == "1"
    export = client.get("/ui/export?user_id=rui")
    assert export.status_code == 200
    assert 'filename="memvault-export-rui.jsonl"' in export.headers["content-disposition"]
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert sum(1 for line in lines if line.get("content", "").startswith("Rui")) == 2
    assert "Maya" not in export.text
    assert _audit(client, "export")[0].user_id == "rui"


def test_a_fact_retired_and_another_corrected_keep_their_history(client: TestClient) -> None:
    memory = store(client)
    lives = on_app(client, memory.add_fact, "@user", "lives_in", user_id=USER, object="Porto")
    works = on_app(client, memory.add_fact, "@user", "works_for", user_id=USER, object="Feedzai")
    page = client.get(f"/ui/graph?entity={lives.subject_id}")
    assert 'action="/ui/graph/facts/retire"' in page.text
    retired = _post(
        client,
        "/ui/graph/facts/retire",
        page.text,
        fact_id=str(lives.id),
        entity=str(lives.subject_id),
    )
    assert "Retired" in retired.text and f"fact:{lives.id}" in retired.text
    corrected = _post(
        client,
        "/ui/graph/facts/correct",
        page.text,
        fact_id=str(works.id),
        kind="object",
        to="Unbabel",
        entity=str(works.subject_id),
    )
    assert "Corrected to" in corrected.text
    now = on_app(client, memory.facts, user_id=USER)
    assert [f.object for f in now] == ["Unbabel"]
    history = {f.id: f for f in on_app(client, memory.facts, user_id=USER, include_superseded=True)}
    assert history[lives.id].superseded_at is not None
    (new,) = [f for f in history.values() if f.object == "Unbabel"]
    assert history[works.id].superseded_by == new.id
    assert new.valid_from == (works.valid_from or works.recorded_at)
    vias = [a.details.get("via") for a in _audit(client, "update")]
    assert "retire_fact" in vias and "correct_fact" in vias
    # Each answer offers the undo; the correction's undo brings Feedzai back.
    for answer in (retired, corrected):
        assert 'action="/ui/graph/facts/restore"' in answer.text
    undone = _post(
        client,
        "/ui/graph/facts/restore",
        corrected.text,
        fact_id=str(works.id),
        entity=str(works.subject_id),
    )
    assert "holds again" in undone.text
    assert [f.object for f in on_app(client, memory.facts, user_id=USER)] == ["Feedzai"]
    row = next(a for a in _audit(client, "update") if a.details.get("via") == "restore_fact")
    assert row.details["withdrew"] == f"fact:{new.id}"
    # A later fact of the same subject and predicate: the retire's undo is refused, said so.
    on_app(client, memory.add_fact, "@user", "lives_in", user_id=USER, object="Lisbon")
    refused = client.post(
        "/ui/graph/facts/restore",
        data={"csrf": csrf_of(retired.text), "fact_id": str(lives.id)},
    )
    assert refused.status_code == 409
    assert "A newer fact of the same subject and predicate came in" in refused.text
    assert sorted(f.object for f in on_app(client, memory.facts, user_id=USER)) == [
        "Feedzai",
        "Lisbon",
    ]


def test_entities_merged_then_split_from_the_graph_page(client: TestClient) -> None:
    memory = store(client)
    a = on_app(client, memory.add_fact, "Ana", "lives_in", user_id=USER, object="Alfama")
    b = on_app(client, memory.add_fact, "Ana Silva", "works_for", user_id=USER, object="Feedzai")
    page = client.get(f"/ui/graph?entity={b.subject_id}")
    merged = _post(
        client,
        "/ui/graph/entities/merge",
        page.text,
        entity_id=str(b.subject_id),
        into=str(a.subject_id),
    )
    assert "Merged into “Ana”" in merged.text
    row = _audit(client, "merge")[0]
    assert row.details["target"] == f"entity:{b.subject_id}"
    assert row.details["into"] == f"entity:{a.subject_id}"
    assert on_app(client, memory.entity, b.subject_id, user_id=USER).merged_into == a.subject_id
    split = _post(client, "/ui/graph/entities/split", merged.text, entity_id=str(b.subject_id))
    assert "split off again" in split.text
    assert on_app(client, memory.entity, b.subject_id, user_id=USER).merged_into is None


def test_a_conversation_deleted_after_asking(client: TestClient) -> None:
    memory = store(client)
    on_app(
        client,
        memory.add_messages,
        [{"role": "user", "content": "I moved to Lisbon"}],
        user_id=USER,
        conversation_id="move",
        wait=True,
    )
    page = client.get("/ui/conversations/move")
    asked = _post(client, "/ui/conversations/delete", page.text, conversation_id="move")
    assert "Delete this conversation?" in asked.text
    done = _post(
        client, "/ui/conversations/delete", asked.text, conversation_id="move", confirmed="yes"
    )
    assert "Conversation deleted" in done.text and "Receipt" in done.text
    assert client.get("/ui/conversations/move").status_code == 404


def test_a_read_key_sees_no_curation_and_is_refused(secured: TestClient) -> None:
    writer = make_key(secured, "acme", "read,write")
    sign_in(secured, writer)
    page = secured.get("/ui/memories")
    assert "New memory" in page.text
    reader = make_key(secured, "acme", "read")
    sign_in(secured, reader)
    page = secured.get("/ui/memories")
    assert "New memory" not in page.text and "memory_ids" not in page.text
    assert secured.get("/ui/memories/new").status_code == 403
    refused = secured.post(
        "/ui/memories/delete", data={"csrf": csrf_of(page.text), "memory_ids": "x"}
    )
    assert refused.status_code == 403
    # Another tenant's users are not this tenant's.
    other = make_key(secured, "globex", "read,write")
    on_app(secured, store(secured).for_tenant("acme").add, "Acme note", user_id="ann", wait=True)
    sign_in(secured, other)
    assert "ann" not in secured.get("/ui/users").text


def test_the_new_operations_keep_to_the_callers_tenant(secured: TestClient) -> None:
    """Over the API with two tenants' keys: another tenant's users, receipts, memories and
    facts are as unknown as made-up ones."""
    acme = {"Authorization": f"Bearer {make_key(secured, 'acme', 'read,write')}"}
    globex = {"Authorization": f"Bearer {make_key(secured, 'globex', 'read,write')}"}
    ids = [
        secured.post(
            "/v1/memories",
            json={"user_id": "ann", "content": f"Acme plan {i}", "infer": False},
            headers=acme,
        ).json()["id"]
        for i in range(2)
    ]
    fact = secured.post(
        "/v1/facts",
        json={"user_id": "ann", "subject": "Ann", "predicate": "lives_in", "object": "Oslo"},
        headers=acme,
    ).json()
    gone = secured.post(
        "/v1/memories/delete", json={"user_id": "ann", "memory_ids": ids[:1]}, headers=acme
    ).json()
    assert gone["memories"] == 1

    assert secured.get("/v1/users", headers=globex).json() == {"results": []}
    assert secured.get("/v1/deletions", headers=globex).json() == {"results": []}
    request_id = gone["request_id"]
    assert secured.get(f"/v1/deletions/{request_id}", headers=globex).status_code == 404
    refused = secured.post(
        "/v1/memories/delete", json={"user_id": "ann", "memory_ids": ids[1:]}, headers=globex
    )
    assert refused.status_code == 404
    for verb, body in (("retire", {}), ("correct", {"object": "Bergen"})):
        answer = secured.post(
            f"/v1/facts/{fact['id']}/{verb}", json={"user_id": "ann", **body}, headers=globex
        )
        assert answer.status_code == 404, verb
    # Acme's own are all still there.
    (ann,) = secured.get("/v1/users", headers=acme).json()["results"]
    assert (ann["user_id"], ann["memories"], ann["facts"]) == ("ann", 1, 1)
    assert secured.get(f"/v1/deletions/{request_id}", headers=acme).json() == gone


def test_the_debuggers_remember_is_no_access(client: TestClient) -> None:
    memory = store(client)
    on_app(
        client,
        memory.add_messages,
        [{"role": "user", "content": "My sister Ana lives in Alfama"}],
        user_id=USER,
        conversation_id="family",
        wait=True,
    )
    shown = client.get("/ui/recall", params={"q": "where does Ana live", "mode": "remember"})
    assert shown.status_code == 200 and "Alfama" in shown.text
    on_app(client, backend_of(memory).access.flush)
    (turn,) = on_app(client, memory.list, user_id=USER).results
    assert turn.access_count == 0
    # The same call outside the debugger is a use.
    on_app(client, memory.remember, "where does Ana live", user_id=USER)
    on_app(client, backend_of(memory).access.flush)
    assert on_app(client, memory.get, turn.id, user_id=USER).access_count == 1


def test_the_goal_page_and_working_memory_agree(client: TestClient) -> None:
    memory = store(client)
    flights = on_app(client, memory.add_goal, "Book flights", user_id=USER)
    hotel = on_app(
        client, memory.add_goal, "Book a hotel", user_id=USER, blocked_by=[str(flights.id)]
    )
    on_app(client, memory.start_conversation, user_id=USER, conversation_id="trip")
    on_app(client, memory.set_context, "trip", "active_goal", user_id=USER, value="Book a hotel")
    page = client.get("/ui/goals").text
    assert "Blocked by: <bdi>Book flights</bdi>" in page
    assert "Active goal of" in page and "/ui/conversations/trip" in page
    conversation = client.get("/ui/conversations/trip").text
    assert re.search(r"<dt>Active goal</dt><dd><a [^>]*><bdi>Book a hotel</bdi>", conversation)
    assert "<dt>active_goal</dt>" not in conversation  # not a raw row beside it
    on_app(client, memory.complete_goal, flights.id, user_id=USER)
    assert "Blocked by" not in client.get("/ui/goals").text
    assert on_app(client, memory.get_goal, hotel.id, user_id=USER).blocked_by


def test_erasing_a_user_who_holds_nothing_says_so_and_asks_again(client: TestClient) -> None:
    _add(client, "Alice's note")
    page = client.get("/ui/audit")
    asked = _post(client, "/ui/erase", page.text, user_id="alcie", confirm="alcie")
    assert "User <bdi>alcie</bdi> holds nothing" in asked.text
    assert "User alcie erased" not in asked.text
    assert on_app(client, store(client).deletion_receipts, user_id="alcie") == []
    done = _post(client, "/ui/erase", asked.text, user_id="alcie", confirm="alcie", empty_ok="yes")
    assert "User alcie erased" in done.text


def test_a_refused_filter_names_its_field_and_shows_no_rows(client: TestClient) -> None:
    _add(client, "Maya likes figs")
    page = client.get("/ui/memories", params={"min_importance": "abc"})
    assert page.status_code == 422
    assert "min importance" in page.text and "Maya likes figs" not in page.text
    swapped = client.get(
        "/ui/memories", params={"min_importance": "abc"}, headers={"HX-Request": "true"}
    )
    assert swapped.status_code == 200 and 'role="alert"' in swapped.text
