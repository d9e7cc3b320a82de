"""Every sealed column in the store: the table, its ciphertext, nonce and key id columns, what
a row's sealed values are bound to (their associated data) and what else moves with the text
when key rotation re-seals it (keyed hashes, blind keyword postings).

This is declared data, read by key rotation through the one claim and re-seal below, and by
the schema test that fails when a table with a sealed column is missing here: a new sealed
table is not left under a key that rotation then forgets. The associated data of each kind of
row is defined here once; the code that seals and opens those rows uses the same functions.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

import sqlalchemy as sa

from memvault.crypto.envelope import Keyring, KeyringSource, Sealed, associated_data
from memvault.db import graph, keywords
from memvault.db.keysets import StaleKeys
from memvault.db.tables import (
    audit_log,
    conversations,
    entities,
    facts,
    goals,
    idempotent_writes,
    memories,
    memory_history,
    merge_undos,
    relations,
    strategies,
    tool_invocations,
    user_profiles,
    webhook_subscriptions,
    working_memory,
)
from memvault.language.keyed import SELF, entity_terms, name_key, self_key, text_terms, value_key
from memvault.language.terms import blind_terms
from memvault.outbound import secret_aad

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

# --- what each kind of row is bound to ---------------------------------------------------------


def memory_aad(tenant_id: str, memory_id: UUID) -> bytes:
    """A memory's content (and its history's copies of it): its tenant and its id."""
    return associated_data(tenant_id, str(memory_id))


def graph_aad(tenant_id: str, row_id: UUID, column: str) -> bytes:
    """A graph row's sealed column: its tenant, its row and the column, so a value copied to
    another column of the same row does not open either."""
    return associated_data(tenant_id, str(row_id), column)


def audit_query_aad(tenant_id: str, audit_id: UUID) -> bytes:
    """The verbose audit level's query text: its tenant and its audit row."""
    return associated_data(tenant_id, f"audit:{audit_id}")


def payload_aad(table: str, *key: object) -> bytes:
    """A cognitive row's payload: its table and its key, so a payload copied to another row
    (or tenant) does not open."""
    return associated_data(table, *(str(part) for part in key))


# --- the registry ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SealedValue:
    """One sealed value of a row: its three columns and its name (what a graph column's
    associated data names, and what the after-reseal step finds its opened text under)."""

    name: str
    ciphertext: str
    nonce: str
    key_id: str


Columns = Mapping[str, Any]


@dataclass
class Resealed:
    """A claimed row being re-sealed: its columns as read, the keyring it is sealed with now,
    its opened texts by value name and the column values its update will set."""

    columns: Columns
    keyring: Keyring
    opened: dict[str, str]
    values: dict[str, Any]


# An after-reseal step: given a batch of re-sealed rows, it writes what is derived from their
# texts elsewhere (postings, a tenant's at a time) and adds each row's derived column values.
AfterReseal = Callable[["AsyncConnection", Sequence[Resealed]], Awaitable[None]]


@dataclass(frozen=True)
class SealedTable:
    """A table's sealed values, what each row's are bound to (``bound_to``: the row's columns
    and the value), and what is remade from the texts when they move to a new key (``after``).
    """

    table: sa.Table
    values: tuple[SealedValue, ...]
    bound_to: Callable[[Columns, SealedValue], bytes]
    after: AfterReseal | None = None
    # Sealed under the master key whatever the tenant's keys (what must open after the
    # tenant's data key is shredded): only an old master key makes it stale.
    under_master: bool = False

    @property
    def name(self) -> str:
        return self.table.name

    def key_columns(self) -> list[sa.Column[Any]]:
        return [self.table.c[k] for k in dict.fromkeys(v.key_id for v in self.values)]

    def keyring(self, keys: KeyringSource, tenant_id: str) -> Keyring:
        """What a row of this table is sealed with: its tenant's keys, or the master key."""
        return keys.current() if self.under_master else keys.current(tenant_id)

    def stale(self, stale: StaleKeys) -> StaleKeys:
        return StaleKeys(stale.active) if self.under_master else stale

    def where_stale(self, stale: StaleKeys) -> sa.ColumnElement[bool]:
        held = self.stale(stale)
        return sa.or_(*(held.where(c) for c in self.key_columns()))


