"""The mem0-compatible API: mem0's quick start runs with only its import changed, each method's
signature matches the installed mem0ai's, and what mem0 has that memvault has not is refused
by name."""

from __future__ import annotations

import hashlib
import inspect
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memvault import AsyncMemory as NativeAsync
from memvault import MemoryClient as NativeClient
from memvault.api import create_app
from memvault.compat import mem0 as compat
from memvault.config import Settings
from tests.serving import serving

mem0 = pytest.importorskip("mem0")

METHODS = ["add", "search", "get", "get_all", "update", "delete", "delete_all", "history", "reset"]


def _shape(function: Any) -> list[tuple[str, Any, bool]]:
    """Names, kinds and whether each parameter has a default (defaults of mem0's own sentinel
    objects cannot be equal across packages, so only their presence is compared)."""
    return [
        (p.name, p.kind, p.default is inspect.Parameter.empty)
        for p in inspect.signature(function).parameters.values()
    ]


def _defaults(function: Any) -> dict[str, Any]:
    return {
        p.name: p.default
        for p in inspect.signature(function).parameters.values()
        if isinstance(p.default, str | int | float | None)
    }


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (compat.Memory, mem0.Memory),
        (compat.AsyncMemory, mem0.AsyncMemory),
        (compat.MemoryClient, mem0.MemoryClient),
    ],
    ids=["Memory", "AsyncMemory", "MemoryClient"],
)
@pytest.mark.parametrize("method", METHODS)
def test_each_method_has_mem0s_signature(ours: type, theirs: type, method: str) -> None:
    mine, reference = getattr(ours, method), getattr(theirs, method)
    assert _shape(mine) == _shape(reference)
    assert _defaults(mine) == _defaults(reference)
    assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(reference)


# mem0's open-source quick start (docs.mem0.ai/open-source/python-quickstart), as documented;
# the test changes nothing in it but the import line. Ids are taken from answers where the
# page writes a literal id from its own run.
QUICK_START = """
from mem0 import Memory

m = Memory()

messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."},
]
result = m.add(messages, user_id="alice", metadata={"category": "movies"})

related_memories = m.search(query="What do you know about me?", filters={"user_id": "alice"})
all_memories = m.get_all(filters={"user_id": "alice"})
memory_id = all_memories["results"][0]["id"]
specific_memory = m.get(memory_id)
m.update(memory_id=memory_id, data="I love India, it is my favorite country.")
updated = m.get(memory_id)
history = m.history(memory_id=memory_id)
m.delete(memory_id=memory_id)
after_delete = m.get(memory_id)
m.delete_all(user_id="alice")
left = m.get_all(filters={"user_id": "alice"})
"""  # noqa: E501 - mem0's text as written


