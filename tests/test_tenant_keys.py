"""Per-tenant data keys and crypto-shredding (``per_tenant_keys``), on the real store."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from memvault import AsyncMemory, ConfigurationError, KeyMismatch, Settings
from memvault.admin import AsyncAdmin
from memvault.api.app import create_app
from memvault.cli import app
from memvault.crypto.envelope import (
    Keyring,
    Sealed,
    associated_data,
    generate_key,
    new_tenant_key,
    parse_key,
    unwrap_tenant_key,
    wrap_tenant_key,
)
from memvault.errors import Conflict
from memvault.keys.sealing import open_content
from tests.conftest import KEY, backend_of

SECRET = "the vault code is 7-indigo-otter"


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(make_settings(per_tenant_keys=True, embedding_provider="hash"))
    yield opened
    await opened.close()


def tenant_key_id(raw: psycopg.Connection[Any], tenant: str) -> str | None:
    row = raw.execute("SELECT key_id FROM tenant_keys WHERE tenant_id = %s", (tenant,)).fetchone()
    return None if row is None else str(row[0])


def sealed_row(raw: psycopg.Connection[Any], memory_id: Any) -> tuple[bytes, bytes, str]:
    row = raw.execute(
        "SELECT ciphertext, nonce, key_id FROM memories WHERE id = %s", (memory_id,)
    ).fetchone()
    assert row is not None
    return bytes(row[0]), bytes(row[1]), str(row[2])


async def test_everything_of_a_tenant_round_trips_under_its_own_key(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    acme = store.for_tenant("acme")
    added = await acme.add(SECRET, user_id="u", infer=False, wait=True)
    await acme.add_fact("Caroline", "lives_in", object="Lisbon", user_id="u")
    await acme.set_context("c1", "city", {"name": "Porto"}, user_id="u")

    assert (await acme.get(added.id, user_id="u")).content == SECRET
    found = await acme.search("indigo otter", user_id="u")
    assert [h.id for h in found.results][:1] == [added.id]
    assert found.results[0].content == SECRET
    facts = await acme.facts(user_id="u", entity="Caroline")
    assert [f.object for f in facts] == ["Lisbon"]
    assert await acme.get_context_value("c1", "city", user_id="u") == {"name": "Porto"}

    key_id = tenant_key_id(raw, "acme")
    master = backend_of(store).keys.current().active.key_id
    assert key_id is not None and key_id != master
    assert sealed_row(raw, added.id)[2] == key_id
    for table in ("facts", "entities"):
        ids = {r[0] for r in raw.execute(f"SELECT DISTINCT key_id FROM {table}")}
        assert ids == {key_id}, table
    wrapped_under = raw.execute("SELECT master_key_id FROM tenant_keys").fetchall()
    assert wrapped_under == [(master,)]


async def test_two_tenants_seal_apart_and_a_moved_row_does_not_open(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    acme, globex = store.for_tenant("acme"), store.for_tenant("globex")
    a = await acme.add(SECRET, user_id="u", infer=False)
    g = await globex.add(SECRET, user_id="u", infer=False)
    assert tenant_key_id(raw, "acme") != tenant_key_id(raw, "globex")
    rows = raw.execute(
        "SELECT tenant_id, ciphertext, key_id, content_hash FROM memories ORDER BY tenant_id"
    ).fetchall()
    assert len({r[1] for r in rows}) == 2  # ciphertexts
    assert len({r[2] for r in rows}) == 2  # key ids
    assert len({r[3] for r in rows}) == 2  # keyed content hashes

    # acme's row, copied into globex's (key id included), is not globex's to open.
    raw.execute(
        "UPDATE memories SET ciphertext = a.ciphertext, nonce = a.nonce, key_id = a.key_id "
        "FROM memories a WHERE a.id = %s AND memories.id = %s",
        (a.id, g.id),
    )
    with pytest.raises(KeyMismatch, match="does not hold"):
        await globex.get(g.id, user_id="u")
    assert (await acme.get(a.id, user_id="u")).content == SECRET


async def test_rotation_rewraps_tenant_keys_and_moves_rows_from_before_they_were_on(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    old, new = generate_key(), generate_key()
    # Written before per-tenant keys were switched on: sealed under the master key.
    legacy = await AsyncMemory.open(make_settings(encryption_key=old, embedding_provider="hash"))
    before = await legacy.for_tenant("acme").add("written before the switch", user_id="u")
    await legacy.close()

    during = await AsyncMemory.open(
        make_settings(
            encryption_key=new,
            encryption_old_keys=old,
            per_tenant_keys=True,
            embedding_provider="hash",
        )
    )
    acme, globex = during.for_tenant("acme"), during.for_tenant("globex")
    assert (await acme.get(before.id, user_id="u")).content == "written before the switch"
    a = await acme.add(SECRET, user_id="u", infer=False)
    g = await globex.add("globex's own", user_id="u", infer=False)
    key_ids = {t: tenant_key_id(raw, t) for t in ("acme", "globex")}
    # The tenant keys were made under the new master already; wrap one under the old master,
    # as a store that ran per-tenant keys before this rotation would have it.
    old_master = Keyring(parse_key(old))
    acme_key = unwrap_tenant_key(
        backend_of(during).keys.current(),
        "acme",
        Sealed(
            *raw.execute(
                "SELECT wrapped, nonce, master_key_id FROM tenant_keys WHERE tenant_id = 'acme'"
            ).fetchone()  # type: ignore[misc]
        ),
    )
    under_old = wrap_tenant_key(old_master, "acme", acme_key)
    raw.execute(
        "UPDATE tenant_keys SET wrapped = %s, nonce = %s, master_key_id = %s "
        "WHERE tenant_id = 'acme'",
        (under_old.ciphertext, under_old.nonce, under_old.key_id),
    )

    report = await AsyncAdmin.of(during).rotate_encryption_key(reload_grace_s=0)
    await during.close()
    assert report.tenant_keys_rewrapped == 1
    assert report.memories_reencrypted == 1  # only the row from before the switch moved
    assert report.retired_key_ids == [old_master.active.key_id]

    # The old master key is gone; the tenant keys, the same ones, open everything.
    after = await AsyncMemory.open(
        make_settings(encryption_key=new, per_tenant_keys=True, embedding_provider="hash")
    )
    acme, globex = after.for_tenant("acme"), after.for_tenant("globex")
    assert (await acme.get(before.id, user_id="u")).content == "written before the switch"
    assert (await acme.get(a.id, user_id="u")).content == SECRET
    assert (await globex.get(g.id, user_id="u")).content == "globex's own"
    assert {t: tenant_key_id(raw, t) for t in ("acme", "globex")} == key_ids
    assert sealed_row(raw, before.id)[2] == key_ids["acme"]
    masters = {r[0] for r in raw.execute("SELECT DISTINCT master_key_id FROM tenant_keys")}
    assert masters == {backend_of(after).keys.current().active.key_id}
    await after.close()


async def test_shredding_leaves_surviving_ciphertext_unreadable(
    store: AsyncMemory, raw: psycopg.Connection[Any]
) -> None:
    acme, globex = store.for_tenant("acme"), store.for_tenant("globex")
    doomed = await acme.add(SECRET, user_id="u", infer=False)
    kept = await globex.add("globex keeps this", user_id="u", infer=False)
    # A copy taken before shredding (as a replica or a backup would hold it).
    ciphertext, nonce, old_key = sealed_row(raw, doomed.id)

    receipt = await AsyncAdmin.of(store).shred_tenant("acme", actor="ops")

    assert receipt.key_destroyed == old_key
    assert receipt.counts["tenant_key"] == 1 and receipt.memories == 1
    assert tenant_key_id(raw, "acme") is None
    assert raw.execute("SELECT count(*) FROM memories WHERE tenant_id = 'acme'").fetchone() == (0,)
    audited = raw.execute(
        "SELECT details->'receipt'->>'key_destroyed' FROM audit_log "
        "WHERE tenant_id = 'acme' AND operation = 'delete'"
    ).fetchall()
    assert audited == [(old_key,)]
    assert (await globex.get(kept.id, user_id="u")).content == "globex keeps this"

    # The tenant writes again: a new key, which does not open what was sealed before.
    await acme.add("a fresh start", user_id="u", infer=False)
    new_key = tenant_key_id(raw, "acme")
    assert new_key is not None and new_key != old_key
    with pytest.raises(KeyMismatch, match="destroyed"):
        open_content(backend_of(store).keys, "acme", doomed.id, ciphertext, nonce, old_key)


async def test_a_shred_in_another_process_takes_effect_there(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any], monkeypatch: Any
) -> None:
    settings = make_settings(per_tenant_keys=True, embedding_provider="hash")
    here, there = await AsyncMemory.open(settings), await AsyncMemory.open(settings)
    try:
        await there.for_tenant("acme").add(SECRET, user_id="u", infer=False)
        old_key = tenant_key_id(raw, "acme")
        await AsyncAdmin.of(here).shred_tenant("acme")

        from memvault.keys import data_keys

        monkeypatch.setattr(data_keys, "RECHECK_S", 0.0)  # the few seconds have passed
        added = await there.for_tenant("acme").add("after the shred", user_id="u", infer=False)
        assert sealed_row(raw, added.id)[2] == tenant_key_id(raw, "acme") != old_key
    finally:
        await here.close()
        await there.close()


async def test_shredding_is_refused_without_per_tenant_keys(
    make_settings: Callable[..., Settings], raw: psycopg.Connection[Any]
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    added = await memory.add(SECRET, user_id="u", infer=False)
    with pytest.raises(Conflict, match="MEMVAULT_PER_TENANT_KEYS"):
        await AsyncAdmin.of(memory).shred_tenant("default")
    assert (await memory.get(added.id, user_id="u")).content == SECRET
    assert raw.execute("SELECT count(*) FROM tenant_keys").fetchone() == (0,)
    await memory.close()

    with TestClient(create_app(make_settings(embedding_provider="hash"))) as api:
        answer = api.post("/v1/admin/tenant/shred")
        assert answer.status_code == 409
        assert answer.json()["error"]["code"] == "conflict"


async def test_a_process_without_the_setting_refuses_a_store_with_tenant_keys(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(per_tenant_keys=True, embedding_provider="hash"))
    await memory.add(SECRET, user_id="u", infer=False)
    await memory.close()
    with pytest.raises(ConfigurationError, match="MEMVAULT_PER_TENANT_KEYS=true"):
        await AsyncMemory.open(make_settings(embedding_provider="hash"))


@given(
    text=st.text(max_size=200),
    tenants=st.lists(st.text(max_size=12), min_size=2, max_size=2, unique=True),
    row=st.uuids(),
)
def test_a_tenant_keyring_never_opens_another_tenants_text(
    text: str, tenants: list[str], row: Any
) -> None:
    master = Keyring(parse_key(generate_key()))
    mine, theirs = (master.under(new_tenant_key()) for _ in tenants)
    for aad in (associated_data(tenants[0], str(row)), associated_data(tenants[1], str(row))):
        sealed = mine.seal(text, aad)
        assert mine.open(sealed, aad) == text
        with pytest.raises(KeyMismatch):
            theirs.open(sealed, aad)
    # A wrapped data key is bound to its tenant too.
    key = new_tenant_key()
    wrapped = wrap_tenant_key(master, tenants[0], key)
    assert unwrap_tenant_key(master, tenants[0], wrapped).key_id == key.key_id
    with pytest.raises(KeyMismatch):
        unwrap_tenant_key(master, tenants[1], wrapped)


def test_the_cli_shreds_only_with_per_tenant_keys(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("MEMVAULT_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMVAULT_ENCRYPTION_KEY", KEY)
    monkeypatch.setenv("MEMVAULT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    refused = CliRunner().invoke(app, ["erase-tenant", "acme", "--shred", "--yes"])
    assert refused.exit_code == 1
    assert "MEMVAULT_PER_TENANT_KEYS" in refused.output

    monkeypatch.setenv("MEMVAULT_PER_TENANT_KEYS", "true")
    added = CliRunner().invoke(app, ["add", SECRET, "-u", "u"])
    assert added.exit_code == 0, added.output
    shredded = CliRunner().invoke(app, ["erase-tenant", "default", "--shred", "--yes"])
    assert shredded.exit_code == 0, shredded.output
    receipt = json.loads(shredded.stdout)
    assert receipt["key_destroyed"] and receipt["counts"]["tenant_key"] == 1
