"""A merge of near-duplicates loses nothing: the memory that stays is the earliest, and keeps
every copy's tags and metadata, the earliest dates, every source, the facts derived from each
copy and the history; merging several clusters at once is one receipt."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg

from memvault.config import Settings
from memvault.service import AsyncMemory


async def test_a_merge_keeps_tags_metadata_dates_sources_facts_and_history(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        memory = store.for_tenant("acme")
        original = await memory.add(
            "Maya prefers aisle seats",
            user_id="maya",
            tags=["preferences"],
            metadata={"origin": "seed", "lang": "en"},
            source="import",
        )
        copy = await memory.add(
            "Maya works at Feedzai",  # a copy whose text the graph read a fact from
            user_id="maya",
            tags=["work", "preferences"],
            metadata={"origin": "chat", "channel_hint": "mobile"},
            source="chat",
            occurred_at=datetime(2020, 5, 1, tzinfo=UTC),
        )
        derived = {f.id for f in await memory.facts(user_id="maya") if copy.id in f.memory_ids}
        assert derived
        result = await memory.health_action(
            {"user_id": "maya", "action": "merge", "memory_ids": [str(copy.id), str(original.id)]}
        )
        assert result.changed == 1 and result.receipt is not None

        kept = await memory.get(original.id, user_id="maya")  # the earliest stays
        assert kept.tags == ["preferences", "work"]
        assert kept.metadata == {
            "origin": "seed",
            "lang": "en",
            "channel_hint": "mobile",
            "merged_from": [str(copy.id)],
            "merged_sources": ["chat", "import"],
            "merged_conflicts": {"origin": ["chat"]},
        }
        assert kept.occurred_at == datetime(2020, 5, 1, tzinfo=UTC)
        assert kept.created_at == min(original.created_at, copy.created_at)
        # The copy's fact stands, now read from the memory that stays.
        after = {f.id: f for f in await memory.facts(user_id="maya")}
        assert all(original.id in after[i].memory_ids for i in derived)
        history = await memory.history(original.id, user_id="maya")
        assert [h.action for h in history] == ["ADD", "UPDATE"]
        assert history[-1].new_metadata is not None
        assert history[-1].new_metadata["merged_from"] == [str(copy.id)]
        # The copy's own history is kept (who added and deleted it, and when).
        assert [h.action for h in await memory.history(copy.id, user_id="maya")][-1] == "DELETE"
        (row,) = (await memory.audit_log(operation="merge")).results
        assert row.details["kept"] == [f"memory:{original.id}"]
        assert row.details["request_id"] == result.receipt.request_id


async def test_merge_all_clusters_is_one_receipt(
    make_settings: Callable[..., Settings],
) -> None:
    async with await AsyncMemory.open(make_settings(embedding_provider="hash")) as store:
        memory = store.for_tenant("acme")

        async def twins(text: str, *tags: str) -> list[str]:
            return [
                str((await memory.add(text, user_id="u", infer=False, tags=[t])).id) for t in tags
            ]

        clusters = [
            await twins("Passport expires 2031", "a", "b"),
            await twins("Likes figs", "c", "d", "e"),
        ]
        result = await memory.health_action(
            {"user_id": "u", "action": "merge", "clusters": clusters}
        )
        assert result.changed == 3
        (receipt,) = await memory.deletion_receipts(user_id="u")
        assert receipt.memories == 3 and receipt.request_id == result.receipt.request_id  # type: ignore[union-attr]
        left = (await memory.list(user_id="u")).results
        assert sorted(m.tags for m in left) == [["a", "b"], ["c", "d", "e"]]
        assert await memory.deletion_receipt(receipt.request_id) == receipt
