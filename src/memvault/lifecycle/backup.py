"""``backup`` / ``restore`` for a store, embedded or served: where the database is comes from
the settings, as everywhere else; the dump and restore themselves are ``db/dump.py``.

Neither opens the store (no migration, no key check): a restore must be able to run on a
fresh data directory whose key file does not exist yet, and must not make one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.config import Settings
from memvault.db import dump
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import libpq_url
from memvault.errors import InvalidInput


@contextmanager
def _database(settings: Settings) -> Iterator[str]:
    if settings.database_url is not None:
        yield libpq_url(settings.database_url.get_secret_value())
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
    with _database(settings) as url:
        if not replace and dump.has_memories(url):
            raise InvalidInput(
                "This store already holds memories; restoring would replace them all. "
                "Pass replace=True (memvault restore --replace) to go ahead.",
                details={"field": "replace"},
            )
        dump.restore(url, file)


async def backup(settings: Settings, file: Path) -> int:
    return await asyncio.to_thread(backup_sync, settings, file)


async def restore(settings: Settings, file: Path, *, replace: bool = False) -> None:
    await asyncio.to_thread(restore_sync, settings, file, replace=replace)