def _one(name: str = "content", prefix: str = "") -> tuple[SealedValue, ...]:
    return (SealedValue(name, f"{prefix}ciphertext", f"{prefix}nonce", f"{prefix}key_id"),)


def _graph(*names: str) -> tuple[SealedValue, ...]:
    return tuple(SealedValue(n, f"{n}_ciphertext", f"{n}_nonce", "key_id") for n in names)


def _payload_of(table: sa.Table, *key: str) -> Callable[[Columns, SealedValue], bytes]:
    """A cognitive payload bound to ``key`` (default: the table's primary key)."""
    columns = key or tuple(c.name for c in table.primary_key.columns)
    return lambda row, _: payload_aad(table.name, *(row[c] for c in columns))


def _by_tenant(rows: Sequence[Resealed]) -> dict[str, list[Resealed]]:
    tenants: dict[str, list[Resealed]] = {}
    for row in rows:
        tenants.setdefault(row.columns["tenant_id"], []).append(row)
    return tenants


async def _memory_postings(conn: AsyncConnection, rows: Sequence[Resealed]) -> None:
    """The blind index is keyed too: a memory's terms and hash move to the new key with it."""
    for tenant_id, held in _by_tenant(rows).items():
        postings = {}
        for row in held:
            text = row.opened["content"]
            row.values["content_hash"] = row.keyring.content_hash(text)
            postings[row.columns["id"]] = (row.columns["user_id"], *blind_terms(row.keyring, text))
        await keywords.replace_terms(conn, tenant_id, postings)


async def _entity_keys(conn: AsyncConnection, rows: Sequence[Resealed]) -> None:
    """An entity's name and alias hashes and its blind terms, remade under the new key."""
    for tenant_id, held in _by_tenant(rows).items():
        postings = {}
        for row in held:
            keyring, columns = row.keyring, row.columns
            name = row.opened.get("name", "")
            aliases: list[str] = json.loads(row.opened.get("aliases") or "[]")
            own = name == SELF or bool((columns["properties"] or {}).get("self"))
            row.values["name_key"] = self_key(keyring) if own else name_key(keyring, name)
            row.values["alias_keys"] = sorted({name_key(keyring, a) for a in aliases})
            terms = entity_terms(keyring, name, aliases)
            postings[columns["id"]] = (columns["user_id"], terms)
        await graph.replace_terms(conn, tenant_id, "entity", postings)


async def _fact_keys(conn: AsyncConnection, rows: Sequence[Resealed]) -> None:
    """A fact's value hash and its claim's blind terms, remade under the new key."""
    for tenant_id, held in _by_tenant(rows).items():
        postings = {}
        for row in held:
            if "value" in row.opened:
                row.values["value_key"] = value_key(row.keyring, row.opened["value"])
            terms = text_terms(row.keyring, row.opened["claim"])
            postings[row.columns["id"]] = (row.columns["user_id"], terms)
        await graph.replace_terms(conn, tenant_id, "fact", postings)


