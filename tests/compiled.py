"""One compiled-statement cache for every engine a test process makes.

SQLAlchemy keeps the SQL it compiled from a statement in a cache of the engine's own, keyed by
the engine's dialect object. A server process makes its engines once and compiles each
statement once; the suite opens a store, and with it new engines, for each of about 1,100
tests, so each test compiled every statement it ran again: a tenth of the suite's own CPU.

Here every connection any engine hands out compiles into one cache per process (the
``compiled_cache`` execution option, which SQLAlchemy documents for this), keyed by the
dialect's class and the server version it found instead of the dialect object: two engines on
servers of one version compile a statement to the same SQL. What a test runs is unchanged;
only the compiling of it is done once per worker instead of once per test."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.util import LRUCache


class _ByDialectKind(LRUCache[Any, Any]):
    """An LRU cache whose keys name a dialect by kind, not by instance (SQLAlchemy asks only
    ``get`` and ``[key] = value`` of a compiled cache)."""

    @staticmethod
    def _kind(key: tuple[Any, ...]) -> tuple[Any, ...]:
        dialect, *rest = key
        return (type(dialect), dialect.server_version_info, *rest)

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(self._kind(key), default)

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(self._kind(key), value)


# SQLAlchemy's own default size per engine; the suite's statements fit it many times over.
SHARED = _ByDialectKind(500)


def share_compiled_statements() -> None:
    """From now on, every engine's connections in this process compile into ``SHARED``."""

    @event.listens_for(Engine, "engine_connect")
    def _shared(connection: Connection) -> None:
        connection.execution_options(compiled_cache=SHARED)
