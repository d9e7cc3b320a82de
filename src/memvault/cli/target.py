"""Where a ``memvault`` command finds the memories it works on: the store itself (embedded, or
``MEMVAULT_DATABASE_URL``), or a running memvault server over HTTP when ``--server`` (or
``MEMVAULT_SERVER_URL``) names one.

Over HTTP a command sends what it would have called on ``Memory`` to the server through
``MemoryClient`` (the same methods, derived from the same operation table), so it opens no
database and loads no embedding model: the server embeds. Commands on the whole store (jobs,
keys, API keys, cleanup, re-embedding, erasing a tenant) run where the store is, and refuse a
server rather than quietly act on a local store the user did not mean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memvault.console import err
from memvault.errors import ConfigurationError

if TYPE_CHECKING:
    from typing import TypeAlias

    from memvault.admin import Admin
    from memvault.client import MemoryClient
    from memvault.config import Settings
    from memvault.service import Memory

    # What a command works on: the same data methods, the client having no more than those.
    CommandMemory: TypeAlias = Memory | MemoryClient


@dataclass(frozen=True)
class Server:
    """The running server a command talks to, as the root options named it."""

    url: str
    api_key: str | None = field(default=None, repr=False)  # never printed


# Set by the root command's options for the one command they precede.
_target: Server | None = None


def use(target: Server | None) -> None:
    global _target
    _target = target


def server() -> Server | None:
    """The server this command goes to, or ``None`` for the store itself."""
    return _target


def local_only() -> None:
    """Refuse a command that must run where the store is when a server is named."""
    if _target is not None:
        raise ConfigurationError(
            "This command works on the store itself, not through a server: run it where the "
            "store is, without --server (and with MEMVAULT_SERVER_URL unset)."
        )


@contextmanager
def memory(
    *, tenant: str = "default", worker: bool = False, embeds: bool = False
) -> Iterator[CommandMemory]:
    """One tenant's memories for one command: over HTTP when a server is named (the tenant is
    then the API key's), else the store, with embedding workers only for commands that wait
    on them."""
    target = server()
    if target is not None:
        if tenant != "default":
            raise ConfigurationError(
                "Through a server the tenant is the API key's: drop --tenant, or use a key of "
                f"tenant {tenant!r}."
            )
        from memvault.client import MemoryClient

        with MemoryClient(target.url, api_key=target.api_key) as client:
            yield client
        return
    with local_memory(tenant=tenant, worker=worker, embeds=embeds) as opened:
        yield opened


@contextmanager
def local_memory(
    *, tenant: str = "default", worker: bool = False, embeds: bool = False
) -> Iterator[Memory]:
    """One tenant's memories in the store itself, for a command no HTTP operation serves
    (refused when a server is named, as ``local_only``)."""
    local_only()
    from memvault.config import Settings
    from memvault.service import Memory

    settings = Settings(run_worker=worker)
    if embeds:
        _model_load_note(settings)
    with Memory(settings, tenant_id=tenant, actor="cli") as opened:
        yield opened


@contextmanager
def admin(*, worker: bool = False) -> Iterator[Admin]:
    """The whole store, for one operator command."""
    local_only()
    from memvault.admin import Admin
    from memvault.config import Settings

    with Admin(Settings(run_worker=worker)) as opened:
        yield opened


def _model_load_note(settings: Settings) -> None:
    """Commands that embed load the local model on first use in a process; say so, once."""
    if settings.embedding_provider == "local":
        err.print("memvault: loading the embedding model (the first load takes a few seconds)…")