def test_mem0_quick_start_runs_with_only_the_import_changed(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(embedding_provider="hash")
    for name in ("database_url", "encryption_key", "data_dir", "embedding_provider"):
        value = getattr(settings, name)
        value = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        monkeypatch.setenv(f"MEMVAULT_{name.upper()}", str(value))
    script = QUICK_START.replace(
        "from mem0 import Memory", "from memvault.compat.mem0 import Memory"
    )
    assert script.count("\n") == QUICK_START.count("\n")
    scope: dict[str, Any] = {}
    exec(compile(script, "quickstart.py", "exec"), scope)
    try:
        added = scope["result"]["results"]
        assert {r["event"] for r in added} == {"ADD"}
        assert "I love sci-fi movies" in " ".join(r["memory"] for r in added)
        assert scope["related_memories"]["results"]
        found = scope["all_memories"]["results"]
        assert all(m["user_id"] == "alice" for m in found)
        assert all(m["metadata"]["category"] == "movies" for m in found)
        assert scope["specific_memory"]["id"] == scope["memory_id"]
        assert scope["updated"]["memory"] == "I love India, it is my favorite country."
        events = [(h["event"], h["new_memory"]) for h in scope["history"]]
        assert events[0][0] == "ADD"
        assert events[-1] == ("UPDATE", "I love India, it is my favorite country.")
        assert scope["after_delete"] is None
        assert scope["left"] == {"results": []}
    finally:
        scope["m"].close()


async def test_async_api_scopes_by_agent_and_run(make_settings: Callable[..., Settings]) -> None:
    native = await NativeAsync.open(make_settings(embedding_provider="hash"))
    try:
        m = compat.AsyncMemory(native)
        await m.add("I prefer window seats", user_id="u", agent_id="travel", infer=False)
        await m.add("I take my coffee black", user_id="u", agent_id="cafe", infer=False)
        await m.add("Likes green tea", agent_id="cafe", run_id="r1", infer=False)
        travel = await m.get_all(filters={"user_id": "u", "agent_id": "travel"})
        assert [r["memory"] for r in travel["results"]] == ["I prefer window seats"]
        assert travel["results"][0]["agent_id"] == "travel"
        # As in mem0, entity ids are fields of one store: the agent's filter finds what it
        # was given with a user too.
        only_agent = await m.get_all(filters={"agent_id": "cafe"})
        assert sorted(r["memory"] for r in only_agent["results"]) == [
            "I take my coffee black",
            "Likes green tea",
        ]
        hits = await m.search("coffee", filters={"user_id": "u"}, threshold=0.0)
        assert hits["results"][0]["memory"] == "I take my coffee black"
        assert isinstance(hits["results"][0]["score"], float)
        await m.delete_all(user_id="u", agent_id="cafe")
        left = await m.get_all(filters={"user_id": "u"})
        assert [r["memory"] for r in left["results"]] == ["I prefer window seats"]
        await m.delete_all(agent_id="cafe")
        assert await m.get_all(filters={"run_id": "r1"}) == {"results": []}
    finally:
        await native.close()


async def test_what_memvault_lacks_is_refused_by_name(
    make_settings: Callable[..., Settings],
) -> None:
    native = await NativeAsync.open(make_settings(embedding_provider="hash"))
    try:
        m = compat.AsyncMemory(native)
        with pytest.raises(compat.NotSupported, match="procedural"):
            await m.add("x", user_id="u", memory_type="procedural_memory")
        with pytest.raises(compat.NotSupported, match="rerank"):
            await m.search("x", filters={"user_id": "u"}, rerank=True)
        with pytest.raises(ValueError, match="Unsupported metadata filter operator: between"):
            await m.search("x", filters={"user_id": "u", "score": {"between": [1, 3]}})
        with pytest.raises(ValueError, match="filters="):
            await m.search("x", user_id="u")
        with pytest.raises(ValueError, match="user_id"):
            await m.add("x")
        assert await m.get_all(filters={"user_id": "u"}) == {"results": []}
    finally:
        await native.close()


def test_the_client_takes_mem0s_v3_forms_over_http(make_settings: Callable[..., Settings]) -> None:
    with (
        serving(create_app(make_settings(embedding_provider="hash"))) as url,
        NativeClient(url) as client,
    ):
        m = compat.MemoryClient.over(client)
        shop = {"user_id": "ann", "app_id": "shop"}
        first = m.add("I wear size 38 shoes", filters=shop, metadata={"k": 1}, infer=False)
        m.add({"role": "user", "content": "I return parcels on Fridays"}, filters=shop, infer=False)
        m.add("I like jazz", user_id="ann", agent_id="dj", infer=False)  # the older form
        memory_id = first["results"][0]["id"]
        assert str(uuid.UUID(memory_id)) == memory_id
        assert m.get(memory_id)["app_id"] == "shop"
        page = m.get_all(filters={"app_id": "shop"}, page=1, page_size=1)
        assert (page["count"], len(page["results"]), page["previous"]) == (2, 1, None)
        assert page["next"] is not None
        last = m.get_all({"filters": {"app_id": "shop"}, "page": 2, "page_size": 1})
        assert last["next"] is None and last["previous"] is not None
        assert {r["memory"] for r in page["results"] + last["results"]} == {
            "I wear size 38 shoes",
            "I return parcels on Fridays",
        }
        hits = m.search("shoes", filters={"AND": [shop], "user_id": "ann"}, threshold=0.0)
        assert memory_id in [h["id"] for h in hits["results"]]
        with pytest.raises(ValueError, match="given twice"):
            m.add("x", filters={"user_id": "ann"}, user_id="bob")
        with pytest.raises(ValueError, match="Top-level entity"):
            m.search("x", user_id="ann")
        with pytest.raises(compat.NotSupported, match="custom_categories"):
            m.add("x", filters=shop, custom_categories=[{"a": "b"}])
        assert m.delete_all(filters={"app_id": "shop"}) == {
            "message": "Memories deleted successfully!"
        }
        assert m.get_all(filters={"user_id": "ann"})["count"] == 1
        assert m.reset()["message"].startswith("Client reset successful")
        assert m.get_all(filters={"user_id": "ann"})["results"] == []
        with pytest.raises(KeyError):
            m.get(memory_id)


async def test_a_memory_id_is_a_plain_uuid_and_owner_scopes_the_api(
    make_settings: Callable[..., Settings],
) -> None:
    native = await NativeAsync.open(make_settings(embedding_provider="hash"))
    try:
        mine = compat.AsyncMemory(native, owner="team-a")
        other = compat.AsyncMemory(native, owner="team-b")
        added = await mine.add("Standup is at nine", user_id="u", infer=False)
        memory_id = added["results"][0]["id"]
        assert str(uuid.UUID(memory_id)) == memory_id
        assert (await mine.get(memory_id))["memory"] == "Standup is at nine"
        # Another owner is another store: it neither sees nor deletes this one.
        assert await other.get(memory_id) is None
        await other.reset()
        assert (await mine.get(memory_id))["hash"] == hashlib.md5(b"Standup is at nine").hexdigest()
        record = await native.get(memory_id, user_id="team-a")
        assert record.metadata == {"mem0": {"user_id": "u", "role": "user"}}
        assert record.app_id == "user_id=u"
    finally:
        await native.close()


async def test_an_old_form_id_still_reads_updates_and_deletes_its_memory(
    make_settings: Callable[..., Settings],
) -> None:
    # Before ids were plain UUIDs this API stored a memory under the memvault user its entity
    # id named and gave out "<uuid>:<owner>"; such a memory, as that API wrote it:
    native = await NativeAsync.open(make_settings(embedding_provider="hash"))
    try:
        old = await native.add(
            "Prefers aisle seats",
            user_id="alice",
            metadata={"mem0": {"user_id": "alice"}, "role": "user"},
            infer=False,
        )
        kept = f"{old.id}:alice"
        m = compat.AsyncMemory(native)
        got = await m.get(kept)
        assert got is not None
        assert (got["id"], got["memory"], got["user_id"]) == (
            str(old.id),
            "Prefers aisle seats",
            "alice",
        )
        assert await m.update(kept, "Prefers window seats") == {
            "message": "Memory updated successfully!"
        }
        assert (await m.get(kept))["memory"] == "Prefers window seats"
        assert [e["event"] for e in await m.history(kept)] == ["ADD", "UPDATE"]
        await m.delete(kept)
        assert await m.get(kept) is None
        with pytest.raises(ValueError, match="not found"):
            await m.delete(kept)

        # An old-form id reaches only what that API stored: not a user's own memories, nor
        # another owner's (their owner names no entity id of theirs).
        own = await native.add("Bob's own note", user_id="bob", infer=False)
        assert await m.get(f"{own.id}:bob") is None
        assert await m.history(f"{own.id}:bob") == []
        team = compat.AsyncMemory(native, owner="team-a")
        added = (await team.add("Standup is at nine", user_id="u", infer=False))["results"][0]
        assert await m.get(f"{added['id']}:team-a") is None
        with pytest.raises(ValueError, match="not found"):
            await m.update(f"{added['id']}:team-a", "changed")
        assert (await team.get(added["id"]))["memory"] == "Standup is at nine"
        # And a plain id gets nothing from an old-form memory's user: it names no user.
        assert await m.get(str(own.id)) is None
    finally:
        await native.close()
