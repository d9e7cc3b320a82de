"""``backup`` / ``restore`` for a store, embedded or served: where the database is comes from
the settings, as everywhere else; the dump and restore themselves are ``db/dump.py``.

Neither opens the store (no migration): a restore must be able to run on a fresh data
directory whose key file does not exist yet, and must not make one. A restore does check,
before it touches the data directory or the database, that the key this store is configured
with can open what the backup holds, and stops with the error the store would give at its next
start otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.config import Settings
from memvault.crypto.envelope import Keyring, load_key_file, parse_key
from memvault.db import dump
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import libpq_url
from memvault.errors import ConfigurationError, InvalidInput, KeyMismatch


@contextmanager
def _database(settings: Settings) -> Iterator[str]:
    # pg_dump sets up its session before its transaction: past any transaction pooler.
    direct = settings.session_database_url
    if direct is not None:
        yield libpq_url(direct.get_secret_value())
        return
    server = EmbeddedPostgres(settings.pg_data_dir)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


def backup_sync(settings: Settings, file: Path) -> int:
    """Dump the store into ``file``; returns its size in bytes."""
    with _database(settings) as url:
        dump.dump(url, file)
    return file.stat().st_size


def restore_sync(settings: Settings, file: Path, *, replace: bool = False) -> None:
    """Load a backup into the store. A store that already holds memories is replaced only
    with ``replace=True``."""
    if not file.is_file():
        raise InvalidInput(f"No backup file at {file}.", details={"field": "file"})
    check_key(settings, file)
    with _database(settings) as url:
        if not replace and dump.has_memories(url):
            raise InvalidInput(
                "This store already holds memories; restoring would replace them all. "
                "Pass replace=True (memvault restore --replace) to go ahead.",
                details={"field": "replace"},
            )
        dump.restore(url, file)


def check_key(settings: Settings, file: Path) -> None:
    """Refuse a backup the configured key cannot open, before anything is touched."""
    needed = dump.key_ids(file)
    if not needed:
        return
    keyring = _configured_keys(settings)
    missing = sorted(needed - keyring.key_ids)
    if missing:
        raise KeyMismatch(
            f"The backup holds memories sealed with key id(s) {', '.join(missing)}, but the "
            f"configured key is {keyring.active.key_id}. Set MEMVAULT_ENCRYPTION_KEY (or restore "
            "the key file) to the key the backup was made under. Nothing was restored.",
            details={"missing_key_ids": missing, "active_key_id": keyring.active.key_id},
        )


def _configured_keys(settings: Settings) -> Keyring:
    """The keys the store would open with, read without making a key file."""
    if settings.encryption_key is not None:
        old = settings.encryption_old_keys
        olds = old.get_secret_value().split(",") if old is not None else []
        return Keyring(
            parse_key(settings.encryption_key.get_secret_value()),
            [parse_key(k, name="MEMVAULT_ENCRYPTION_OLD_KEYS") for k in olds if k.strip()],
        )
    if settings.database_url is not None:
        raise ConfigurationError(
            "MEMVAULT_ENCRYPTION_KEY is required when MEMVAULT_DATABASE_URL is set: give the "
            "key the backup was made under. Nothing was restored."
        )
    if not settings.key_file.exists():
        raise ConfigurationError(
            f"The key file {settings.key_file} is missing, but the backup holds encrypted "
            "memories. Restore the key file from backup or set MEMVAULT_ENCRYPTION_KEY; a new "
            "key cannot read them. Nothing was restored."
        )
    return load_key_file(settings.key_file, create=False)


async def backup(settings: Settings, file: Path) -> int:
    return await asyncio.to_thread(backup_sync, settings, file)


async def restore(settings: Settings, file: Path, *, replace: bool = False) -> None:
    await asyncio.to_thread(restore_sync, settings, file, replace=replace)
