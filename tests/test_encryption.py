"""Encryption at rest: no plaintext in the database, tamper detection, key checks, rotation."""

from __future__ import annotations

import asyncio
import base64
import functools
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import AsyncMemory, ConfigurationError, KeyMismatch, Settings
from memvault.admin import AsyncAdmin
from memvault.crypto.envelope import Keyring, associated_data, generate_key, parse_key
from tests.conftest import backend_of

SECRET = "the launch code is purple-elephant-42"


async def test_database_holds_no_plaintext(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    added = await memory.add(SECRET, user_id="u")
    await memory.update(added.id, user_id="u", content=SECRET + " (updated)")
    await memory.delete(added.id, user_id="u")
    for table in ("memories", "memory_history", "encryption_keys"):
        dump = raw.execute(f"SELECT coalesce(string_agg(t::text, ''), '') FROM {table} t")
        text = dump.fetchone()[0]  # type: ignore[index]
        assert "purple-elephant" not in text
        assert b"purple-elephant".hex() not in text
    assert raw.execute("SELECT count(*) FROM memory_history").fetchone() == (3,)


async def test_a_ciphertext_moved_to_another_row_does_not_open(
    memory: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    victim = await memory.add(SECRET, user_id="victim")
    attacker = await memory.add("harmless", user_id="attacker")
    raw.execute(
        "UPDATE memories SET ciphertext = v.ciphertext, nonce = v.nonce "
        "FROM memories v WHERE v.id = %s AND memories.id = %s",
        (victim.id, attacker.id),
    )
    with pytest.raises(KeyMismatch):
        await memory.get(attacker.id, user_id="attacker")


@given(text=st.text(max_size=500), tenant=st.text(max_size=20), row=st.uuids())
def test_sealing_round_trips_and_binds_to_its_row(text: str, tenant: str, row: Any) -> None:
    keyring = Keyring(parse_key(generate_key()))
    aad = associated_data(tenant, str(row))
    sealed = keyring.seal(text, aad)
    assert keyring.open(sealed, aad) == text
    with pytest.raises(KeyMismatch):
        keyring.open(sealed, associated_data(tenant + "x", str(row)))


@pytest.mark.parametrize("bad", ["not base64!", base64.b64encode(b"short").decode()])
def test_malformed_keys_are_refused_with_a_clear_message(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="memvault keys generate"):
        parse_key(bad)


async def test_wrong_key_fails_at_start_up(make_settings: Callable[..., Settings]) -> None:
    first = await AsyncMemory.open(make_settings())
    await first.add(SECRET, user_id="u")
    await first.close()
    with pytest.raises(KeyMismatch, match="MEMVAULT_ENCRYPTION_KEY"):
        await AsyncMemory.open(make_settings(encryption_key=generate_key()))


async def test_served_mode_needs_a_key(make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(ConfigurationError, match="MEMVAULT_ENCRYPTION_KEY is required"):
        await AsyncMemory.open(make_settings(encryption_key=None))


async def test_rotation_under_concurrent_writes_loses_no_row(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    old_key, new_key = generate_key(), generate_key()
    # Hash vectors: what is under test is the keys the rows are sealed with, not their meaning.
    hashed = functools.partial(make_settings, embedding_provider="hash")
    before = await AsyncMemory.open(hashed(encryption_key=old_key))
    # Stored as batches: what is under test is the rotation of these rows, not 300 round trips.
    for start in range(0, 300, 100):
        await before.add_many(
            [
                {"content": f"before rotation {i}", "user_id": f"user{i % 7}", "infer": False}
                for i in range(start, start + 100)
            ]
        )
    await before.close()

    # The operator makes the new key active everywhere, the old one still readable ...
    during = await AsyncMemory.open(hashed(encryption_key=new_key, encryption_old_keys=old_key))
    acknowledged: list[Any] = []
    stop, writing = asyncio.Event(), asyncio.Event()

    async def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            record = await during.add(
                f"written during rotation {n}-{i}", user_id=f"w{n}", infer=False
            )
            acknowledged.append((record.id, record.user_id, record.content))
            writing.set()
            i += 1

    writers = [asyncio.create_task(writer(n)) for n in range(4)]
    await asyncio.wait_for(writing.wait(), 30)  # rotation starts with writers under way
    report = await AsyncAdmin.of(during).rotate_encryption_key()
    stop.set()
    await asyncio.gather(*writers)
    await during.close()
    assert report.memories_reencrypted >= 300
    assert report.retired_key_ids

    # ... and after the rotation the old key is no longer needed at all.
    after = await AsyncMemory.open(hashed(encryption_key=new_key))
    for rid, user, content in acknowledged:
        assert (await after.get(rid, user_id=user)).content == content
    for i in range(7):
        page = await after.list(user_id=f"user{i}", limit=100)
        assert len(page.results) == len(range(i, 300, 7))
    keys = {row[0] for row in raw.execute("SELECT DISTINCT key_id FROM memories")}
    assert keys == {backend_of(after).keys.current().active.key_id}
    await after.close()
