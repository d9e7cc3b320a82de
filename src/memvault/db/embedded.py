"""The embedded PostgreSQL 16 + pgvector server from the ``pgserver`` wheel.

pgserver shares one postmaster between every process that opens the same data directory and
stops it when the last one exits, so short CLI commands can run beside ``memvault serve``.
Two *servers* on one data directory would fight over it (two workers, two owners); the
:class:`ServeLock` refuses the second one with a message that says what to do.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

from memvault.errors import ConfigurationError, DataDirInUse

if TYPE_CHECKING:
    from memvault.config import Settings

DATABASE_NAME = "memvault"
# pgserver's list of the processes that share the server (it stops it when the last one goes).
OWNERS_FILE = ".handle_pids.json"


class EmbeddedPostgres:
    """Starts (or joins) the private server in ``pg_dir`` and hands out its URL."""

    def __init__(self, pg_dir: Path) -> None:
        self.pg_dir = pg_dir
        self._server: Any = None

    def start(self) -> str:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); harmless here.
            warnings.simplefilter("ignore")
            from pgserver import postgres_server

        self.pg_dir.parent.mkdir(parents=True, exist_ok=True)
        _forget_dead_owners(self.pg_dir)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._server = postgres_server.get_server(self.pg_dir, cleanup_mode="stop")
        except Exception as exc:
            raise ConfigurationError(
                f"The embedded PostgreSQL in {self.pg_dir} did not start; its log is "
                f"{self.pg_dir / 'log'}. Set MEMVAULT_DATABASE_URL to use an external server."
            ) from exc
        self._ensure_database()
        return self.url

    @property
    def socket_dir(self) -> str:
        info = self._server.get_postmaster_info()
        return str(info.socket_dir)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@/{DATABASE_NAME}?host={quote(self.socket_dir)}"

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={quote(self.socket_dir)}"

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                # Another process may create it between our check and our create.
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    def stop(self) -> None:
        """Release our handle; the server stops when no other live process holds one."""
        if self._server is None:
            return
        # A process killed without cleaning up (SIGKILL) leaves its pid in the owner list;
        # counting it would leave the postmaster running with nobody to stop it.
        _forget_dead_owners(self.pg_dir)
        system_user = self._server.system_user
        self._server.cleanup()
        self._server = None
        # pgserver stops only the postmaster it saw at start; one restarted since (an outage,
        # a crash) would be left behind.
        _stop_if_unowned(self.pg_dir, system_user)


@contextlib.contextmanager
def embedded_store_held(settings: Settings) -> Iterator[None]:
    """Start (and migrate) the embedded database and hold it until the block ends: for a parent
    process whose children come and go (``serve --workers N``). Here, beside the server, so
    that parent imports the migrations and not the whole store it never opens."""
    from memvault.db.engine import migrate

    server = EmbeddedPostgres(settings.pg_data_dir)
    migrate(server.start())
    try:
        yield
    finally:
        server.stop()


def _forget_dead_owners(pg_dir: Path) -> None:
    """Drop the pids of processes that no longer exist from pgserver's owner list (under the
    lock pgserver itself takes to change it)."""
    import psutil
    from pgserver.postgres_server import PostgresServer

    owners = pg_dir.expanduser().resolve() / OWNERS_FILE
    with PostgresServer._lock:
        if not owners.exists():
            return
        try:
            pids = json.loads(owners.read_text())
        except ValueError:
            pids = []
        alive = [p for p in pids if isinstance(p, int) and _running(psutil, p)]
        if alive != pids:
            owners.write_text(json.dumps(alive))


def _stop_if_unowned(pg_dir: Path, system_user: str | None) -> None:
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import
    from pgserver.postgres_server import PostgresServer
    from pgserver.utils import PostmasterInfo

    pgdata = pg_dir.expanduser().resolve()
    with PostgresServer._lock:
        owners = pgdata / OWNERS_FILE
        if owners.exists() and json.loads(owners.read_text() or "[]"):
            return  # another live process still uses it
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=system_user, timeout=30)


def _running(psutil: Any, pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


class WorkerLock:
    """Held by the one process per data directory that runs the embedding worker, so the
    processes of ``memvault serve --workers N`` (and CLI commands beside them) run one worker
    between them. The kernel drops the lock when its holder exits, however it exits."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "worker.lock"
        self._handle: IO[str] | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a")  # noqa: SIM115 - held open while the worker runs
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


class ServeLock:
    """An exclusive lock on a data directory for the one long-running server that owns it."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "serve.lock"
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held open for the process lifetime
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise DataDirInUse(
                f"Another memvault server (pid {owner}) is already using the data directory "
                f"{self.path.parent}. Stop it first, or give this one its own directory with "
                "MEMVAULT_DATA_DIR=/another/path.",
                details={"pid": owner},
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None
