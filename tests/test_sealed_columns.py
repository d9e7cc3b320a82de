"""The registry of sealed columns (db/sealed_columns.py) names every table that holds sealed
bytes or a key id, so key rotation, which reads it, cannot leave a new sealed table under a
key it then forgets; and each entry names columns its table has."""

from __future__ import annotations

import sqlalchemy as sa

from memvault.db.sealed_columns import NOT_RESEALED, SEALED
from memvault.db.tables import metadata

SEALED_SUFFIXES = ("ciphertext", "nonce", "key_id")


def _sealed_tables(tables: sa.MetaData) -> set[str]:
    """Tables with a column that looks sealed: ``…ciphertext``, ``…nonce``, ``…key_id``."""
    return {
        table.name
        for table in tables.tables.values()
        if any(c.name.endswith(SEALED_SUFFIXES) for c in table.columns)
    }


def test_every_table_with_sealed_columns_is_in_the_registry() -> None:
    registered = {entry.name for entry in SEALED}
    assert len(registered) == len(SEALED), "a table registered twice"
    assert registered.isdisjoint(NOT_RESEALED)
    assert _sealed_tables(metadata) == registered | set(NOT_RESEALED)


def test_a_new_sealed_table_is_noticed() -> None:
    tables = sa.MetaData()
    sa.Table("plain", tables, sa.Column("id", sa.Integer), sa.Column("keyword", sa.Text))
    sa.Table("notes", tables, sa.Column("id", sa.Integer), sa.Column("body_nonce", sa.LargeBinary))
    assert _sealed_tables(tables) == {"notes"}


def test_each_entry_names_columns_of_its_table() -> None:
    for entry in SEALED:
        for value in entry.values:
            for column in (value.ciphertext, value.nonce, value.key_id):
                assert column in entry.table.c, (entry.name, column)
        # Re-sealing updates a row by its primary key, and each row names its tenant.
        assert entry.table.primary_key.columns and "tenant_id" in entry.table.c, entry.name