SEALED: tuple[SealedTable, ...] = (
    SealedTable(
        memories, _one(), lambda r, _: memory_aad(r["tenant_id"], r["id"]), _memory_postings
    ),
    SealedTable(
        memory_history,
        (*_one("old", "old_"), *_one("new", "new_")),
        lambda r, _: memory_aad(r["tenant_id"], r["memory_id"]),
    ),
    SealedTable(
        audit_log, _one("query", "query_"), lambda r, _: audit_query_aad(r["tenant_id"], r["id"])
    ),
    # Bound to (tenant, id) since before conversation ids were per user (the key took the
    # user later).
    SealedTable(conversations, _one(), _payload_of(conversations, "tenant_id", "id")),
    SealedTable(working_memory, _one(), _payload_of(working_memory)),
    SealedTable(tool_invocations, _one(), _payload_of(tool_invocations)),
    SealedTable(strategies, _one(), _payload_of(strategies)),
    SealedTable(goals, _one(), _payload_of(goals)),
    SealedTable(user_profiles, _one(), _payload_of(user_profiles)),
    # A merge's undo record: every copy it erased, until it expires or is undone.
    SealedTable(merge_undos, _one(), _payload_of(merge_undos)),
    # The kept answer of a write sent with an Idempotency-Key (none while it runs).
    SealedTable(idempotent_writes, _one(), _payload_of(idempotent_writes)),
    SealedTable(
        entities,
        _graph("name", "aliases", "description"),
        lambda r, v: graph_aad(r["tenant_id"], r["id"], v.name),
        _entity_keys,
    ),
    SealedTable(
        facts,
        _graph("claim", "value"),
        lambda r, v: graph_aad(r["tenant_id"], r["id"], v.name),
        _fact_keys,
    ),
    SealedTable(
        relations, _graph("properties"), lambda r, v: graph_aad(r["tenant_id"], r["id"], v.name)
    ),
    SealedTable(
        webhook_subscriptions,
        _one("secret", "secret_"),
        lambda r, _: secret_aad(r["tenant_id"], r["id"]),
        under_master=True,
    ),
)

# Tables with a key id or sealed bytes that rotation does not re-seal, and why.
NOT_RESEALED = {
    "tenant_keys": "a tenant's data key: re-wrapped under the new master key, not re-sealed",
    "encryption_keys": "the ids of the keys themselves: what rotation registers and retires",
}


# --- the one claim and re-seal -------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimedRow:
    """A row still sealed under a stale key, every column of it, claimed for re-sealing."""

    tenant_id: str
    columns: Columns


async def claim(
    conn: AsyncConnection, entry: SealedTable, stale: StaleKeys, batch: int
) -> list[ClaimedRow]:
    """Up to ``batch`` rows of ``entry`` under a stale key; rows a writer holds are skipped,
    not waited for (a later pass takes them)."""
    query = (
        sa.select(entry.table)
        .where(entry.where_stale(stale))
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    return [ClaimedRow(r.tenant_id, dict(r._mapping)) for r in await conn.execute(query)]


async def reseal(
    conn: AsyncConnection,
    entry: SealedTable,
    keys: KeyringSource,
    rows: Sequence[ClaimedRow],
    stale: StaleKeys,
) -> None:
    """Every stale value of each row opened and sealed again under the active key of its
    keyring (``entry.keyring``), with what the entry derives from the texts, one update a
    row."""
    held = entry.stale(stale)
    done = [_resealed(entry, entry.keyring(keys, r.tenant_id), r.columns, held) for r in rows]
    done = [row for row in done if row.values]
    if entry.after is not None and done:
        await entry.after(conn, done)
    for row in done:
        primary = [c == row.columns[c.name] for c in entry.table.primary_key.columns]
        await conn.execute(entry.table.update().where(*primary).values(row.values))


def _resealed(entry: SealedTable, keyring: Keyring, columns: Columns, held: StaleKeys) -> Resealed:
    row = Resealed(columns, keyring, {}, {})
    for value in entry.values:
        if not held.holds(columns[value.key_id]) or columns[value.ciphertext] is None:
            continue
        aad = entry.bound_to(columns, value)
        sealed = Sealed(columns[value.ciphertext], columns[value.nonce], columns[value.key_id])
        text = keyring.open(sealed, aad)
        again = keyring.seal(text, aad)
        row.opened[value.name] = text
        row.values |= {
            value.ciphertext: again.ciphertext,
            value.nonce: again.nonce,
            value.key_id: again.key_id,
        }
    return row


async def count_stale(conn: AsyncConnection, stale: StaleKeys | str) -> int:
    """Rows rotation has yet to move (``stale`` a key id: rows under any other key)."""
    if isinstance(stale, str):
        stale = StaleKeys(stale)
    total = 0
    for entry in SEALED:
        query = sa.select(sa.func.count()).select_from(entry.table)
        total += (await conn.execute(query.where(entry.where_stale(stale)))).scalar_one()
    return total
